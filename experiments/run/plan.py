"""Config → the run plan: the strategy (with its selector), the agent, the validator profile and what the run
expects, built once (`build_components`) and read by the run, its worker processes, resume and the reports.

Everything is looked up in a registry or imported from ``_target_``; nothing here branches on a strategy name.
This module (with `experiments.run.roles` and `experiments.run.options`, which it calls) is the only one of
`experiments.run` that reads the Hydra config: the rest of the run takes the plan and its `RunSettings`
(``tests/architecture/test_config_read_once.py``).
"""

from __future__ import annotations

import importlib
import inspect
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import yaml
from omegaconf import DictConfig, OmegaConf

from agents.base import Agent, Limits
from agents.budget import Budget, Ledger
from agents.judge import Judge
from core.registry import OptionError, Registry, call_with_options, load_object, options_signature
from experiments.run.options import run_budget, sample_limit, whole_number
from experiments.run.request_cache import resolve_cache
from experiments.run.roles import build_judge, build_roles, judge_selector
from strategies.base import Strategy, strategies
from strategies.selectors import Selector, build_selector, is_oracle, selectors

__all__ = [
    "AGENT_TASK_KEYS",
    "RunPlan",
    "RunSettings",
    "StrategyWork",
    "agents",
    "build_agent",
    "build_components",
    "build_from_plain",
    "build_strategy",
    "import_plugins",
    "is_simulation",
    "read_settings",
    "required_validator",
    "strategy_kind",
    "strategy_work",
    "task_options",
    "validator_profile",
]

log = logging.getLogger(__name__)

agents: Registry[Any] = Registry(
    "agent",
    entry_point_group="medstrat.agents",
    lazy={
        "rules": "agents.rules:RulesAgent",
        "litellm": "agents.llm.agent:LiteLLMAgent",
        "simulated": "testbed.simulated:SimulatedAgent",
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


def build_agent(
    cfg: Mapping[str, Any] | DictConfig, *, allow_simulated: bool = False, budget: Budget | None = None
) -> Agent:
    """Construct the agent: ``_target_`` when given, else the registry entry named ``name``.

    Args:
        cfg: The ``agent`` config node; keys other than `AGENT_TASK_KEYS` go to the constructor.
        allow_simulated: ``analysis.simulated``: whether an agent marked ``simulation`` (it reads ground
            truth, like the ``simulated`` agent) may run.
        budget: The run's budget, handed to an agent whose constructor takes ``budget`` (it then checks and
            charges it per model call; any other agent's candidates are charged by the runner).

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
        from testbed.simulated import SimulationNotAllowed

        raise SimulationNotAllowed(
            f"the {data.get('name') or target} agent is a simulation built from ground truth: enable it with "
            "analysis.simulated=true (its results are marked simulation, never a model result)"
        )
    kwargs = {k: v for k, v in data.items() if k not in AGENT_TASK_KEYS}
    if (
        "cache" in kwargs
    ):  # agent.cache=auto (the default): the user's cache folder (experiments.run.request_cache)
        kwargs["cache"] = resolve_cache(kwargs["cache"])
    params = options_signature(factory).parameters
    if "temperature" in params and "temperature" in data:
        kwargs["temperature"] = data["temperature"]
    if budget is not None and "budget" in params:
        kwargs["budget"] = budget
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


def build_strategy(cfg: Mapping[str, Any] | DictConfig, selector_cfg: Any = None) -> Strategy:
    """Construct the strategy: the factory named by ``kind`` called with the other keys.

    Args:
        cfg: The ``strategy`` node (``name``, ``kind``, factory options, optional ``selector._target_``).
        selector_cfg: The top-level ``selector`` node, used when ``strategy.selector._target_`` is unset.

    Returns:
        The strategy.

    Raises:
        UnknownNameError: An unknown strategy kind or selector name (the message lists the valid ones).
        OptionError: An option the strategy factory does not take, or a value it refuses (``n=0``).
        OracleNotAllowed: The oracle selector (``analysis.oracle`` is for a run: `build_components`).
    """
    data = dict(_plain(cfg))
    kind = strategy_kind(data)
    selector = None
    if "selector" in inspect.signature(strategies.get(kind)).parameters:
        spec = _selector_spec(data, selector_cfg)
        selector = build_selector(spec, on_error=_on_error(selector_cfg))
    return _create(kind, data, selector)


def _create(kind: str, data: Mapping[str, Any], selector: Selector | None) -> Strategy:
    # Through the registry: it checks the options against the factory and resolves the nested selector
    # (already built here, under the oracle gate; dropped for a strategy that takes none).
    options = {k: v for k, v in data.items() if k not in ("name", "kind", "selector", "pool")}
    # The registry's entries are factories; `create` returns what the factory makes (a strategy).
    return cast(Strategy, strategies.create(kind, {**options, "selector": selector}, "strategy"))


def _on_error(selector_cfg: Any) -> str | None:
    # selector.on_error (the top-level group) applies to a strategy.selector given by name or _target_ too.
    group = _plain(selector_cfg) if selector_cfg is not None else None
    return group.get("on_error") if isinstance(group, Mapping) else None


def strategy_kind(cfg: Mapping[str, Any] | DictConfig) -> str:
    """The registry name of the configured strategy (``kind``, else ``name``)."""
    data = dict(_plain(cfg))
    return str(data.get("kind") or data.get("name"))


def required_validator(strategy_cfg: Mapping[str, Any] | DictConfig) -> str | None:
    """The validator profile the strategy's procedure requires (its registry metadata), if any."""
    value = strategies.meta(strategy_kind(strategy_cfg)).get("validator")
    return str(value) if value is not None else None


def validator_profile(
    cfg: Mapping[str, Any] | DictConfig, folder: Path, required: str | None = None
) -> str | Path:
    """The profile the run validates with: the composed ``validator`` node written to
    ``folder/<profile>.yaml`` (so command-line weight overrides apply), or the profile the strategy
    requires (``mdsbench`` for the paper's procedure, `required_validator`) as it ships."""
    data = dict(_plain(cfg))
    name = str(data.get("profile", "evidence"))
    if required is not None:
        if name != required:
            log.warning(
                "the strategy runs the reference procedure: validating with the %s profile instead of %s",
                required,
                name,
            )
        return required
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


@dataclass(frozen=True)
class RunSettings:
    """What the run reads of its config besides the plan's objects, taken once by the plan builder.

    The nodes are plain data (resolved, no `DictConfig`): the run hands them to the helpers that take a whole
    node (the budget, the CPU executor, the suite, the task options, the validator profile file).

    Attributes:
        config: The composed config without Hydra's node, resolved: ``config.json`` (the resume check),
            ``run.json``, and what each worker process rebuilds its plan from.
        run: The ``run`` node.
        benchmark: The ``benchmark`` node.
        agent: The ``agent`` node.
        validator: The ``validator`` node.
        headline: ``scorer.profile``: the metrics file the terminal table shows.
    """

    config: Mapping[str, Any]
    run: Mapping[str, Any]
    benchmark: Mapping[str, Any]
    agent: Mapping[str, Any]
    validator: Mapping[str, Any]
    headline: str

    @property
    def name(self) -> str:
        """``run.name``: the model name the export and the scorer record."""
        return str(self.run["name"])

    @property
    def seed(self) -> int:
        """``run.seed``."""
        return int(self.run["seed"])

    @property
    def concurrency(self) -> int:
        """``run.concurrency``: model calls in flight.

        Raises:
            ValueError: Not a whole number >= 1 (``0`` would start nothing and wait forever).
        """
        value = self.run["concurrency"]
        return whole_number(
            value, f"run.concurrency={value!r}: expected a whole number >= 1 (model calls in flight)"
        )

    @property
    def processes(self) -> Any:
        """``run.processes`` as configured (`experiments.run.processes.resolve_processes` reads it)."""
        return self.run.get("processes")

    @property
    def progress(self) -> bool:
        """``run.progress``."""
        return bool(self.run.get("progress", True))

    @property
    def report(self) -> bool:
        """``run.report``: write ``report.html`` at the end."""
        return bool(self.run.get("report", True))

    @property
    def agent_name(self) -> str:
        """The agent as the run's title names it (``_target_``, else ``name``)."""
        return str(self.agent.get("_target_") or self.agent.get("name", "?"))

    @property
    def instructions(self) -> Any:
        """``agent.instructions``: the instruction files of each stage (`agents.instructions`)."""
        return self.agent.get("instructions")

    @property
    def samples(self) -> int | None:
        """``benchmark.samples``: the first N manifest entries of each dataset (None: every entry; a bad value
        raises `ValueError`, `experiments.run.options.sample_limit`)."""
        return sample_limit(self.benchmark.get("samples"))

    @property
    def fitted(self) -> Any:
        """``validator.fitted``: how the profile's weights were learned from ground truth (None: hand-set)."""
        return self.validator.get("fitted")


def read_settings(cfg: DictConfig) -> RunSettings:
    """The run's `RunSettings` from the composed config (plain data; nothing is checked here)."""
    config = OmegaConf.to_container(
        OmegaConf.masked_copy(cfg, [str(k) for k in cfg if k != "hydra"]), resolve=True
    )
    assert isinstance(config, dict)
    plain = {str(k): v for k, v in config.items()}

    def node(key: str) -> Mapping[str, Any]:
        value = plain.get(key)
        return value if isinstance(value, dict) else {}

    headline = str(node("scorer").get("profile", "official"))
    return RunSettings(plain, node("run"), node("benchmark"), node("agent"), node("validator"), headline)


@dataclass(frozen=True)
class RunPlan:
    """What a run does, resolved from the config once.

    Attributes:
        strategy: The strategy, built with its selector.
        agent: The agent the strategy is given: the ``agent`` config's, or a `agents.roles.RoleAgent` over the
            candidate pool (``strategy.pool``) and the reviser (``reviser``).
        selector: The selector handed to the strategy (None: the strategy takes none).
        name: The strategy's config name (``s3``, ``s3_paper``): the run's label.
        kind: Its registry name (``best_of_n``).
        validator: The validator profile the strategy's procedure requires (None: the configured one).
        candidates: Candidates per dataset the strategy is configured for (``n``; None when it has no ``n``).
        upper_bound: The oracle selector was asked for (``analysis.oracle``): results are an upper bound.
        label: ``<strategy>/<selector>`` for strategies that select, else the strategy name (miss tables).
        metrics: Registered metrics scored after the eleven (``scorer.metrics``), checked to exist.
        pool: ``(agent label, n)`` per candidate pool entry (empty: the agent makes every candidate).
        reviser: The reviser's label (None: a candidate's maker revises it).
        judge: The judge of a judge selector (None: the selector needs none).
        budget: The run's one budget, already handed to every agent and judge that takes one (the runner
            checks it before each agent call and charges the candidates of the others).
        settings: What the run reads of its config besides these objects (`RunSettings`).
    """

    strategy: Strategy
    agent: Agent
    budget: Budget
    selector: Selector | None
    name: str
    kind: str
    validator: str | None
    candidates: int | None
    upper_bound: bool
    label: str
    settings: RunSettings
    pool: tuple[tuple[str, int], ...] = ()
    reviser: str | None = None
    judge: Judge | None = None
    metrics: tuple[str, ...] = ()


def _refuse_ignored_selector(kind: str, name: str, spec: Any) -> None:
    """Refuse a selector for a strategy that makes candidates but chooses by its own procedure (the paper's
    S3/S4, SPEC §4): run anyway, a judge or another selector asked for would silently not choose anything."""
    if not strategies.meta(kind).get("candidates"):
        return  # S0-S2 have nothing to select among: a sweep's selector simply does not apply to them
    named = spec if isinstance(spec, str) else None
    if isinstance(spec, Mapping):
        named = spec.get("_target_") or spec.get("name")
    if named is None or str(named) == "validator_max":
        return  # the default: the procedure's own validator-based choice is what runs
    raise OptionError(
        f"strategy {name} takes no selector (its reference procedure chooses each sample, SPEC §4): "
        f"selector={named} would be ignored; use strategy=s3 or s4 with selector={named}, or leave "
        "selector unset"
    )


def _label(name: str, takes_selector: bool, data: Mapping[str, Any], selector_cfg: Any) -> str:
    if not takes_selector:
        return name
    sel = data.get("selector") or {}
    target = sel.get("_target_") if isinstance(sel, Mapping) else sel
    group = _plain(selector_cfg) or {}
    chosen = target or group.get("name") or group.get("_target_")
    return f"{name}/{str(chosen or 'validator_max').rsplit('.', 1)[-1]}"


def _extra_metrics(cfg: DictConfig) -> tuple[str, ...]:
    """``scorer.metrics``, checked against the metric registry (after ``run.imports`` registered theirs)."""
    names = [str(n) for n in (cfg.get("scorer", {}).get("metrics") or ())]
    if not names:
        return ()  # the scorer's modules are not imported for a plan that names no extra metric
    from benchmark.score.metrics import check_names

    return check_names(names)


def build_components(
    cfg: DictConfig, ledger: Ledger | None = None, settings: RunSettings | None = None
) -> RunPlan:
    """The run's plug-ins imported, then its plan: the strategy (with its selector, built once), the agent.

    Also what each worker process of ``run.processes=N`` calls: the objects are rebuilt there from the
    config, never sent between processes.

    Args:
        cfg: The composed config.
        ledger: Where the budget keeps its spend (None: this process; a worker passes the run's shared one).
        settings: The settings already read from ``cfg`` (`read_settings`; None: read here).

    Returns:
        The plan.

    Raises:
        UnknownNameError: An unknown strategy, selector or agent name.
        OptionError: An option a factory does not take or refuses.
        OracleNotAllowed: The oracle selector without ``analysis.oracle=true``.
        ValueError: A budget limit that is negative (or a dollar budget that is not positive).
    """
    import_plugins(cfg.run.get("imports"))
    budget = run_budget(cfg.run, ledger)
    allow_oracle = bool(cfg.get("analysis", {}).get("oracle", False))
    data = dict(_plain(cfg.strategy))
    kind = strategy_kind(data)
    factory = strategies.get(kind)
    takes_selector = "selector" in inspect.signature(factory).parameters
    spec = _selector_spec(data, cfg.get("selector"))
    selector: Selector | None = None
    judge: Judge | None = None
    if takes_selector:
        selector, judge = _selector_with_roles(
            spec, cfg, allow_oracle, _on_error(cfg.get("selector")), budget
        )
        probe: Selector | None = selector
    else:
        _refuse_ignored_selector(kind, str(data.get("name") or kind), spec)
        # A strategy without a selector still records an oracle request as an upper bound, as before.
        try:
            probe = build_selector(spec, allow_oracle=True)
        except Exception:
            probe = None
    pool = data.get("pool") or None
    if pool is not None:
        if "n" not in inspect.signature(factory).parameters:
            raise OptionError(
                f"strategy.pool: {kind} makes no candidate pool (S3/S4 and strategies with n do)"
            )
        # The pool says how many candidates each agent makes; n is their sum.
        data["n"] = sum(int(e.get("n", 1)) for e in pool if isinstance(e, Mapping))
    strategy = _create(kind, data, selector)
    roles = build_roles(
        cfg.agent,
        pool,
        cfg.get("reviser"),
        build_agent=build_agent,
        allow_simulated=bool(cfg.get("analysis", {}).get("simulated", False)),
        budget=budget,
    )
    agent = roles.agent
    n = data.get("n")
    name = str(data.get("name") or kind)
    return RunPlan(
        strategy=strategy,
        agent=agent,
        budget=budget,
        selector=selector,
        name=name,
        kind=kind,
        validator=required_validator(data),
        candidates=int(n) if n is not None else None,
        upper_bound=allow_oracle and probe is not None and is_oracle(probe),
        label=_label(name, takes_selector, data, cfg.get("selector")),
        pool=roles.pool,
        reviser=roles.reviser,
        judge=judge,
        metrics=_extra_metrics(cfg),
        settings=settings if settings is not None else read_settings(cfg),
    )


@dataclass(frozen=True)
class StrategyWork:
    """What the forecast (`experiments.run.forecast`) needs of the plan, read without building it (no agent,
    so no key; no selector, so no judge).

    Attributes:
        name: The strategy's config name (the run's label).
        kind: Its registry name.
        generations: ``generate`` calls per dataset, ``(low, high)``.
        revisions: ``revise`` calls per dataset, ``(low, high)``.
        declared: False when the strategy's registry entry declares no ``generations`` (then ``n``, else 1,
            candidates and no revision are assumed).
        reviser: The ``reviser`` node (None: the maker revises).
        pooled: A candidate pool (``strategy.pool``) makes the candidates.
        early_stop: ``strategy.early_stop_at`` is set (fewer candidates may be made).
        judged: A judge role is configured or the selector is a judge selector.
        plans: Plans the strategy asks each candidate's plan step for (1: the agent's ``agent.plans``).
    """

    name: str
    kind: str
    generations: tuple[int, int]
    revisions: tuple[int, int]
    declared: bool
    reviser: Mapping[str, Any] | None
    pooled: bool
    early_stop: bool
    judged: bool
    plans: int = 1


def strategy_work(settings: RunSettings) -> StrategyWork:
    """The agent work per dataset the configured strategy declares (`strategies.base.agent_work`).

    Args:
        settings: The run's settings.

    Returns:
        The work.

    Raises:
        UnknownNameError: An unknown strategy.
    """
    from strategies.base import agent_plans, agent_work

    config = settings.config
    strategy = dict(config.get("strategy") or {})
    kind = strategy_kind(strategy)
    options = {k: v for k, v in strategy.items() if k not in ("name", "kind", "selector", "pool")}
    pool = strategy.get("pool") or None
    if pool:
        options["n"] = sum(int(e.get("n", 1)) for e in pool if isinstance(e, Mapping))
    declared = agent_work(kind, options)
    n = int(options.get("n", 1))
    work = declared if declared is not None else ((n, n), (0, 0))
    named = (config.get("selector") or {}).get("name")
    judged = bool(config.get("judge")) or bool(
        named and getattr(selectors.get(str(named)), "needs_judge", False)
    )
    reviser = config.get("reviser")
    return StrategyWork(
        name=str(strategy.get("name") or kind),
        kind=kind,
        generations=work[0],
        revisions=work[1],
        declared=declared is not None,
        reviser=reviser if isinstance(reviser, Mapping) else None,
        pooled=bool(pool),
        early_stop=strategy.get("early_stop_at") is not None,
        judged=judged,
        plans=agent_plans(kind, options),
    )


def build_from_plain(config: Mapping[str, Any], ledger: Ledger | None = None) -> RunPlan:
    """`build_components` over a config sent as plain data (`RunSettings.config`): a worker process's plan."""
    return build_components(OmegaConf.create(dict(config)), ledger)


def _selector_with_roles(
    spec: Any, cfg: DictConfig, allow_oracle: bool, on_error: str | None, budget: Budget
) -> tuple[Selector, Judge | None]:
    """The selector (with its ``on_error`` policy); one whose factory is marked ``needs_judge`` gets the judge
    role built from the config."""
    if isinstance(spec, str):
        found: Any = selectors.get(spec)
        options: dict[str, Any] = {}
    elif isinstance(spec, Mapping):
        options = {k: v for k, v in spec.items() if k not in ("_target_", "name")}
        target = spec.get("_target_")
        found = (
            load_object(str(target)) if target else selectors.get(str(spec.get("name") or "validator_max"))
        )
    else:
        found = None
    if not getattr(found, "needs_judge", False):
        return build_selector(spec, allow_oracle=allow_oracle, on_error=on_error), None
    judge = build_judge(cfg.get("judge"), cfg.agent, budget)
    return judge_selector(found, options, judge), judge
