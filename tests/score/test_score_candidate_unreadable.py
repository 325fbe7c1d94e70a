"""score_candidate(unreadable_as_missing=True): one non-object JSON costs its sample, not the whole folder."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from benchmark.score.dataset import e2e_pass
from benchmark.score.evaluate import score_candidate
from testbed.synth.suite import generate_suite


def test_a_list_top_level_json_is_a_missing_sample_only_when_asked(tmp_path: Path) -> None:
    name = "synth-pneumonia-parquet"
    generate_suite(tmp_path / "suite", only=[name], oracle="oracle")
    root = tmp_path / "suite" / name
    pred = tmp_path / "cand"
    shutil.copytree(root / "VLM" / "oracle" / "agent1_data_organization", pred)
    path = pred / "standardized_annotations" / "3.json"
    path.write_text(json.dumps([json.loads(path.read_text())]))
    assert score_candidate(pred, root).error  # the reference behaviour: the folder fails as a whole
    scored = score_candidate(pred, root, unreadable_as_missing=True)
    assert not scored.error
    passed = {int(s.index): e2e_pass(s.to_dict()) for s in scored.per_sample}
    assert passed[3] is False and all(v for i, v in passed.items() if i != 3)
    assert json.loads(path.read_text())[0]  # the candidate itself is left as it was
