"""The decision points of the rules baseline: argmax at temperature 0, seeded softmax sampling, replay."""

from __future__ import annotations

import math

import pytest

from agents.rules.decisions import Decider, Hypothesis, softmax


def _hyps() -> list[Hypothesis[str]]:
    return [Hypothesis("b", 1.0, "weaker"), Hypothesis("a", 3.0, "stronger"), Hypothesis("c", 1.0, "weaker")]


def test_temperature_zero_takes_the_highest_score_whatever_the_seed() -> None:
    picks = {Decider(temperature=0.0, seed=s).choose("p", _hyps(), 0) for s in range(20)}
    assert picks == {"a"}


def test_score_ties_go_to_the_earlier_hypothesis() -> None:
    tied = [Hypothesis("first", 1.0), Hypothesis("second", 1.0)]
    assert Decider().choose("p", tied) == "first"


def test_softmax_matches_the_closed_form_and_sums_to_one() -> None:
    probs = softmax([3.0, 1.0], 0.7)
    expected = 1.0 / (1.0 + math.exp(-2.0 / 0.7))
    assert probs[0] == pytest.approx(expected)
    assert sum(probs) == pytest.approx(1.0)


def test_sampling_frequencies_follow_the_softmax() -> None:
    picks = [
        Decider(temperature=1.0, seed=s).choose("p", [Hypothesis("a", 1.0), Hypothesis("b", 0.0)], 0)
        for s in range(2000)
    ]
    share = picks.count("a") / len(picks)
    assert share == pytest.approx(math.e / (1 + math.e), abs=0.04)


def test_a_draw_depends_on_seed_sample_and_point_not_on_call_order() -> None:
    first = Decider(temperature=2.0, seed=7)
    a = [first.choose("p", _hyps(), i) for i in range(10)]
    second = Decider(temperature=2.0, seed=7)
    b = [second.choose("p", _hyps(), i) for i in reversed(range(10))][::-1]
    assert a == b
    other = [Decider(temperature=2.0, seed=8).choose("p", _hyps(), i) for i in range(10)]
    assert other != a


def test_replay_reuses_earlier_choices_unless_the_point_is_redecided() -> None:
    replay = {(3, "slice"): "c"}
    assert Decider(replay=replay).choose("slice", _hyps(), 3) == "c"
    redo = Decider(temperature=5.0, replay=replay, redecide=frozenset({"slice@3"}))
    assert redo.choose("slice", _hyps(), 3) == "a"
    assert redo.records[-1].temperature == 0.0


def test_every_decision_is_recorded_with_its_ranked_options() -> None:
    seen = []
    decider = Decider(on_record=seen.append)
    decider.choose("task_type", _hyps())
    record = seen[0].to_dict()
    assert record["point"] == "task_type" and record["chosen"] == "a" and record["rank"] == 0
    assert [o["name"] for o in record["options"]] == ["a", "b", "c"]


def test_no_hypotheses_is_an_error_naming_the_point() -> None:
    with pytest.raises(ValueError, match="slice"):
        Decider().choose("slice", [], 2)
