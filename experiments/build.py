"""Config → objects: the agent, the strategy (with its selector), the validator and the per-task options.

Everything is looked up in a registry or imported from ``_target_``; nothing here branches on a strategy name.
"""

from __future__ import annotations

import importlib
import inspect
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from omegaconf import DictConfig, OmegaConf

from agents.base import Agent, Limits
from experiments.request_cache import resolve_cache
from strategies.base import Strategy, strategies
from strategies.registry import Registry, call_with_options, load_object
from strategies.selectors import build_selector, is_oracle

__all__ = [
    "AGENT_TASK_KEYS",
    "agents",
    "build_agent",
    "build_components",
    "build_strategy",
    "import_plugins",
    "is_simulation",
    "task_options",
    "validator_profile",
    "wants_oracle",
]

log = logging.getLogger(__name__)

agents: Registry[Any] = Registry(
    "agent",
    entry_point_group="medstrat.agents",
    lazy={
        "rules": "agents.rules:RulesAgent",
        "litellm": "agents.litellm:LiteLLMAgent",
        "simulated": "agents.simulated:SimulatedAgent",
    },
)
"""Agent classes (or factories) by name; ``agent._target_`` bypasses the registry."""

AGENT_TASK_KEYS = ("name", "_target_", "temperature", "limits", "options", "instructions")
"""Agent config keys that describe the task rather than the constructor."""


def _plain(node: Any) -> Any:
    return OmegaConf.to_container(node, resolve=True) if isinstance(node, DictConfig) else node


def import_plugins(modules: Any) -> None:
    """Import the user's plug-in modules (``run.imports``) (their decorators register plug-ins)."""
    for name in _plain(modules) or []:
        importlib.import_module(str(name))


def build_agent(cfg: Mapping[str, Any] | DictConfig, *, allow_simulated: bool = False) -> Agent:
    """Construct the agent: ``_target_`` when given, else the registry entry named ``name``.

    Args:
        cfg: The ``agent`` config node; keys other than `AGENT_TASK_KEYS` go to the constructor.
        allow_simulated: ``analysis.simulated``: whether an agent marked ``simulation`` (it reads ground
            truth, like the ``simulated`` agent) may run.

    Returns:
        The agent.

    Raises:
        UnknownNameError: An unknown agent name.
        OptionError: An option the agent's constructor does not take, or a value of the wrong type.
        TypeError: The object built does not implement the `Agent` protocol.
        SimulationNotAllowed: A simulation agent without ``allow_simulated``.
    """
    data = dict(_plain(cfg))
    target = data.get("_target_")
    factory = load_object(str(target)) if target else agents.get(str(data.get("name", "rules")))
    if getattr(factory, "simulation", False) and not allow_simulated:
        from agents.simulated import SimulationNotAllowed

        raise SimulationNotAllowed(
            f"the {data.get('name') or target} agent is a simulation built from ground truth: enable it with "
            "analysis.simulated=true (its results are marked simulation, never a model result)"
        )
    kwargs = {k: v for k, v in data.items() if k not in AGENT_TASK_KEYS}
    if (
        "cache" in kwargs
    ):  # agent.cache=auto (the default): the user's cache folder (experiments.request_cache)
        kwargs["cache"] = resolve_cache(kwargs["cache"])
    if "temperature" in inspect.signature(factory).parameters and "temperature" in data:
        kwargs["temperature"] = data["temperature"]
    agent = call_with_options(factory, kwargs, "agent")
    if not isinstance(agent, Agent):
        raise TypeError(
            f"{target or data.get('name')} built {type(agent).__name__}, which lacks the Agent "
            "protocol (name, async generate(task), async revise(task, candidate, feedback, fields))"
        )
    return agent


def is_simulation(agent: Agent) -> bool:
    """Whether the agent is a simulation built from ground truth (its results are labelled so)."""
    return bool(getattr(agent, "simulation", False))


def task_options(agent_cfg: Mapping[str, Any] | DictConfig, seed: int) -> dict[str, Any]:
    """The `Task` fields that come from the agent config: temperature, limits, free options, seed."""
    data = dict(_plain(agent_cfg))
    return {
        "seed": int(seed),
        "temperature": float(data.get("temperature") or 0.0),
        "limits": Limits(**(data.get("limits") or {})),
        "options": dict(data.get("options") or {}),
    }


def _selector_spec(strategy_cfg: Mapping[str, Any], selector_cfg: Any) -> Any:
    # ``strategy.selector`` (a name or a ``_target_`` mapping) wins over the top-level ``selector`` group.
    sel = strategy_cfg.get("selector") or {}
    if isinstance(sel, str) or (isinstance(sel, dict) and sel.get("_target_")):
        return sel
    return _plain(selector_cfg)


def wants_oracle(strategy_cfg: Mapping[str, Any] | DictConfig, selector_cfg: Any) -> bool:
    """Whether the configured selector is the ground-truth oracle (before building it)."""
    spec = _selector_spec(_plain(strategy_cfg), selector_cfg)
    try:
        return is_oracle(build_selector(spec, allow_oracle=True))
    except Exception:  # a broken selector is reported when the strategy is built
        return False


def build_strategy(
    cfg: Mapping[str, Any] | DictConfig, selector_cfg: Any = None, *, allow_oracle: bool = False
) -> Strategy:
    """Construct the strategy: the factory named by ``kind`` called with the other keys.

    Args:
        cfg: The ``strategy`` node (``name``, ``kind``, factory options, optional ``selector._target_``).
        selector_cfg: The top-level ``selector`` node, used when ``strategy.selector._target_`` is unset.
        allow_oracle: ``analysis.oracle``.

    Returns:
        The strategy.

    Raises:
        UnknownNameError: An unknown strategy kind or selector name (the message lists the valid ones).
        OptionError: An option the strategy factory does not take, or a value it refuses (``n=0``).
        OracleNotAllowed: The oracle selector without ``analysis.oracle=true``.
    """
    data = dict(_plain(cfg))
    factory = strategies.get(str(data.get("kind") or data.get("name")))
    kwargs = {k: v for k, v in data.items() if k not in ("name", "kind", "selector")}
    if "selector" in inspect.signature(factory).parameters:
        # selector.on_error (top-level group) applies to a strategy.selector given by name or _target_ too.
        on_error = (_plain(selector_cfg) or {}).get("on_error") if selector_cfg is not None else None
        spec = _selector_spec(data, selector_cfg)
        kwargs["selector"] = build_selector(spec, allow_oracle=allow_oracle, on_error=on_error)
    return call_with_options(factory, kwargs, "strategy")


def validator_profile(
    cfg: Mapping[str, Any] | DictConfig, folder: Path, strategy_profile: str | None
) -> str | Path:
    """The profile the run validates with: the composed ``validator`` node written to
    ``folder/<profile>.yaml`` (so command-line weight overrides apply), or ``mdsbench`` for the
    ``paper`` strategy profile."""
    data = dict(_plain(cfg))
    name = str(data.get("profile", "evidence"))
    if strategy_profile == "paper" and name != "mdsbench":
        log.warning(
            "strategy.profile=paper uses the reference procedure: validating with the mdsbench profile "
            "instead of %s",
            name,
        )
        return "mdsbench"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def build_components(cfg: DictConfig) -> tuple[Strategy, Agent, bool]:
    """The run's plug-ins imported, then its strategy (with its selector) and agent built from the config.

    Also what each worker process of ``run.processes=N`` calls: the objects are rebuilt there from the
    config, never sent between processes.

    Args:
        cfg: The composed config.

    Returns:
        The strategy, the agent, and whether the results are an upper bound (the oracle selector).
    """
    import_plugins(cfg.run.get("imports"))
    allow_oracle = bool(cfg.get("analysis", {}).get("oracle", False))
    strategy = build_strategy(cfg.strategy, cfg.get("selector"), allow_oracle=allow_oracle)
    upper_bound = allow_oracle and wants_oracle(cfg.strategy, cfg.get("selector"))
    agent = build_agent(cfg.agent, allow_simulated=bool(cfg.get("analysis", {}).get("simulated", False)))
    return strategy, agent, upper_bound
