"""perf/simulated_selection.py: the three miss-rate definitions on hand-made label sets.

Plain (`testbed.perturb.miss_rates`), clear-cut (`dominated_miss_rates`) and error-free available
(`error_free_miss_rates`) count different opportunities on the same selection; each case below is built so
that the definitions disagree, and the expected tallies are worked out by hand in the comments.
"""

from __future__ import annotations

from types import ModuleType

import pytest
from perf_script import load_perf_script

from testbed.perturb import miss_rates


@pytest.fixture(scope="module")
def script() -> ModuleType:
    """perf/simulated_selection.py imported as a module (perf/ is a folder of scripts, not a package)."""
    return load_perf_script("simulated_selection")


def _labels(*per_candidate: dict[int, set[str]]) -> list[dict[int, frozenset[str]]]:
    return [{i: frozenset(s) for i, s in cand.items()} for cand in per_candidate]


def test_error_free_needs_a_clean_candidate(script: ModuleType) -> None:
    # Sample 0: the kept candidate has "a"; the others have "b" and nothing: an error-free one existed.
    # Sample 1: the kept candidate has "a"; the others have "b" and "b,c": no candidate is clean.
    labels = _labels(
        {0: {"a"}, 1: {"a"}},
        {0: {"b"}, 1: {"b"}},
        {0: set(), 1: {"b", "c"}},
    )
    chosen = {0: 0, 1: 0}
    assert script.error_free_miss_rates(chosen, labels) == {"a": (1, 1), "b": (0, 1)}
    # Plain counts both samples for "a" (a candidate without it existed in each) and "b", "c" in sample 1.
    assert miss_rates(chosen, labels) == {"a": (2, 2), "b": (0, 2), "c": (0, 1)}
    # Clear-cut: sample 0 "a" is dominated by the clean candidate; sample 1 "a" is not (each alternative has
    # "b", which the kept one lacks); "b" in sample 0 is dominated by the clean one, "c" in sample 1 by the
    # candidate with "b" alone (the kept one has "b" too).
    assert script.dominated_miss_rates(chosen, labels) == {"a": (1, 1), "b": (0, 1), "c": (0, 1)}


def test_every_type_of_a_sample_with_a_clean_candidate_is_an_opportunity(script: ModuleType) -> None:
    # One sample, four candidates: the clean one is not kept; the kept one has "a" and "b".
    # Error-free available counts "a", "b" and "c" (all appear, a clean candidate exists); the kept one
    # misses "a" and "b" but not "c".
    labels = _labels({0: {"a", "b"}}, {0: {"c"}}, {0: set()}, {0: {"a", "c"}})
    chosen = {0: 0}
    assert script.error_free_miss_rates(chosen, labels) == {"a": (1, 1), "b": (1, 1), "c": (0, 1)}


def test_keeping_the_clean_candidate_is_never_a_miss(script: ModuleType) -> None:
    labels = _labels({0: {"a"}, 1: set()}, {0: set(), 1: {"a", "b"}})
    chosen = {0: 1, 1: 1}
    # Sample 0 keeps the clean one: "a" is an opportunity, no miss. Sample 1 keeps "a,b" over the clean one:
    # a miss of each.
    assert script.error_free_miss_rates(chosen, labels) == {"a": (1, 2), "b": (1, 1)}
    assert script.error_free_miss_rates({0: 1}, labels) == {"a": (0, 1)}


def test_a_chosen_candidate_without_labels_is_left_out(script: ModuleType) -> None:
    # Candidate 1 carries no labels for sample 0 (not simulated): like `miss_rates`, nothing is counted.
    labels = _labels({0: {"a"}}, {}, {0: set()})
    assert script.error_free_miss_rates({0: 1}, labels) == {}
    assert miss_rates({0: 1}, labels) == {}
    assert script.error_free_miss_rates({0: 0}, labels) == {"a": (1, 1)}
