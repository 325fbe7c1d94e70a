"""One corrupt raw file and one awkward label table in a dataset (issue 30 item 4): S0 with the rules agent
scores every other sample, and the run names the corrupt sample with its reason in samples.jsonl, the report
and the terminal's NOT WRITTEN line."""

from __future__ import annotations

import json
from pathlib import Path

from benchmark.manifest import parse_manifest
from experiments import compose_config
from experiments.run.experiment import run_experiment
from testbed.synth.suite import generate_suite

DATASET = "synth-chest-xray-dicom"


def test_a_garbage_dicom_fails_only_its_sample_and_the_dataset_is_scored(tmp_path: Path) -> None:
    root = tmp_path / "suite"
    generate_suite(root, only=[DATASET])
    ds = root / DATASET
    # A BIDS-style definitions file whose records lack keys: before issue 30 its empty cells (NaN floats)
    # crashed the whole dataset in the table join.
    definitions = {
        "Target": {"LongName": "Pneumonia", "Levels": {"0": "no", "1": "yes"}},
        "x": {"Units": "mm"},
    }
    (ds / "data" / "definitions.json").write_text(json.dumps(definitions), encoding="utf-8")
    entries = parse_manifest(ds / "VLM" / "random.txt")
    corrupt = entries[3]
    corrupt.path.write_bytes(b"\0" * 128 + b"DICM" + b"\x02\x00garbage" * 20)

    cfg = compose_config(
        [
            "benchmark=dir",
            f"benchmark.root={root}",
            "agent=rules",
            "strategy=s0",
            "run.progress=false",
            "run.seed=0",
        ]
    )
    outcome = run_experiment(cfg, tmp_path / "run")

    rows = {
        r["index"]: r for r in map(json.loads, (tmp_path / "run" / "samples.jsonl").read_text().splitlines())
    }
    assert len(rows) == len(entries)
    bad = rows[corrupt.index]
    assert bad["decision"]["candidate"] is None
    assert corrupt.path.name in bad["decision"]["reason"]
    scored = [r for i, r in rows.items() if i != corrupt.index]
    assert all(r["scores"]["official"]["pair_valid"] for r in scored)
    assert sum(r["scores"]["official"]["e2e"] for r in scored) >= len(scored) - 1
    assert outcome.metrics["official"]["datasets"][DATASET]["E2E"] > 0.5
    line = next(ln for ln in outcome.table.splitlines() if ln.startswith("NOT WRITTEN"))
    assert f"1 of {len(entries)} samples" in line and f"{DATASET} #{corrupt.index}" in line
    assert corrupt.path.name in line
    assert bad["decision"]["reason"].split(": ", 1)[1][:60] in (tmp_path / "run" / "report.html").read_text()
