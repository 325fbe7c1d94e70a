"""A strategy, a selector, a validator check and a metric added from outside the repository: one decorator
in an installed package (found through its entry point) and one config line naming it.

The package lives in a temporary folder on PYTHONPATH with a ``.dist-info`` that declares its entry points,
as ``pip install`` would leave it; each run is a fresh interpreter so that the entry points are scanned anew.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

PLUGIN = '''
from agents.base import Agent, Task
from benchmark.score.metrics import metric
from strategies import strategy, selector
from strategies.base import StrategyResult, Validator, usage_of
from strategies.mechanics import generate_many
from validator.registry import check
from validator.report import CheckResult

@strategy("outside_twice", candidates=True)
def outside_twice():
    """Two generations; keep the first one's folder as written."""
    async def run(task: Task, agent: Agent, validator: Validator) -> StrategyResult:
        made = await generate_many(agent, task, 1)
        return StrategyResult("outside_twice", task.output_dir, made, {}, usage_of(made))
    return run

@selector("outside_last")
def outside_last(index, candidates, reports, task):
    return len(candidates) - 1

@check("outside_always_half", weight=1.0, fields=("record",))
def outside_always_half(view):
    """Half marks, always: a check from outside the repository."""
    return CheckResult(0.5, "outside check ran")

@metric("outside_sample_count")
def outside_sample_count(data):
    """The number of GT samples scored: a value a test can predict."""
    return float(len(data.records))
'''

ENTRY_POINTS = """
[medstrat.strategies]
outside_twice = outside_plugins:outside_twice

[medstrat.selectors]
outside_last = outside_plugins:outside_last

[medstrat.checks]
outside_always_half = outside_plugins:outside_always_half

[medstrat.metrics]
outside_sample_count = outside_plugins:outside_sample_count
"""


@pytest.fixture(scope="module")
def plugin_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("site")
    (folder / "outside_plugins.py").write_text(textwrap.dedent(PLUGIN))
    info = folder / "outside_plugins-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: outside-plugins\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(ENTRY_POINTS)
    return folder


def _python(plugin_path: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(plugin_path)])}
    return subprocess.run(
        [sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


def _run(plugin_path: Path, tmp_path: Path, *overrides: str) -> dict[str, object]:
    out = tmp_path / "run"
    proc = _python(
        plugin_path,
        tmp_path,
        "-m",
        "experiments",
        "benchmark.datasets=[synth-dermoscopy-jpg]",
        "run.progress=false",
        "run.report=false",
        f"hydra.run.dir={out}",
        *overrides,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return {"run": json.loads((out / "run.json").read_text()), "dir": out}


def test_an_outside_strategy_runs_by_its_name(plugin_path: Path, tmp_path: Path) -> None:
    result = _run(plugin_path, tmp_path, "strategy=s0", "strategy.kind=outside_twice")
    run_dir = result["dir"]
    assert isinstance(run_dir, Path)
    marker = json.loads((run_dir / "selected" / "synth-dermoscopy-jpg" / "result.json").read_text())
    assert marker["strategy"] == "outside_twice"


def test_an_outside_selector_chooses_by_its_name(plugin_path: Path, tmp_path: Path) -> None:
    result = _run(plugin_path, tmp_path, "strategy=s3", "strategy.n=2", "selector.name=outside_last")
    run_dir = result["dir"]
    assert isinstance(run_dir, Path)
    marker = json.loads((run_dir / "selected" / "synth-dermoscopy-jpg" / "result.json").read_text())
    chosen = {d["candidate"] for d in marker["decisions"].values()}
    assert chosen == {1}  # the last of two candidates, everywhere


def test_an_outside_check_is_scored_when_a_profile_names_it(plugin_path: Path, tmp_path: Path) -> None:
    code = textwrap.dedent("""
        import sys
        from validator.registry import load_profile
        profile = load_profile(sys.argv[1])
        print(profile.weights)
    """)
    yaml = tmp_path / "mine.yaml"
    yaml.write_text("profile: mine\nchecks:\n  record: 1.0\n  outside_always_half: 1.0\n")
    proc = _python(plugin_path, tmp_path, "-c", code, str(yaml))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "'outside_always_half': 1.0" in proc.stdout


def test_an_outside_metric_is_scored_when_the_config_names_it(plugin_path: Path, tmp_path: Path) -> None:
    from benchmark.score.constants import METRIC_NAMES

    result = _run(plugin_path, tmp_path, "strategy=s0", "scorer.metrics=[outside_sample_count]")
    run_dir = result["dir"]
    assert isinstance(run_dir, Path)
    n_samples = len((run_dir / "samples.jsonl").read_text().splitlines())
    for name in ("metrics.json", "metrics_strict.json"):
        doc = json.loads((run_dir / name).read_text())
        assert list(doc["macro"]) == [*METRIC_NAMES, "outside_sample_count"]
        assert doc["macro"]["outside_sample_count"] == n_samples
        assert doc["datasets"]["synth-dermoscopy-jpg"]["outside_sample_count"] == n_samples
