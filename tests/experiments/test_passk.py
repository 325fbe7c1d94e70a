"""pass@k, pass^k and selected@k: the closed forms, and the curves of a stored run equal brute-force
enumeration of every k-subset of its candidates."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from experiments.analysis.passk import (
    candidate_passes,
    curves_frame,
    dataset_curves,
    pass_at_k,
    pass_hat_k,
    passk_curves,
    subsets,
    write_passk,
)
from experiments.selection.leaderboard import load_stored
from strategies.selectors import validator_max
from validator.validate import validate


@pytest.mark.parametrize("n", [1, 2, 5, 7])
def test_closed_forms_equal_the_mean_over_all_subsets(n: int) -> None:
    for c in range(n + 1):
        passing = [j < c for j in range(n)]
        for k in range(1, n + 1):
            combos = list(itertools.combinations(range(n), k))
            anyp = sum(any(passing[j] for j in s) for s in combos) / len(combos)
            allp = sum(all(passing[j] for j in s) for s in combos) / len(combos)
            assert pass_at_k(n, c, k) == pytest.approx(anyp, abs=1e-12)
            assert pass_hat_k(n, c, k) == pytest.approx(allp, abs=1e-12)


def test_sampled_subsets_are_distinct_and_seeded() -> None:
    drawn = list(subsets(12, 6, 50, "d:6"))
    assert len(drawn) == len(set(drawn)) == 50 and all(len(s) == 6 for s in drawn)
    assert drawn == list(subsets(12, 6, 50, "d:6"))
    assert len(list(subsets(5, 2, 50, "d:2"))) == 10  # 10 subsets: all of them


@pytest.mark.heavy
def test_curves_equal_brute_force_on_a_stored_run(rules_s3_run: tuple[Path, Path], tmp_path: Path) -> None:
    _, run = rules_s3_run
    for stored in load_stored(run):
        n = len(stored.candidates)
        passes = candidate_passes(stored)
        reports = [validate(c.output_dir, stored.task.root, profile="evidence") for c in stored.candidates]
        curves = dataset_curves(stored, passes, {"evidence": reports}, ["validator_max", "first"])
        indices = list(stored.task.indices)
        for k in range(1, n + 1):
            combos = list(itertools.combinations(range(n), k))
            oracle = all_pass = best = first = 0.0
            for pick in combos:
                for i in indices:
                    oracle += any(passes[i][j] for j in pick)
                    all_pass += all(passes[i][j] for j in pick)
                    cands, reps = [stored.candidates[j] for j in pick], [reports[j] for j in pick]
                    best += passes[i][pick[validator_max(i, cands, reps, stored.task)]]
                    wrote = [
                        j
                        for j in pick
                        if (
                            Path(stored.candidates[j].output_dir) / "standardized_annotations" / f"{i}.json"
                        ).is_file()
                    ]
                    first += bool(wrote) and passes[i][wrote[0]]
            scale = len(combos) * len(indices)
            assert curves.values["pass@k"][k] == pytest.approx(oracle / scale)
            assert curves.values["pass^k"][k] == pytest.approx(all_pass / scale)
            assert curves.values["evidence/validator_max"][k] == pytest.approx(best / scale)
            assert curves.values["evidence/first"][k] == pytest.approx(first / scale)
        # Some pair of curves must differ somewhere, or the test could not tell them apart.
        assert any(curves.values["pass@k"][k] != curves.values["pass^k"][k] for k in range(2, n + 1))
    frame = curves_frame(passk_curves([run], ["validator_max"], ["evidence"]))
    assert set(frame["curve"]) == {"pass@k", "pass^k", "evidence/validator_max"}
    assert (frame["lo"] <= frame["value"] + 1e-12).all() and (frame["value"] <= frame["hi"] + 1e-12).all()
    written = write_passk(frame, tmp_path / "passk")
    assert all(p.stat().st_size > 0 for p in written)
