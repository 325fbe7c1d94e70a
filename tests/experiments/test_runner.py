"""`run_experiment` in-process: run folder, exact metrics keys, plug-ins, bad input, budget, shards."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest
from omegaconf import DictConfig

from benchmark.score.constants import METRIC_NAMES
from core.registry import UnknownNameError
from experiments.run.experiment import run_experiment
from experiments.run.merge import merge_runs
from experiments.run.suite import NoDatasetsError

Make = Callable[..., DictConfig]


def test_a_run_writes_the_documented_folder_with_exact_metric_keys(make_cfg: Make, tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    outcome = run_experiment(make_cfg("strategy=s3", "strategy.n=3"), run_dir)
    for name in ("metrics.json", "metrics_strict.json", "samples.jsonl", "usage.json"):
        assert (run_dir / name).is_file()
    for profile, file in (("official", "metrics.json"), ("strict", "metrics_strict.json")):
        doc = json.loads((run_dir / file).read_text())
        assert set(doc) == {"profile", "macro", "datasets"} and doc["profile"] == profile
        assert list(doc["macro"]) == list(METRIC_NAMES)
        assert all(list(m) == list(METRIC_NAMES) for m in doc["datasets"].values())
    assert sorted(p.name for p in (run_dir / "candidates" / "synth-fundus-npy").iterdir()) == ["0", "1", "2"]
    vlm = run_dir / "export" / "synth-fundus-npy" / "VLM"
    assert (vlm / "random.txt").is_symlink() and (
        vlm / "s3" / "agent1_data_organization" / "data_meta.json"
    ).is_file()
    rows = [json.loads(line) for line in (run_dir / "samples.jsonl").read_text().splitlines()]
    assert len(rows) == 20 and {"decision", "validator_total", "scores"} <= set(rows[0])
    assert json.loads((run_dir / "usage.json").read_text())["total"]["calls"] == 6
    assert "official" in outcome.table and "strict" in outcome.table and not outcome.incomplete


def test_an_unknown_strategy_kind_lists_the_valid_ones(make_cfg: Make, tmp_path: Path) -> None:
    with pytest.raises(UnknownNameError, match=r"best_of_n.*s3"):
        run_experiment(make_cfg("strategy=s3", "strategy.kind=best_of_m"), tmp_path / "r")


def test_a_root_without_datasets_says_where_it_looked(make_cfg: Make, tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(NoDatasetsError, match=str(empty)):
        run_experiment(make_cfg(f"benchmark.root={empty}"), tmp_path / "r")


def test_a_selector_named_by_target_in_a_user_module_is_used(
    make_cfg: Make, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "my_sel_mod.py").write_text(
        textwrap.dedent("""
        def pick_last(index, candidates, reports, task):
            return len(candidates) - 1
    """)
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    run_experiment(
        make_cfg(
            "strategy=s3",
            "strategy.n=2",
            "strategy.selector._target_=my_sel_mod.pick_last",
            "benchmark.datasets=[synth-fundus-npy]",
        ),
        tmp_path / "r",
    )
    rows = [json.loads(line) for line in (tmp_path / "r" / "samples.jsonl").read_text().splitlines()]
    assert {r["decision"]["candidate"] for r in rows} == {1}
    assert all(r["decision"]["reason"].startswith("pick_last") for r in rows)


def test_a_decorator_registered_selector_is_used_via_run_imports(
    make_cfg: Make, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "my_sel_plugin.py").write_text(
        textwrap.dedent("""
        from strategies import selector

        @selector("always_first_cand")
        def always_first_cand(index, candidates, reports, task):
            return 0
    """)
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    run_experiment(
        make_cfg(
            "strategy=s3",
            "strategy.n=2",
            "selector.name=always_first_cand",
            "run.imports=[my_sel_plugin]",
            "benchmark.datasets=[synth-fundus-npy]",
        ),
        tmp_path / "r",
    )
    rows = [json.loads(line) for line in (tmp_path / "r" / "samples.jsonl").read_text().splitlines()]
    assert all(r["decision"]["reason"].startswith("always_first_cand") for r in rows)


def test_a_budget_hit_finishes_running_work_and_marks_the_tables_incomplete(
    make_cfg: Make, tmp_path: Path
) -> None:
    outcome = run_experiment(
        make_cfg("strategy=s3", "strategy.n=3", "run.budget_tokens=250", "run.concurrency=1"), tmp_path / "r"
    )
    doc = json.loads((tmp_path / "r" / "metrics.json").read_text())
    usage = json.loads((tmp_path / "r" / "usage.json").read_text())
    assert outcome.incomplete and doc["incomplete"] is True and "INCOMPLETE" in outcome.table
    assert usage["budget"]["hit"] and usage["total"]["calls"] == 3
    assert doc["datasets"]  # what finished is still scored


def test_shards_merge_into_the_unsharded_metrics(make_cfg: Make, tmp_path: Path) -> None:
    whole = run_experiment(make_cfg("strategy=s0"), tmp_path / "whole").metrics["official"]
    for k in (1, 2):
        run_experiment(make_cfg("strategy=s0", f"benchmark.shard={k}/2"), tmp_path / f"shard{k}")
    merged = merge_runs([tmp_path / "shard1", tmp_path / "shard2"], tmp_path / "merged")["official"]
    assert merged["datasets"] == whole["datasets"]
    assert merged["macro"] == pytest.approx(whole["macro"])


def test_scorer_profile_orders_the_terminal_table_and_rejects_unknown_names() -> None:
    from experiments.run.results import format_table

    docs = {
        "official": {"macro": dict.fromkeys(METRIC_NAMES, 0.5)},
        "strict": {"macro": dict.fromkeys(METRIC_NAMES, 0.25)},
    }
    lines = format_table(docs, "t", "strict").splitlines()
    assert lines[3].startswith("strict*") and lines[4].startswith("official ")
    with pytest.raises(ValueError, match="valid: official, strict"):
        format_table(docs, "t", "paper")


@pytest.mark.parametrize(("agent", "peak"), [("InFlightAgent", 4), ("CpuBoundInFlightAgent", 1)])
def test_a_cpu_bound_agent_runs_one_candidate_at_a_time_and_others_run_the_concurrency(
    make_cfg: Make, tmp_path: Path, agent: str, peak: int
) -> None:
    import strategy_fakes

    strategy_fakes.InFlightAgent.PEAK.clear()
    cfg = make_cfg(
        "strategy=s3",
        "strategy.n=3",
        "run.concurrency=4",
        "run.processes=1",
        f"agent._target_=strategy_fakes.{agent}",
    )
    outcome = run_experiment(cfg, tmp_path / "r")
    assert not outcome.incomplete
    # Two datasets of three candidates each: six calls, four allowed at once, unless the agent is CPU-bound.
    assert strategy_fakes.InFlightAgent.PEAK[agent] == peak
