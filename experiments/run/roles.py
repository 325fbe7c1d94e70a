"""Config → the run's model roles: the candidate pool, the reviser and the judge, each any agent config.

- ``agent``: the default maker of every candidate (the ``agent`` group).
- ``strategy.pool=[{agent: ..., n: 3}, ...]``: candidates from several agents; an entry's ``agent`` is a
  file name of ``conf/agent/`` (``litellm``) or a mapping (``{name: litellm, model: openai/gpt-4o}``, keys
  over that file; ``{_target_: my_pkg.MyAgent}``); a name equal to the run agent's starts from the
  ``agent`` node instead (its endpoint, cache, limits); ``label`` names it in the tables
  (default ``<name>:<model>``).
- ``reviser``: the S1/S2 revisions (the ``reviser`` group; null: whoever made the candidate).
- ``judge``: the judge of ``selector=llm_judge|hybrid`` (the ``judge`` group; null: the agent's config).

`experiments.run.plan.build_components` calls these once and puts the result in the `RunPlan`.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from omegaconf import DictConfig, OmegaConf

from agents.base import Agent, Limits
from agents.budget import Budget
from agents.judge import Judge
from agents.roles import PoolMember, RoleAgent
from core.registry import OptionError, call_with_options, load_object, options_signature

__all__ = [
    "AGENT_CONF",
    "Roles",
    "agent_config",
    "agent_label",
    "build_judge",
    "build_roles",
    "judge_selector",
]

AGENT_CONF = Path(__file__).resolve().parents[2] / "conf" / "agent"
"""The agent group's files: a role named ``litellm`` starts from ``conf/agent/litellm.yaml``."""

_TASK_KEYS = ("temperature", "limits", "options")


def _plain(node: Any) -> Any:
    return OmegaConf.to_container(node, resolve=True) if isinstance(node, DictConfig) else node


def agent_config(spec: str | Mapping[str, Any], like: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A complete agent config from a role's spec: a ``conf/agent`` file name, or keys over one.

    Args:
        spec: ``"litellm"``, or ``{name: litellm, model: ...}``, or ``{_target_: pkg.Agent, ...}``.
        like: The run's ``agent`` node: a spec of the same ``name`` starts from it instead of the file, so the
            run's endpoint, cache, limits and instructions apply to every role of that kind.

    Returns:
        The agent config (as the ``agent`` group would compose it).

    Raises:
        OptionError: A name with no ``conf/agent`` file and no ``_target_``.
    """
    data = {"name": spec} if isinstance(spec, str) else dict(_plain(spec))
    name = data.get("name")
    base: dict[str, Any] = {}
    if like is not None and name and name == like.get("name") and not data.get("_target_"):
        base = {k: v for k, v in like.items() if k != "_target_"}
    elif name and not data.get("_target_"):
        path = AGENT_CONF / f"{name}.yaml"
        if not path.is_file():
            valid = ", ".join(sorted(p.stem for p in AGENT_CONF.glob("*.yaml")))
            raise OptionError(f"unknown agent {name!r} in a role; valid: {valid} (or give a _target_)")
        base = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    return _merge(base, data)


def _merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        out[key] = (
            _merge(out[key], value)
            if isinstance(value, Mapping) and isinstance(out.get(key), Mapping)
            else value
        )
    return out


def agent_label(cfg: Mapping[str, Any]) -> str:
    """What a role's candidates record as their agent: ``label``, else ``<name or _target_>[:<model>]``."""
    if cfg.get("label"):
        return str(cfg["label"])
    who = str(cfg.get("_target_") or cfg.get("name") or "agent").rsplit(".", 1)[-1]
    return f"{who}:{cfg['model']}" if cfg.get("model") else who


def _task_fields(cfg: Mapping[str, Any]) -> dict[str, Any]:
    # A role's own temperature, limits and options replace the run's in the tasks it gets.
    out: dict[str, Any] = {}
    if cfg.get("temperature") is not None:
        out["temperature"] = float(cfg["temperature"])
    if cfg.get("limits"):
        out["limits"] = Limits(**cfg["limits"])
    if cfg.get("options"):
        out["options"] = dict(cfg["options"])
    return out


@dataclass(frozen=True)
class Roles:
    """The run's roles, built once.

    Attributes:
        agent: What the strategy is given: the plain agent, or a `RoleAgent` when a pool or a reviser is set.
        pool: ``(label, n)`` per pool entry (empty: one agent makes every candidate).
        reviser: The reviser's label (None: the maker revises).
        judge: The judge (None unless a judge selector asks for it).
    """

    agent: Agent
    pool: tuple[tuple[str, int], ...] = ()
    reviser: str | None = None
    judge: Judge | None = None


def build_roles(
    agent_cfg: Mapping[str, Any] | DictConfig,
    pool: Sequence[Mapping[str, Any]] | None,
    reviser_cfg: Mapping[str, Any] | DictConfig | None,
    *,
    build_agent: Callable[..., Agent],
    allow_simulated: bool = False,
    budget: Budget | None = None,
) -> Roles:
    """Build the candidate pool and the reviser around the run's agent.

    Args:
        agent_cfg: The ``agent`` node.
        pool: ``strategy.pool`` (None or empty: the agent makes every candidate).
        reviser_cfg: The ``reviser`` node (None: no separate reviser).
        build_agent: Builds one agent from its config (`experiments.run.plan.build_agent`).
        allow_simulated: ``analysis.simulated``.
        budget: The run's budget, handed to every role's agent that takes one.

    Returns:
        The roles (``agent`` is the run's agent itself when neither a pool nor a reviser is set).

    Raises:
        OptionError: A pool entry without an ``agent`` or with ``n < 1``, or duplicate labels.
    """
    base_cfg = dict(_plain(agent_cfg))
    members: list[PoolMember] = []
    for k, entry in enumerate(_plain(pool) or []):
        if not isinstance(entry, Mapping) or "agent" not in entry:
            raise OptionError(f"strategy.pool[{k}]: give {{agent: NAME or {{...}}, n: N}}, got {entry!r}")
        unknown = sorted(set(entry) - {"agent", "n", "label"})
        if unknown:
            raise OptionError(f"strategy.pool[{k}].{unknown[0]}: unknown key; valid: agent, n, label")
        cfg = agent_config(entry["agent"], like=base_cfg)
        if entry.get("label"):
            cfg["label"] = entry["label"]
        n = int(entry.get("n", 1))
        if n < 1:
            raise OptionError(f"strategy.pool[{k}].n must be 1 or more, got {n}")
        agent = build_agent(_agent_only(cfg), allow_simulated=allow_simulated, budget=budget)
        members.append(PoolMember(agent, n, agent_label(cfg), _task_fields(cfg)))
    reviser_plain = _plain(reviser_cfg)
    if not members and not reviser_plain:
        return Roles(build_agent(agent_cfg, allow_simulated=allow_simulated, budget=budget))
    if not members:
        agent = build_agent(agent_cfg, allow_simulated=allow_simulated, budget=budget)
        members = [PoolMember(agent, 1, agent_label(base_cfg))]
    reviser: Agent | None = None
    reviser_label: str | None = None
    reviser_task: dict[str, Any] = {}
    if reviser_plain:
        rcfg = agent_config(reviser_plain, like=base_cfg)
        reviser = build_agent(_agent_only(rcfg), allow_simulated=allow_simulated, budget=budget)
        reviser_label, reviser_task = agent_label(rcfg), _task_fields(rcfg)
    try:
        role_agent = RoleAgent(
            members, reviser, reviser_label=reviser_label or "reviser", reviser_task=reviser_task
        )
    except ValueError as exc:
        raise OptionError(f"strategy.pool: {exc}") from None
    return Roles(role_agent, tuple((m.label, m.n) for m in members), reviser_label)


def _agent_only(cfg: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in cfg.items() if k != "label"}


def build_judge(
    judge_cfg: Mapping[str, Any] | DictConfig | None,
    agent_cfg: Mapping[str, Any] | DictConfig,
    budget: Budget | None = None,
) -> Judge:
    """The judge role: the ``judge`` node, else the run's agent config (its model, endpoint, key, cache).

    Args:
        judge_cfg: The ``judge`` node (``name: litellm`` and `agents.model.judge.LiteLLMJudge` options, or a
            ``_target_`` building any `Judge`); None: judge with the agent's model.
        agent_cfg: The ``agent`` node.
        budget: The run's budget, handed to a judge whose constructor takes ``budget`` (checked before each
            verdict); any other judge's verdicts are charged by the strategy once they are made.

    Returns:
        The judge.

    Raises:
        OptionError: No judge can be made (the agent is not a model and no ``judge`` is given), an unknown
            option, or the object built is not a `Judge`.
    """
    from agents.model.judge import LiteLLMJudge
    from experiments.run.request_cache import resolve_cache

    explicit = _plain(judge_cfg)
    data = dict(explicit) if explicit else dict(_plain(agent_cfg))
    if "cache" in data and not data.get("_target_"):
        # ``auto`` is the user's cache file, as for the agent (experiments.run.request_cache): a judged
        # rerun, or a leaderboard re-ranking a judged run, is answered from it.
        data["cache"] = resolve_cache(data["cache"])
    target = data.get("_target_")
    if target:
        factory = load_object(str(target))
        options = _options(data)
        if budget is not None and "budget" in inspect.signature(factory).parameters:
            options["budget"] = budget
        made = call_with_options(factory, options, "judge")
    elif str(data.get("name")) == "litellm":
        options = _options(data)
        if not explicit:
            # The agent's config holds agent-only keys (limits, tools); the judge takes what it shares, but
            # not the agent's extra request parameters: a verdict's request is the judge's own.
            names = set(options_signature(LiteLLMJudge).parameters) - {"extra_params"}
            options = {k: v for k, v in options.items() if k in names}
        if budget is not None:
            options["budget"] = budget
        made = call_with_options(LiteLLMJudge, options, "judge")
    else:
        raise OptionError(
            f"a judge selector needs a model: the agent {data.get('name')!r} cannot judge; give one with "
            "judge=litellm judge.model=MODEL (or judge._target_=my_pkg.MyJudge)"
        )
    if not isinstance(made, Judge):
        raise OptionError(f"judge: {target} built {type(made).__name__}, which lacks judge(request) and name")
    return made


def _options(data: Mapping[str, Any]) -> dict[str, Any]:
    return {
        k: v
        for k, v in data.items()
        if k not in ("name", "_target_", "label", *_TASK_KEYS) or k == "temperature"
    }


def judge_selector(factory: Any, options: Mapping[str, Any], judge: Judge) -> Any:
    """Build a selector factory marked ``needs_judge`` with the judge and its config options."""
    return call_with_options(functools.partial(factory, judge), dict(options), "selector")
