"""The selector leaderboard on stored candidates: it reproduces the source run, detects a broken selector,
reports mistake miss rates from ``mistakes.json``, validates each candidate once per profile, and calls no
agent."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pandas as pd
import pytest
from rules_runs import DATASETS, N

from agents.base import Candidate, Task
from experiments.selection.leaderboard import leaderboard, write_leaderboard
from strategies.selectors import selectors
from validator.report import Report

REPO = Path(__file__).resolve().parents[2]


def _worst(index: int, candidates: Sequence[Candidate], reports: Sequence[Report], task: Task) -> int:
    """A broken selector: the lowest validator total (what an inverted validator_max would do)."""

    def total(k: int) -> float:
        sample = reports[k].samples.get(index)
        return sample.total if sample is not None else 0.0

    return min(range(len(candidates)), key=lambda k: (total(k), k))


def _last(index: int, candidates: Sequence[Candidate], reports: Sequence[Report], task: Task) -> int:
    return len(candidates) - 1


selectors.add("test_worst", _worst)
selectors.add("test_last", _last)


@pytest.fixture(scope="module")
def board(rules_s3_run: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory):
    """The leaderboard over a copy of the stored run whose candidates carry hand-written mistake labels:
    candidate k has mistake "late" on every sample when k > 0, and "parity" where k > 0 and k and the index
    have the same parity (so on every sample some candidate has each mistake and candidate 0 lacks both)."""
    _, src = rules_s3_run
    run = tmp_path_factory.mktemp("board") / "run"
    shutil.copytree(src, run, symlinks=True)
    for ds in DATASETS:
        for k in range(N):
            indices = [
                int(p.stem)
                for p in (
                    run / "selected" / ds / "agent1_data_organization" / "standardized_annotations"
                ).glob("*.json")
            ]
            samples = {
                str(i): [t for t, on in (("late", k > 0), ("parity", k > 0 and k % 2 == i % 2)) if on]
                for i in indices
            }
            (run / "candidates" / ds / str(k) / "mistakes.json").write_text(
                json.dumps({"samples": samples, "meta": []})
            )
    frame, stats = leaderboard(
        [run], ["validator_max", "first", "test_worst", "test_last"], ["evidence", "mdsbench"]
    )
    return run, frame.set_index(["validator", "selector"]), stats


def test_validator_max_reproduces_the_source_run(board, rules_s3_run) -> None:
    _, frame, _ = board
    _, src = rules_s3_run
    macro = json.loads((src / "metrics.json").read_text())["macro"]
    strict = json.loads((src / "metrics_strict.json").read_text())["macro"]
    row = frame.loc[("evidence", "validator_max")]
    assert row["E2E"] == pytest.approx(macro["E2E"])
    assert row["SCJ"] == pytest.approx(macro["SCJ"])
    assert row["CF"] == pytest.approx(macro["CF"])
    assert row["strict_E2E"] == pytest.approx(strict["E2E"])
    assert row["oracle_E2E"] >= row["E2E"] and row["gap_to_oracle"] == pytest.approx(
        row["oracle_E2E"] - row["E2E"]
    )


def test_a_selector_that_picks_the_worst_candidate_is_detected(board) -> None:
    _, frame, _ = board
    for validator in ("evidence", "mdsbench"):
        best, worst = frame.loc[(validator, "validator_max")], frame.loc[(validator, "test_worst")]
        assert worst["E2E"] < best["E2E"]
        assert worst["dE2E_vs_validator_max"] < 0 and worst["dE2E_hi"] <= 0
        assert worst["gap_to_oracle"] > best["gap_to_oracle"]


def test_mistake_miss_rates_follow_the_labels(board) -> None:
    _, frame, _ = board
    first, last = frame.loc[("evidence", "first")], frame.loc[("evidence", "test_last")]
    assert first["miss_late"] == 0.0 and last["miss_late"] == 1.0  # candidate 0 never has "late"
    assert first["miss_parity"] == 0.0
    assert last["miss_parity"] == pytest.approx(0.5)  # candidate 3 has it on the odd half of the indices
    samples = 10 * len(DATASETS)
    assert first["n_late"] == samples and first["n_parity"] == samples


def test_each_candidate_is_validated_once_per_profile_and_no_agent_is_called(board, tmp_path: Path) -> None:
    run, frame, stats = board
    assert stats["validations"] == N * len(DATASETS) * 2
    # No candidate was made or touched: the same done-markers, byte for byte (usage counters included).
    markers = sorted((run / "candidates").rglob("candidate.json"))
    assert len(markers) == N * len(DATASETS) and all(p.stat().st_mtime < stats["started"] for p in markers)
    written = {p.name for p in write_leaderboard(frame.reset_index(), stats, tmp_path)}
    assert {"selectors.md", "selectors.csv", "selectors.tex", "selectors.png"} <= written
    assert "| late | " in (tmp_path / "selectors.md").read_text()  # one row per mistake type


def test_cli_bad_input_is_one_line_and_exit_2(rules_s3_run, tmp_path: Path) -> None:
    _, src = rules_s3_run
    for args in ([str(tmp_path / "missing")], [str(src), "--selectors", "nope"]):
        done = subprocess.run(
            [sys.executable, "-m", "experiments.cli", "leaderboard", *args, "--out", str(tmp_path / "o")],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 2, done.stderr
        assert done.stderr.startswith("medstrat leaderboard: error: ") and done.stderr.count("\n") == 1
    assert not (tmp_path / "o").exists()


def test_on_simulated_candidates_a_worst_picking_selector_misses_more_mistakes(
    suite: Path, tmp_path: Path
) -> None:
    """Candidates of the ``simulated`` agent (correct outputs with labelled mistakes): the leaderboard reads
    the labels, and keeping the validator's least favourite candidate misses more mistakes than keeping its
    favourite, and scores lower."""
    from experiments import compose_config
    from experiments.run.experiment import run_experiment

    cfg = compose_config(
        [
            "benchmark=dir",
            f"benchmark.root={suite}",
            "agent=simulated",
            "analysis.simulated=true",
            "run.progress=false",
            "run.report=false",
            "strategy=s3",
            "strategy.n=4",
        ]
    )
    run_experiment(cfg, tmp_path / "sim")
    frame, _ = leaderboard([tmp_path / "sim"], ["validator_max", "test_worst"], ["evidence"])
    rows = frame.set_index("selector")
    types = [c[len("miss_") :] for c in frame.columns if c.startswith("miss_")]
    assert types, "no mistake labels were read"

    def misses(selector: str) -> float:
        pairs = [(rows.loc[selector, f"miss_{t}"], rows.loc[selector, f"n_{t}"]) for t in types]
        return sum(float(rate) * int(n) for rate, n in pairs if n and not pd.isna(rate))

    assert misses("test_worst") > misses("validator_max")
    assert rows.loc["test_worst", "E2E"] < rows.loc["validator_max", "E2E"]


def test_an_output_is_assembled_and_scored_once_whatever_profile_chose_it(
    rules_s3_run: tuple[Path, Path], tmp_path: Path
) -> None:
    """What an assembled folder holds is the choice per sample and the meta of the candidate whose meta
    validates best: the same choice under another profile is scored again only when that meta changes."""
    import dataclasses

    from experiments.selection.leaderboard import ReportCache, ScoreCache, load_stored
    from strategies.selectors import build_selector

    _, src = rules_s3_run
    run = tmp_path / "run"
    shutil.copytree(src, run, symlinks=True)  # mdsbench reports get stored beside the copy's candidates
    stored = load_stored(run)[0]
    cache, scores = ReportCache(), ScoreCache(tmp_path / "work")
    evidence = [cache.get(c, stored.task, "evidence") for c in stored.candidates]
    mdsbench = [cache.get(c, stored.task, "mdsbench") for c in stored.candidates]
    first = build_selector("first")
    best_meta = min(range(len(evidence)), key=lambda k: (-evidence[k].data_meta.total, k))
    same_meta = [
        dataclasses.replace(r, data_meta=e.data_meta) for r, e in zip(mdsbench, evidence, strict=True)
    ]
    _, scored = scores.score_decisions(stored, first, "evidence", evidence)
    _, again = scores.score_decisions(stored, first, "mdsbench", same_meta)
    assert scores.assembled == 1 and again is scored
    other = (best_meta + 1) % len(evidence)
    top = dataclasses.replace(evidence[best_meta].data_meta, total=1.0)
    low = dataclasses.replace(evidence[best_meta].data_meta, total=0.0)
    other_meta = [
        dataclasses.replace(r, data_meta=top if k == other else low) for k, r in enumerate(mdsbench)
    ]
    scores.score_decisions(stored, first, "mdsbench", other_meta)
    assert scores.assembled == 2  # another candidate's meta: another folder


def test_runs_named_alike_are_distinct_clusters(rules_s3_run, tmp_path: Path) -> None:
    # A study's seeds: <dataset>/seed0/s3 and <dataset>/seed1/s3. Keyed by the folder name alone, the second
    # run's E2E and oracle replaced the first's while the macro counted both.
    _, src = rules_s3_run
    runs = [tmp_path / seed / "s3" for seed in ("seed0", "seed1")]
    for run in runs:
        shutil.copytree(src, run, symlinks=True)
    frame, stats = leaderboard([*runs, runs[0]], ["validator_max"], ["evidence"], workers=1)

    row = frame.set_index("selector").loc["validator_max"]
    clusters = stats["per_dataset_E2E"]["evidence/validator_max"]
    assert sorted(clusters) == sorted(f"{seed}/s3/{ds}" for seed in ("seed0", "seed1") for ds in DATASETS)
    assert row["n_datasets"] == 2 * len(DATASETS)
    assert row["E2E"] == pytest.approx(sum(clusters.values()) / len(clusters))
    assert row["oracle_E2E"] >= row["E2E"]


def test_run_labels_take_parents_only_where_names_clash(tmp_path: Path) -> None:
    from experiments.selection.leaderboard import run_labels

    runs = [tmp_path / "a" / "s3", tmp_path / "b" / "s3", tmp_path / "x" / "run7"]
    assert run_labels(runs) == ["a/s3", "b/s3", "x/run7"]
    assert run_labels([tmp_path / "r", tmp_path / "r"]) == ["r", "r"]


def _copy_with_sample_limit(src: Path, tmp_path: Path, limit: object) -> Path:
    """A copy of the stored run whose run.json says it was cut to ``limit`` samples per dataset."""
    run = tmp_path / "run"
    shutil.copytree(src, run, symlinks=True)
    info = json.loads((run / "run.json").read_text())
    (run / "run.json").write_text(json.dumps({**info, "samples_per_dataset": limit}))
    return run


def test_a_run_limited_to_n_samples_is_re_scored_on_those_n(rules_s3_run, tmp_path: Path) -> None:
    from experiments.selection.leaderboard import load_stored

    _, src = rules_s3_run
    run = _copy_with_sample_limit(src, tmp_path, 1)

    stored = load_stored(run)

    assert stored and all(len(s.task.entries) == 1 for s in stored)
    assert all(len(s.task.entries) > 1 for s in load_stored(src))


@pytest.mark.parametrize("limit", ["3", 2.5, 0, True])
def test_a_run_json_sample_limit_that_is_not_a_positive_integer_is_refused_in_one_line(
    rules_s3_run, tmp_path: Path, limit: object
) -> None:
    from experiments.selection.leaderboard import load_stored
    from experiments.selection.reselect import ReselectError

    run = _copy_with_sample_limit(rules_s3_run[1], tmp_path, limit)

    with pytest.raises(ReselectError, match=r"samples_per_dataset is .* not a positive integer") as err:
        load_stored(run)
    assert "\n" not in str(err.value) and "run.json" in str(err.value)


def test_an_output_of_the_first_samples_scores_whole_on_those_samples(rules_s3_run, tmp_path: Path) -> None:
    from benchmark.score.evaluate import score_candidate
    from experiments.selection.leaderboard import load_stored

    _, src = rules_s3_run
    stored = load_stored(src)[0]
    out = tmp_path / "out"
    shutil.copytree(stored.candidates[0].output_dir, out)
    first = stored.task.entries[0].index
    for path in (out / "standardized_annotations").glob("*.json"):
        if int(path.stem) != first:
            path.unlink()

    whole = score_candidate(out, stored.task.root)
    cut = score_candidate(out, stored.task.root, indices=[first])

    assert whole.metrics["SV"] < 1.0
    assert cut.metrics["SV"] == 1.0 and [int(s.index) for s in cut.per_sample] == [first]


def test_the_board_says_how_many_datasets_came_from_cut_runs(rules_s3_run, tmp_path: Path) -> None:
    _, src = rules_s3_run
    run = _copy_with_sample_limit(src, tmp_path, 1)

    frame, stats = leaderboard([run], ["validator_max"], ["evidence"], workers=1)
    write_leaderboard(frame, stats, tmp_path / "board")

    assert stats["limited"] == len(DATASETS)
    text = (tmp_path / "board" / "selectors.md").read_text()
    assert f"{len(DATASETS)} of them from runs cut by benchmark.samples, scored on those samples" in text
