"""Inference-time strategies S0-S4 and the registry of selection heuristics.

from strategies import strategies, build_selector
run = strategies.get("s3")(n=5, selector=build_selector("validator_max"))
result = await run(task, agent, ProfileValidator("evidence"))
"""

from core.registry import Registry, UnknownNameError
from strategies.base import (
    ProfileValidator,
    SampleDecision,
    Strategy,
    StrategyResult,
    Validator,
    strategies,
    strategy,
)
from strategies.selectors import Selector, build_selector, selector, selectors

__all__ = [
    "ProfileValidator",
    "Registry",
    "SampleDecision",
    "Selector",
    "Strategy",
    "StrategyResult",
    "UnknownNameError",
    "Validator",
    "build_selector",
    "selector",
    "selectors",
    "strategies",
    "strategy",
]
