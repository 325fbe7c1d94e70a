"""Figures and tables a reviewer would accept (issue 23 item 6): every bar has its 95 % CI over datasets, axes
start at 0, no label hides another, the budget table covers every seed, every caption names its methods, and
a run of the `rules` or `simulated` agent says it is a mechanics check wherever its numbers are shown."""

from __future__ import annotations

import json
import shutil
from html import escape as html_escape
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
import pytest
from matplotlib.container import BarContainer
from rules_runs import CHEAP_DATASETS, N, rules_cfg

from benchmark.score.constants import METRIC_NAMES
from experiments.analysis.ablation import draw_ablation, draw_cost, summary_frame, write_ablation
from experiments.analysis.budget_matched import budget_curve, budget_matched
from experiments.publish.stats import CI_METHOD, TEST_METHOD
from experiments.run.experiment import run_experiment
from experiments.stored.mechanics import banner, mechanics_agent, sweep_banner
from experiments.stored.sweep import load_runs


@pytest.fixture(scope="module")
def two_seed_sweep(rules_s3_run_small, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A sweep folder: S3 (the shared run, seed 0, and seed 1) and S0 at seeds 0 and 1, rules agent, on the
    two cheap datasets (a figure's CI over datasets needs two)."""
    root, src = rules_s3_run_small
    sweep = tmp_path_factory.mktemp("sweep")
    shutil.copytree(src, sweep / "0_s3", symlinks=True)
    s3 = rules_cfg(root, "strategy=s3", f"strategy.n={N}", "run.seed=1", datasets=CHEAP_DATASETS)
    run_experiment(s3, sweep / "1_s3")
    for seed in (0, 1):
        s0 = rules_cfg(root, "strategy=s0", f"run.seed={seed}", datasets=CHEAP_DATASETS)
        run_experiment(s0, sweep / f"{2 + seed}_s0")
    return sweep


def _macro(run: Path) -> float:
    return float(json.loads((run / "metrics.json").read_text())["macro"]["E2E"])


def test_the_budget_table_covers_every_seed_as_mean_and_sd(two_seed_sweep: Path) -> None:
    table = budget_matched(load_runs(two_seed_sweep)).set_index("strategy")
    row = table.loc["s0"]
    assert row["seeds"] == 2 and row["s3_seeds"] == 2
    s0 = [_macro(two_seed_sweep / d) for d in ("2_s0", "3_s0")]
    assert row["E2E"] == pytest.approx(sum(s0) / 2)  # not the lowest seed's E2E alone
    assert row["E2E_sd"] == pytest.approx(pd.Series(s0).std(ddof=1))
    curves = [budget_curve(two_seed_sweep / d).set_index("n") for d in ("0_s3", "1_s3")]
    n = int(row["s3_n"])
    assert row["s3_E2E"] == pytest.approx(sum(float(c.loc[n, "E2E"]) for c in curves) / 2)
    paired = [float(c.loc[n, "E2E"]) - e for c, e in zip(curves, s0, strict=True)]
    assert row["dE2E"] == pytest.approx(sum(paired) / 2)


def test_every_bar_has_its_ci_and_every_axis_starts_at_zero(two_seed_sweep: Path) -> None:
    summary = summary_frame(load_runs(two_seed_sweep))
    for column in [*METRIC_NAMES, "avg11"]:
        lo, hi = summary[f"{column}_lo"], summary[f"{column}_hi"]
        assert ((lo <= summary[column] + 1e-9) & (summary[column] <= hi + 1e-9)).all(), column
    fig = draw_ablation(summary, banner="B")
    try:
        bars = [c for ax in fig.axes for c in ax.containers if isinstance(c, BarContainer)]
        assert len(bars) == 1 + len(summary) * (len(fig.axes) - 1)  # the average panel + one per strategy
        assert all(c.errorbar is not None for c in bars)
        assert all(len(c.errorbar.lines[2]) > 0 for c in bars)  # the vertical bar segments are drawn
        assert all(ax.get_ylim()[0] == 0.0 for ax in fig.axes)
        texts = [t.get_text() for t in fig.texts]
        assert any(CI_METHOD in t and "B" in t for t in texts)
    finally:
        plt.close(fig)


def test_the_cost_figure_names_strategies_in_a_legend_and_spreads_points_at_one_spot() -> None:
    summary = pd.DataFrame(
        {
            "strategy": ["s0", "s3", "s4"],
            "E2E": [0.5, 0.9, 0.9],
            "E2E_lo": [0.4, 0.8, 0.8],
            "E2E_hi": [0.6, 1.0, 1.0],
            "USD": [0.0, 0.0, 0.0],
            "calls": [0.0, 0.0, 0.0],
            "candidates": [4.0, 20.0, 20.0],
        }
    )
    fig = draw_cost(summary)
    try:
        (ax,) = fig.axes
        assert len(ax.texts) == 0  # no label beside a point, so none can overlap another
        legend = ax.get_legend()
        assert legend is not None and [t.get_text() for t in legend.get_texts()] == ["s0", "s3", "s4"]
        fig.canvas.draw()
        centres = {}
        for container in ax.containers:
            if container.get_label() in ("s3", "s4"):
                line = container.lines[0]
                x, y = line.get_xydata()[0]
                centres[container.get_label()] = line.get_transform().transform((x, y))
        assert abs(centres["s3"][0] - centres["s4"][0]) > 5  # same cost and E2E, side by side on the page
        assert ax.get_ylim()[0] == 0.0 and ax.get_xlim()[0] == 0.0
        assert any(CI_METHOD in t.get_text() for t in fig.texts)
    finally:
        plt.close(fig)


def test_the_ablation_names_its_methods_and_the_mechanics_check(two_seed_sweep: Path, tmp_path: Path) -> None:
    sweep = tmp_path / "sweep"
    shutil.copytree(two_seed_sweep, sweep, symlinks=True)
    write_ablation(sweep)
    md = (sweep / "ablation.md").read_text()
    assert CI_METHOD in md and TEST_METHOD in md
    assert md.count(banner("rules")) == 1 and md.index(banner("rules")) < md.index("| strategy |")
    budget = md.split("## Budget-matched")[1].split("\n\n**")[0]
    assert "mean ± sd over seeds" in budget and "| s0 | 2 | 2 |" in budget and " ± " in budget

    from experiments.analysis.sweep_report import build_sweep_report

    html = build_sweep_report(sweep).read_text()
    assert banner("rules") in html
    assert CI_METHOD in html and html_escape(TEST_METHOD) in html


def test_a_run_of_the_rules_agent_says_it_is_a_mechanics_check(rules_s3_run_small, tmp_path: Path) -> None:
    root, _ = rules_s3_run_small
    cfg = rules_cfg(root, "strategy=s0", "run.report=true", datasets=CHEAP_DATASETS)
    outcome = run_experiment(cfg, tmp_path / "run")
    assert outcome.table.splitlines()[-1] == banner("rules")
    assert banner("rules") in (tmp_path / "run" / "report.html").read_text()


def test_only_the_rules_and_simulated_agents_are_a_mechanics_check() -> None:
    assert mechanics_agent({"name": "rules", "_target_": None}) == "rules"
    assert mechanics_agent({"name": "simulated"}) == "simulated"
    assert mechanics_agent({"name": "litellm"}) is None
    assert mechanics_agent({"name": "rules", "_target_": "my_pkg.Agent"}) is None  # a user's own agent
    assert sweep_banner(["litellm", "my_pkg.Agent"]) is None
    line = sweep_banner(["rules", "litellm", "simulated"])
    assert line is not None and line.startswith("MECHANICS CHECK: not evidence about strategies")


def test_a_sweep_of_the_rules_agent_prints_the_banner_on_the_console(
    suite: Path, cli_env: dict[str, str], tmp_path: Path
) -> None:
    import subprocess
    import sys

    sweep = tmp_path / "sweep"
    args = [
        "-m",
        "strategy=s0",
        "benchmark=dir",
        f"benchmark.root={suite}",
        "benchmark.datasets=[synth-fundus-npy]",  # one of the two: the banner is the sweep's
        "run.progress=false",
        "run.report=false",
        f"hydra.sweep.dir={sweep}",
    ]
    done = subprocess.run(
        [sys.executable, "-m", "experiments", *args],
        env=cli_env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    banners = [line for line in done.stderr.splitlines() if line.startswith("MECHANICS CHECK")]
    assert banners == [banner("rules")]
    assert banner("rules") in (sweep / "report.html").read_text()
