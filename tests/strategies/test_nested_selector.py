"""The strategies' registry builds a strategy with its selector: a name (or a mapping) in the options is
resolved through the selectors' registry, the oracle stays behind its gate, and a strategy without a selector
never sees the option."""

from __future__ import annotations

import asyncio

import pytest
from strategy_fakes import NoisyOracleAgent

from agents.base import Task
from strategies import ProfileValidator, strategies
from strategies.selectors import OracleNotAllowed, first


def test_a_selector_named_in_the_options_is_resolved_by_the_registry(task: Task) -> None:
    built = strategies.create("s3", {"n": 3, "selector": "first"})
    result = asyncio.run(built(task, NoisyOracleAgent(p=0.6), ProfileValidator("evidence")))
    assert {d.candidate for d in result.decisions.values()} == {0}
    assert {d.reason.split(":")[0] for d in result.decisions.values()} == {"first"}


def test_a_built_selector_is_handed_over_unchanged(task: Task) -> None:
    built = strategies.create("s3", {"n": 2, "selector": first})
    result = asyncio.run(built(task, NoisyOracleAgent(p=0.6), ProfileValidator("evidence")))
    assert {d.candidate for d in result.decisions.values()} == {0}


def test_the_oracle_is_refused_when_named_through_the_registry() -> None:
    with pytest.raises(OracleNotAllowed, match=r"analysis\.oracle=true"):
        strategies.create("s3", {"selector": "oracle"})


def test_a_strategy_without_a_selector_drops_the_option() -> None:
    assert callable(strategies.create("s0", {"selector": "first"}))
