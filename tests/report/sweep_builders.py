"""A hand-made sweep folder for the sweep-report tests: three jobs (s0 and s3 at seed 0, s3 at seed 1) built
from the hand-made run of `report_builders`, with the Hydra files a real sweep has."""

from __future__ import annotations

import json
from pathlib import Path

from report_builders import make_run


def make_sweep(sweep: Path) -> Path:
    """Write the sweep: job folders ``0_s0``, ``1_s3``, ``2_s3`` with run.json, overrides and reports."""
    from experiments.report import build_report

    sweep.mkdir(parents=True)
    (sweep / "multirun.yaml").write_text("hydra: {}\n", encoding="utf-8")
    for job, (strategy, seed) in enumerate((("s0", 0), ("s3", 0), ("s3", 1))):
        run = make_run(sweep / f"{job}_{strategy}")
        info = json.loads((run / "run.json").read_text())
        info.update(strategy=strategy, wall_s=1.5 + job, config={"run": {"seed": seed}})
        (run / "run.json").write_text(json.dumps(info), encoding="utf-8")
        (run / ".hydra").mkdir()
        (run / ".hydra" / "overrides.yaml").write_text(f"- strategy={strategy}\n- run.seed={seed}\n")
        if strategy == "s0":  # s0 passes nothing on alpha: the strategies disagree there
            rows = [json.loads(line) for line in (run / "samples.jsonl").read_text().splitlines()]
            for row in rows:
                row["scores"]["official"] = {**row["scores"]["official"], "e2e": False}
            (run / "samples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        build_report(run)
    return sweep
