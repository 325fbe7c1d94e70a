"""Reselect: run S3/S4 selection again over the candidates stored in a finished run, with no agent call.

    medstrat reselect RUN [strategy=s3|s4] [selector=NAME] [validator=NAME] [key=value ...]
                                       [hydra.run.dir=OUT]

The source run's composed config (``run.json``) is the starting point; ``strategy=``, ``selector=`` and
``validator=`` swap a whole config group (as on the runner's command line), any other ``key=value`` sets one
key. The new run folder has the layout of every run (``metrics*.json``, ``samples.jsonl``, ``usage.json``,
``export/``, ``report.html``); its ``candidates`` is a symlink to the source's, and ``run.json`` records the
source run under ``"reselect"``.

How "no agent call" is guaranteed: the strategy runs through the ordinary runner with resume on, so every
candidate with a done-marker is read back instead of generated; the agent is `ReplayAgent` (which refuses to
work) and the run's token budget is 0, so a candidate missing from the source is never generated: the run is
then INCOMPLETE (exit 3). Since the strategy code is the one a fresh run executes, a deterministic agent gives
exactly the metrics of a fresh run with the same options.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from core.atomic import atomic_write_json
from core.cli_errors import EXIT_INCOMPLETE, EXIT_NOTHING, EXIT_OK, CliError, cli_main, existing_dir
from experiments._config_path import config_dir
from experiments.stored.run_folder import RUN_INFO, USAGE, run_file, run_info

if TYPE_CHECKING:
    from omegaconf import DictConfig

    from agents.base import Candidate, Feedback, Task

# The config, strategy and runner modules are imported where they are used, not here: importing this module
# must stay cheap, so that the CLI can set up the collector (`GC_THRESHOLDS`) before the bulk of the imports.

__all__ = ["ReplayAgent", "ReselectError", "load_source_config", "main", "reselect"]

log = logging.getLogger(__name__)

GROUPS = ("strategy", "selector", "validator")


class ReselectError(ValueError):
    """The source run or the overrides cannot be reselected (one line for the user)."""


class ReplayAgent:
    """The agent of a reselect run: it never produces anything (candidates come from the source's markers).

    Reaching `generate` or `revise` would be a bug of the resume path; they count the attempt and raise, so a
    test or the CLI sees it instead of a silently empty candidate.

    Args:
        **_config: The source agent's constructor keys (ignored; accepted so any agent node builds it).
    """

    name = "replay"
    attempts = 0
    """Calls attempted by any instance since the last `reselect` started (the runner builds its own)."""

    def __init__(self, **_config: Any) -> None:
        pass

    async def generate(self, task: Task) -> Candidate:
        """Refuse: a reselect run makes no agent call."""
        ReplayAgent.attempts += 1
        raise RuntimeError(f"reselect made an agent call for {task.name} (candidate missing from the source)")

    async def revise(
        self, task: Task, candidate: Candidate, feedback: Feedback | str, editable_fields: Sequence[str]
    ) -> Candidate:
        """Refuse: a reselect run makes no agent call."""
        ReplayAgent.attempts += 1
        raise RuntimeError(f"reselect made an agent call (revise) for {task.name}")


@dataclass
class ReselectOutcome:
    """What `reselect` produced.

    Attributes:
        run_dir: The new run folder.
        source: The source run folder.
        metrics: ``{"official": ..., "strict": ...}`` as written.
        incomplete: A candidate was missing from the source (or a dataset failed).
        empty: No dataset kept any sample.
        table: The terminal table.
        reused: Candidates read back from the source.
        agent_calls: Agent calls made (0 unless the resume path is broken).
    """

    run_dir: Path
    source: Path
    metrics: dict[str, dict[str, Any]]
    incomplete: bool
    empty: bool
    table: str
    reused: int
    agent_calls: int


def _group_node(group: str, name: str) -> dict[str, Any]:
    import yaml

    path = config_dir() / group / f"{name}.yaml"
    if group == "validator" and name.endswith((".yaml", ".yml")):
        path = Path(name).expanduser()  # a profile file (e.g. a fitted one), as `validator=<file>` of a run
        if not path.is_file():
            raise ReselectError(f"validator={name}: no such profile file")
    if not path.is_file():
        valid = sorted(p.stem for p in (config_dir() / group).glob("*.yaml"))
        raise ReselectError(f"unknown {group} {name!r}; valid {group}s: {', '.join(valid)}")
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    if not isinstance(data, dict):
        raise ReselectError(f"{path} is not a mapping")
    return data


def load_source_config(source: Path) -> dict[str, Any]:
    """The composed config of a finished run (``run.json``), checked to hold stored candidates.

    Args:
        source: The run folder.

    Returns:
        The config as a plain dict.

    Raises:
        ReselectError: Not a finished run folder, or it has no candidates.
    """
    if not source.is_dir():
        raise ReselectError(f"{source} is not a run folder")
    info_path = source / RUN_INFO
    try:
        info = run_info(source)
        config = info["config"]
    except FileNotFoundError as exc:
        raise ReselectError(f"{info_path} is missing: {source} is not a finished run folder") from exc
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ReselectError(f"{info_path} is unreadable ({exc})") from exc
    if not isinstance(config, dict):
        raise ReselectError(f"{info_path} holds no config")
    if not (source / "candidates").is_dir() or not any((source / "candidates").iterdir()):
        raise ReselectError(f"{source}/candidates holds no stored candidates")
    return config


def _apply(config: dict[str, Any], overrides: Sequence[str]) -> tuple[DictConfig, Path | None]:
    """Source config + overrides → the reselect config and the requested output folder."""
    from omegaconf import DictConfig, OmegaConf

    from core.registry import UnknownNameError
    from experiments.run.plan import strategy_kind
    from strategies.base import strategies

    cfg = OmegaConf.create(config)
    out: Path | None = None
    old_strategy = dict(config.get("strategy") or {})
    dotlist: list[str] = []
    for item in overrides:
        key, sep, value = item.partition("=")
        key = key.lstrip("+")
        if not sep or not key:
            raise ReselectError(f"override {item!r} is not key=value")
        if key == "hydra.run.dir":
            out = Path(value).expanduser()
        elif key in GROUPS:
            node = _group_node(key, value)
            if key == "strategy" and "n" in node and "n" in old_strategy:
                node["n"] = old_strategy["n"]  # the source made that many candidates; more cannot be made
            cfg[key] = node
            if key == "selector" and OmegaConf.select(cfg, "strategy.selector") is not None:
                cfg.strategy.selector = {"_target_": None}  # the group is asked for: it must win
            if key == "strategy" and str(cfg.run.get("name")) == str(old_strategy.get("name")):
                cfg.run.name = node.get("name", value)
        elif key.startswith("hydra."):
            raise ReselectError(f"only hydra.run.dir is understood here, not {key}")
        else:
            dotlist.append(f"{key}={value}")
    if dotlist:
        try:
            merged = OmegaConf.merge(cfg, OmegaConf.from_dotlist(dotlist))
        except Exception as exc:  # OmegaConf's parse errors have several types; all are bad input
            raise ReselectError(f"bad override: {exc}") from exc
        assert isinstance(merged, DictConfig)  # merging into a mapping gives a mapping
        cfg = merged
    kind = strategy_kind(cfg.strategy)
    try:
        # `meta` finds a built-in name without scanning the installed packages' entry points (``in`` scans).
        reselectable = bool(strategies.meta(kind).get("reselectable"))
    except UnknownNameError:
        reselectable = False
    if not reselectable:
        valid = ", ".join(strategies.names_where(reselectable=True))
        raise ReselectError(
            f"strategy {cfg.strategy.get('name')!r} cannot be reselected: only strategies that select "
            f"among stored generations can ({valid})"
        )
    return cfg, out


def _link_candidates(source: Path, run_dir: Path) -> None:
    link = run_dir / "candidates"
    target = (source / "candidates").resolve()
    if link.is_symlink() and Path(os.path.realpath(link)) == target:
        return
    if link.exists() or link.is_symlink():
        raise ReselectError(f"{link} already exists; reselect into a new folder")
    os.symlink(target, link, target_is_directory=True)


def reselect(
    source: str | Path, overrides: Sequence[str] = (), run_dir: str | Path | None = None
) -> ReselectOutcome:
    """Run selection again over the candidates of ``source`` and write a new run folder.

    Args:
        source: A finished S3/S4 run folder.
        overrides: ``strategy=``, ``selector=``, ``validator=`` (whole groups) and ``key=value`` settings;
            ``hydra.run.dir=OUT`` names the output folder.
        run_dir: The output folder (wins over ``hydra.run.dir``); default
            ``outputs/<date>/<time>_reselect_<strategy>_<selector>``.

    Returns:
        The outcome.

    Raises:
        ReselectError: Bad source, bad override, or an output folder that already holds a run.
        UnknownNameError: An unknown selector/strategy name in a ``_target_``-free config.
    """
    from omegaconf import OmegaConf

    from experiments.run.experiment import run_experiment

    source = Path(source)
    cfg, out = _apply(load_source_config(source), overrides)
    if run_dir is not None:
        out = Path(run_dir)
    if out is None:
        sel = OmegaConf.select(cfg, "selector.name") or "custom"
        out = Path("outputs") / time.strftime("%Y-%m-%d/%H-%M-%S") / f"reselect_{cfg.strategy.name}_{sel}"
    if out.resolve() == source.resolve():
        raise ReselectError("the output folder must differ from the source run")
    if (out / "metrics.json").exists() or (out / "run.json").exists():
        raise ReselectError(f"{out} already holds a run; reselect into a new folder")
    source_agent = OmegaConf.to_container(cfg.agent, resolve=True)
    want_report = bool(cfg.run.get("report", True))
    cfg.agent = {
        **{k: v for k, v in dict(source_agent).items() if k in ("temperature", "limits", "options")},  # type: ignore[arg-type]
        "_target_": "experiments.selection.reselect.ReplayAgent",
    }
    cfg.run.resume = True
    cfg.run.budget_tokens = 0  # nothing new may be generated: a missing candidate leaves the run incomplete
    cfg.run.budget_usd = None
    cfg.run.report = False  # written below, once run.json names the source
    out.mkdir(parents=True, exist_ok=True)
    _link_candidates(source, out)
    ReplayAgent.attempts = 0
    outcome = run_experiment(cfg, out, preload=False, store_outputs=True)
    calls = ReplayAgent.attempts
    usage = run_file(out, USAGE)
    reused = int(usage.get("candidates", 0))
    info = run_info(out)
    info["config"]["agent"] = source_agent
    info["config"]["run"]["budget_tokens"] = None
    info["reselect"] = {
        "source_run": str(source.resolve()),
        "overrides": list(overrides),
        "agent_calls": calls,
        "reused_candidates": reused,
    }
    atomic_write_json(out / "run.json", info)
    usage["reselect"] = {
        "source_run": str(source.resolve()),
        "agent_calls": calls,
        "spent_tokens": usage["budget"]["spent_tokens"],
    }
    usage["budget"]["max_tokens"] = None  # the 0-token gate is the mechanism, not a user budget
    atomic_write_json(out / "usage.json", usage)
    if want_report:
        from experiments.report import write_report

        write_report(out)
    from experiments.tracking.record import record_reselection

    record_reselection(cfg.get("tracking"), out, source)  # beside the source's MLflow run, when tracked
    empty = not any(doc.get("datasets") for doc in outcome.metrics.values())
    return ReselectOutcome(
        out, source, outcome.metrics, outcome.incomplete, empty, outcome.table, reused, calls
    )


PROG = "medstrat reselect"

GC_THRESHOLDS = (10_000, 20, 50)
"""The collector's thresholds in the CLI (Python's defaults: 700, 10, 10). A reselection is a short process
whose allocations are nearly all long-lived (modules, the config, the stored reports, the scores) and hold few
reference cycles; with the defaults the collector walks that growing heap again and again, ~0.15 s of the
~1.8 s of CPU a reselection of the bundled S3 run takes. Rarer collections still free what cycles there
are."""


@cli_main(PROG)
def main(argv: Sequence[str] | None = None) -> int:
    """CLI: ``medstrat reselect RUN [overrides...]``; returns the exit code (``docs/cli.md``).

    0 success · 2 bad input · 3 incomplete (a candidate missing from the source) · 4 nothing selected.
    """
    from benchmark.errors import BenchmarkError
    from core.registry import UnknownNameError
    from experiments.run.experiment import NothingProduced
    from strategies.selectors import OracleNotAllowed

    args = [a for a in (sys.argv[1:] if argv is None else argv) if a != "--debug"]
    if not args or args[0] in ("-h", "--help"):
        print(__doc__.split("\n\n")[1].strip() if __doc__ else "")
        if not args:
            raise CliError("RUN is required: a finished S3/S4 run folder (see --help)")
        return EXIT_OK
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    source, overrides = existing_dir("RUN", args[0]), args[1:]
    try:
        result = reselect(source, overrides)
    except NothingProduced as exc:
        raise CliError(str(exc), EXIT_NOTHING) from exc
    except (
        ReselectError,
        UnknownNameError,
        OracleNotAllowed,
        BenchmarkError,
        ImportError,
        ValueError,
    ) as exc:
        raise CliError(str(exc)) from exc
    print(result.table)
    print(
        f"reselected {result.reused} stored candidates of {result.source}; agent calls: {result.agent_calls}",
        file=sys.stderr,
    )
    print(f"run folder: {result.run_dir}", file=sys.stderr)
    if result.empty:
        raise CliError("no sample was selected (the source's candidates wrote nothing)", EXIT_NOTHING)
    return EXIT_INCOMPLETE if result.incomplete else EXIT_OK


def _exit_now(code: int) -> NoReturn:
    """Leave the CLI at once: everything is written (atomically, files closed) and the streams are flushed.

    Tearing the interpreter down would free every module and object one by one (~0.09 s of a reselection's
    ~1.6 s of CPU) for nothing: the process is about to end. Only for the ``__main__`` entry point; a caller
    of `main` in Python keeps its interpreter.
    """
    logging.shutdown()  # flushes and closes every logging handler, as the exit would
    try:
        sys.stdout.flush()
    except OSError:  # a closed pipe, a full disk: the interpreter's own exit would give 120
        code = code or 120
    with contextlib.suppress(OSError):
        sys.stderr.flush()
    os._exit(code)


def command(argv: Sequence[str] | None = None) -> NoReturn:
    """``medstrat reselect``: `main` with the CLI's collector thresholds, then leave at once (`_exit_now`).

    Args:
        argv: The arguments after ``medstrat reselect``.
    """
    gc.set_threshold(*GC_THRESHOLDS)
    _exit_now(main(argv))
