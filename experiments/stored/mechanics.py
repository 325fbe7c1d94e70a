"""Which runs check the framework's mechanics rather than measure a strategy, and the banner that says so.

The `rules` agent, the bundled suite and the validator were written together, and the `simulated` agent is
the oracle output with sampled mistakes: a strategy's numbers over either show that the pipeline works
(generation, selection, export, scoring), not that the strategy helps a model. Every surface that shows such a
run's numbers (the console table, the run and sweep reports, ``ablation.md``) carries `banner`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["MECHANICS_AGENTS", "banner", "mechanics_agent", "sweep_banner"]

MECHANICS_AGENTS: Mapping[str, str] = {
    "rules": "a code baseline written together with the bundled suite and the validator",
    "simulated": "the oracle output with sampled mistakes",
}
"""Agent name -> why its runs are a mechanics check."""


def mechanics_agent(agent: Mapping[str, Any] | None) -> str | None:
    """The agent's name when it is one of `MECHANICS_AGENTS` (a config with its own ``_target_`` is not).

    Args:
        agent: The run's ``agent`` config node (plain or DictConfig), or None.

    Returns:
        ``"rules"`` / ``"simulated"``, else None.
    """
    if agent is None or agent.get("_target_"):
        return None
    name = str(agent.get("name") or "")
    return name if name in MECHANICS_AGENTS else None


def banner(agent: str) -> str:
    """The one-line banner of a run by a mechanics-check agent.

    Args:
        agent: A key of `MECHANICS_AGENTS`.

    Returns:
        The banner.
    """
    return (
        f"MECHANICS CHECK: not evidence about strategies (agent={agent}: {MECHANICS_AGENTS[agent]}); "
        "use agent=litellm with a model for that"
    )


def sweep_banner(agents: Iterable[str]) -> str | None:
    """The banner of a sweep in which some runs used a mechanics-check agent.

    Args:
        agents: The agent names of the sweep's runs (any names; others are ignored).

    Returns:
        The banner naming those agents, or None when no run used one.
    """
    found = sorted({a for a in agents if a in MECHANICS_AGENTS})
    if not found:
        return None
    if len(found) == 1:
        return banner(found[0])  # the same words as each of its runs' reports
    why = "; ".join(f"{a}: {MECHANICS_AGENTS[a]}" for a in found)
    return (
        f"MECHANICS CHECK: not evidence about strategies (agent={', '.join(found)}; {why}); use "
        "agent=litellm with a model for that"
    )
