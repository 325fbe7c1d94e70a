"""Issue 30, item 6: the replay provider works on a replica dataset (a real MDS-Bench tree), through the real
LiteLLM path: the LiteLLM agent, fed the rules baseline's decisions as tool calls by the fake server, writes
what the rules agent writes for every sample of the real manifest."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import numpy as np
import pytest
from agent_scripts import make_agent
from PIL import Image

from agents.base import Limits, Task
from benchmark.discover import Dataset
from testbed.fakeserver import FakeServer
from testbed.fakeserver.replay import replay_script
from testbed.replica import build_replica

# The smallest dev-set tree: 82 files, PNG and TIFF sources, a 7-class classification.
DATASET = "5002837_folder"


@pytest.mark.heavy
def test_replay_on_a_replica_dataset_matches_the_rules_outputs(mdsbench_dir: Path, tmp_path: Path) -> None:
    material = mdsbench_dir / "replica"
    if not (material / "MANIFEST.sha256").is_file():
        pytest.skip(f"no replica material at {material}")
    build_replica(tmp_path, material, only=[DATASET], scale=1 / 16, progress=False)
    root = tmp_path / DATASET
    script = replay_script(root, work_dir=root / "VLM" / "rules_reference")
    assert script.skipped == [] and script.mismatches == {}
    with FakeServer(script) as server:
        task = Task.from_dataset(
            Dataset.from_root(root),
            root / "VLM" / "litellm_replay",
            limits=Limits(max_turns=len(script.steps) + 2, max_tool_calls=400, max_tokens=10**8),
        )
        candidate = asyncio.run(make_agent(server).generate(task))
    assert candidate.status == "ok", candidate.reason
    got, want = candidate.output_dir, script.reference_dir
    files = sorted(p.relative_to(want).as_posix() for p in want.rglob("*") if p.is_file())
    assert len([f for f in files if f.startswith("standardized_annotations/")]) == 20
    assert files == sorted(p.relative_to(got).as_posix() for p in got.rglob("*") if p.is_file())
    for rel in files:
        if rel.endswith(".png"):
            with Image.open(got / rel) as a, Image.open(want / rel) as b:
                assert np.array_equal(np.asarray(a), np.asarray(b)), rel
        else:
            assert json.loads((got / rel).read_text()) == json.loads((want / rel).read_text()), rel
