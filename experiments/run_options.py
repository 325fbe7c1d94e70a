"""Run options the preflight refuses because the run could not honour them: a budget that is not positive, a
dollar budget over a model nobody can price. Each refusal is one line naming the option and the way out."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["check_budget"]


def _positive(name: str, value: Any, kind: type[int] | type[float]) -> None:
    try:
        number = kind(value)
    except (TypeError, ValueError):
        raise ValueError(f"run.{name}={value!r}: expected a positive number (or null for no limit)") from None
    if number <= 0:
        raise ValueError(
            f"run.{name}={value}: a budget must be positive (null for no limit); with {value} no call "
            "could start"
        )


def _at_least(name: str, value: Any, floor: int) -> None:
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise ValueError(f"run.{name}={value!r}: expected a whole number (or null for no limit)") from None
    if number < floor:
        raise ValueError(f"run.{name}={value}: a budget cannot be negative (null for no limit)")


def check_budget(run: Mapping[str, Any], agent: Any) -> None:
    """Refuse budgets the run cannot enforce.

    A dollar budget needs a price per call. LiteLLM counts a call to a model missing from its price map
    (a typo, a local vLLM or Ollama model, a model newer than the map) as $0, so the budget would never be
    reached: refused unless ``agent.price`` gives the price, with ``run.budget_tokens`` as the other way.

    Args:
        run: The ``run`` config node (``budget_usd``, ``budget_tokens``).
        agent: The built agent (``priced`` False when its calls' cost is unknown; agents without the
            attribute make no priced calls).

    Raises:
        ValueError: A dollar budget that is not positive, a negative token budget, or ``budget_usd`` with
            an unpriced model.
    """
    usd, tokens = run.get("budget_usd"), run.get("budget_tokens")
    if tokens is not None:
        # 0 is allowed: a gate no call passes (a reselection uses it to make sure no agent is called).
        _at_least("budget_tokens", tokens, 0)
    if usd is None:
        return
    _positive("budget_usd", usd, float)
    if getattr(agent, "priced", True):
        return
    model = getattr(agent, "model", None) or "the agent's model"
    raise ValueError(
        f"run.budget_usd={usd} cannot be enforced: LiteLLM has no price for {model}, so its calls would "
        "count $0; give the price (agent.price.input_per_mtok=... agent.price.output_per_mtok=..., dollars "
        "per million tokens) or cap tokens instead (run.budget_tokens=...)"
    )
