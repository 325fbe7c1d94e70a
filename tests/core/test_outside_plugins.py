"""A strategy, a selector, a validator check and a metric added from outside the repository: one decorator
in an installed package (found through its entry point) and one config line naming it.

The package lives in a temporary folder on PYTHONPATH with a ``.dist-info`` that declares its entry points,
as ``pip install`` would leave it. One fresh interpreter, started once for the module, scans the entry points
anew and runs the three experiments and the profile load in turn (a fresh interpreter each cost ~3 CPU s of
start-up). Each kind of plug-in is a module of its own, so an entry point loads only its own kind: the
selector is found through the selectors' entry point, not because loading the strategy imported it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]

# One module per kind of plug-in (see the module docstring).
PLUGIN = {
    "strategy": '''
from agents.base import Agent, Task
from strategies import strategy
from strategies.base import StrategyResult, Validator, usage_of
from strategies.mechanics import generate_many

@strategy("outside_twice", candidates=True)
def outside_twice():
    """Two generations; keep the first one's folder as written."""
    async def run(task: Task, agent: Agent, validator: Validator) -> StrategyResult:
        made = await generate_many(agent, task, 1)
        return StrategyResult("outside_twice", task.output_dir, made, {}, usage_of(made))
    return run
''',
    "selector": """
from strategies import selector

@selector("outside_last")
def outside_last(index, candidates, reports, task):
    return len(candidates) - 1
""",
    "check": '''
from validator.registry import check
from validator.report import CheckResult

@check("outside_always_half", weight=1.0, fields=("record",))
def outside_always_half(view):
    """Half marks, always: a check from outside the repository."""
    return CheckResult(0.5, "outside check ran")
''',
    "metric": '''
from benchmark.score.metrics import metric

@metric("outside_sample_count")
def outside_sample_count(data):
    """The number of GT samples scored: a value a test can predict."""
    return float(len(data.records))
''',
}

ENTRY_POINTS = """
[medstrat.strategies]
outside_twice = outside_plugins.strategy:outside_twice

[medstrat.selectors]
outside_last = outside_plugins.selector:outside_last

[medstrat.checks]
outside_always_half = outside_plugins.check:outside_always_half

[medstrat.metrics]
outside_sample_count = outside_plugins.metric:outside_sample_count
"""


@pytest.fixture(scope="module")
def plugin_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("site")
    package = folder / "outside_plugins"
    package.mkdir()
    (package / "__init__.py").write_text("")
    for kind, code in PLUGIN.items():
        (package / f"{kind}.py").write_text(textwrap.dedent(code))
    info = folder / "outside_plugins-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: outside-plugins\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(ENTRY_POINTS)
    return folder


# The experiment each test checks: its overrides. Each is a separate `python -m experiments` (its own `cli()`
# call) in the one interpreter; the strategy run comes first, so no registry has been scanned before it.
RUNS = {
    "strategy": ("strategy=s0", "strategy.kind=outside_twice"),
    "selector": ("strategy=s3", "strategy.n=2", "selector.name=outside_last"),
    "metric": ("strategy=s0", "scorer.metrics=[outside_sample_count]"),
}

DRIVER = """
import json, sys
from experiments.__main__ import cli

runs, profile_yaml = json.loads(sys.argv[1]), sys.argv[2]
codes = {}
for name, args in runs.items():
    print(f"--- {name}", file=sys.stderr, flush=True)
    sys.argv = ["python -m experiments", *args]
    codes[name] = cli()
from validator.registry import load_profile

print(json.dumps({"codes": codes, "weights": load_profile(profile_yaml).weights}))
"""


@pytest.fixture(scope="module")
def outside(plugin_path: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Run `RUNS` and load a profile naming the outside check in one fresh interpreter.

    Returns:
        ``{"dirs": {run: its folder}, "codes": {run: exit code}, "weights": the profile's, "stderr": ...}``.
    """
    work = tmp_path_factory.mktemp("outside")
    dirs = {name: work / name for name in RUNS}
    runs = {
        name: [
            "benchmark.datasets=[synth-dermoscopy-jpg]",
            "run.progress=false",
            "run.report=false",
            f"hydra.run.dir={dirs[name]}",
            *overrides,
        ]
        for name, overrides in RUNS.items()
    }
    yaml = work / "mine.yaml"
    yaml.write_text("profile: mine\nchecks:\n  record: 1.0\n  outside_always_half: 1.0\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(plugin_path)])}
    proc = subprocess.run(
        [sys.executable, "-c", DRIVER, json.dumps(runs), str(yaml)],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return {**json.loads(proc.stdout.splitlines()[-1]), "dirs": dirs, "stderr": proc.stderr}


def _run(outside: dict[str, Any], name: str) -> Path:
    """The folder of run ``name``, which must have succeeded."""
    assert outside["codes"][name] == 0, outside["stderr"][-3000:]
    return Path(outside["dirs"][name])


def test_an_outside_strategy_runs_by_its_name(outside: dict[str, Any]) -> None:
    run_dir = _run(outside, "strategy")
    marker = json.loads((run_dir / "selected" / "synth-dermoscopy-jpg" / "result.json").read_text())
    assert marker["strategy"] == "outside_twice"


def test_an_outside_selector_chooses_by_its_name(outside: dict[str, Any]) -> None:
    run_dir = _run(outside, "selector")
    marker = json.loads((run_dir / "selected" / "synth-dermoscopy-jpg" / "result.json").read_text())
    chosen = {d["candidate"] for d in marker["decisions"].values()}
    assert chosen == {1}  # the last of two candidates, everywhere


def test_an_outside_check_is_scored_when_a_profile_names_it(outside: dict[str, Any]) -> None:
    assert outside["weights"]["outside_always_half"] == 1.0


def test_an_outside_metric_is_scored_when_the_config_names_it(outside: dict[str, Any]) -> None:
    from benchmark.score.constants import METRIC_NAMES

    run_dir = _run(outside, "metric")
    n_samples = len((run_dir / "samples.jsonl").read_text().splitlines())
    for name in ("metrics.json", "metrics_strict.json"):
        doc = json.loads((run_dir / name).read_text())
        assert list(doc["macro"]) == [*METRIC_NAMES, "outside_sample_count"]
        assert doc["macro"]["outside_sample_count"] == n_samples
        assert doc["datasets"]["synth-dermoscopy-jpg"]["outside_sample_count"] == n_samples
