"""Run options the preflight refuses because the run could not honour them: a budget that is not positive, a
dollar budget over a model nobody can price, a benchmark key the benchmark would ignore. Each refusal is one
line naming the option and the way out."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import yaml

from agents.budget import Budget, Ledger
from core.registry import OptionError

__all__ = [
    "BENCHMARK_KEYS",
    "benchmark_keys",
    "check_benchmark",
    "check_budget",
    "run_budget",
    "sample_limit",
]


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


def _check_limits(run: Mapping[str, Any]) -> None:
    usd, tokens = run.get("budget_usd"), run.get("budget_tokens")
    if tokens is not None:
        # 0 is allowed: a gate no call passes (a reselection uses it to make sure no agent is called).
        _at_least("budget_tokens", tokens, 0)
    if usd is not None:
        _positive("budget_usd", usd, float)


def run_budget(run: Mapping[str, Any], ledger: Ledger | None = None) -> Budget:
    """The run's one `agents.budget.Budget` from ``run.budget_tokens`` / ``run.budget_usd``.

    Args:
        run: The ``run`` config node.
        ledger: Where the spend is kept (None: this process; a worker process passes the run's shared one).

    Returns:
        The budget (without limits when neither key is set: it still counts what was spent).

    Raises:
        ValueError: A dollar budget that is not positive or a negative token budget.
    """
    _check_limits(run)
    usd, tokens = run.get("budget_usd"), run.get("budget_tokens")
    return Budget(
        int(tokens) if tokens is not None else None, float(usd) if usd is not None else None, ledger
    )


def _spenders(agent: Any, judge: Any) -> Iterator[Any]:
    """Everything of a run that makes priced calls: each member of a pool (and the reviser), the judge."""
    members = getattr(agent, "agents", None)
    yield from (members() if callable(members) else [agent])
    if judge is not None:
        yield judge


def check_budget(run: Mapping[str, Any], agent: Any, judge: Any = None) -> None:
    """Refuse budgets the run cannot enforce.

    A dollar budget needs a price per call. LiteLLM counts a call to a model missing from its price map
    (a typo, a local vLLM or Ollama model, a model newer than the map) as $0, so the budget would never be
    reached: refused unless the role's ``price`` gives the price, with ``run.budget_tokens`` as the other way.
    Every role is checked: each agent of a candidate pool, the reviser and the judge.

    Args:
        run: The ``run`` config node (``budget_usd``, ``budget_tokens``).
        agent: The built agent, or the `agents.roles.RoleAgent` of a pool (``priced`` False when its calls'
            cost is unknown; agents without the attribute make no priced calls).
        judge: The judge of a judge selector, or None.

    Raises:
        ValueError: A dollar budget that is not positive, a negative token budget, or ``budget_usd`` with
            an unpriced model.
    """
    _check_limits(run)
    usd = run.get("budget_usd")
    if usd is None:
        return
    for spender in _spenders(agent, judge):
        if getattr(spender, "priced", True):
            continue
        model = getattr(spender, "model", None) or "the agent's model"
        role = "judge" if spender is judge else "agent"
        raise ValueError(
            f"run.budget_usd={usd} cannot be enforced: LiteLLM has no price for {model}, so its calls would "
            f"count $0; give the price ({role}.price.input_per_mtok=... {role}.price.output_per_mtok=..., "
            "dollars per million tokens) or cap tokens instead (run.budget_tokens=...)"
        )


BENCHMARK_KEYS = frozenset(
    {"name", "suite", "root", "size", "samples", "seed", "cache_dir", "datasets", "shard", "source"}
)
"""Every key a benchmark config may hold (a custom ``benchmark`` node's are checked against these)."""


def benchmark_keys(name: Any) -> frozenset[str]:
    """The keys the benchmark named ``name`` takes: those its ``conf/benchmark/<name>.yaml`` defines, else
    `BENCHMARK_KEYS` (a benchmark node written by the user)."""
    from experiments._config_path import config_dir

    try:
        path = config_dir() / "benchmark" / f"{name}.yaml"
        data = yaml.safe_load(path.read_text(encoding="utf-8")) if isinstance(name, str) else None
    except (FileNotFoundError, OSError, yaml.YAMLError):
        data = None
    return frozenset(str(k) for k in data) if isinstance(data, dict) else BENCHMARK_KEYS


def check_benchmark(benchmark: Mapping[str, Any]) -> None:
    """Refuse a ``benchmark`` key the benchmark does not read (``+benchmark.size=full`` on ``benchmark=dir``,
    a typo): Hydra accepts any ``+key`` and the run would silently ignore it. Also checks
    ``benchmark.samples``.

    Raises:
        OptionError: An unknown key (the message names it and the valid ones).
        ValueError: A ``benchmark.samples`` that is not a whole number >= 1.
    """
    name = benchmark.get("name")
    valid = benchmark_keys(name)
    unknown = sorted(str(k) for k in benchmark if str(k) not in valid)
    if unknown:
        shown = ", ".join(f"benchmark.{k}" for k in unknown)
        raise OptionError(
            f"{shown}: not a key of benchmark={name} (it would be ignored); valid: {', '.join(sorted(valid))}"
        )
    sample_limit(benchmark.get("samples"))  # refused here, before any folder


def sample_limit(value: Any) -> int | None:
    """``benchmark.samples`` checked: a whole number >= 1, or None (every sample).

    Raises:
        ValueError: Anything else (``0`` would run nothing; ``"two"`` is a typo).
    """
    if value is None:
        return None
    return whole_number(
        value, f"benchmark.samples={value!r}: expected a whole number >= 1 (samples per dataset)"
    )


def whole_number(value: Any, error: str) -> int:
    """``value`` as a whole number >= 1: an int (not a bool) or a string of digits.

    Raises:
        ValueError: ``error``, for anything else.
    """
    number = value if isinstance(value, int) and not isinstance(value, bool) else None
    if number is None and isinstance(value, str) and value.strip().isdigit():
        number = int(value)
    if number is None or number < 1:
        raise ValueError(error)
    return number
