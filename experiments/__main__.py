"""Entry point of ``python -m experiments`` (Hydra).

Example:
    python -m experiments strategy=s3                       # S3 on the bundled suite with the rules agent
    python -m experiments -m strategy=s0,s1,s2,s3,s4        # the ablation (tables and figure at the end)
    python -m experiments strategy=s3 selector=majority benchmark.datasets=[synth-fundus-npy]
    python -m experiments --cfg job                         # print the composed config

Every failure follows ``docs/cli.md``: one line on stderr and a documented exit code (2 bad input or config,
3 incomplete, 4 nothing usable, 130 interrupted); ``--debug`` or ``HYDRA_FULL_ERROR=1`` adds the traceback.
"""

from __future__ import annotations

import logging
import os
import shlex
import sys
import traceback
import warnings
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from core.cli_errors import (
    EXIT_INCOMPLETE,
    EXIT_INTERRUPTED,
    EXIT_NOTHING,
    EXIT_USAGE,
    CliError,
    debug_requested,
    one_line,
    report_error,
    report_interrupted,
    sigterm_stops,
)
from core.environment import check_environment
from experiments._config_path import config_dir
from experiments.callbacks import PreflightFailed
from experiments.help import fast_help

PROG = "python -m experiments"
EXIT_STORAGE = EXIT_NOTHING
_DEBUG_ENV = "MEDSTRAT_DEBUG"  # set by `cli()` so jobs (also joblib workers) know --debug was given


def _config_errors() -> tuple[type[Exception], ...]:
    """Failures of the user's config or input: one line, exit 2.

    Imported here, not at module level: ``--help`` and Hydra's own config errors never need the strategies,
    the benchmark or the agents (their imports are most of the start-up time; docs/performance.md).
    """
    from benchmark.errors import BenchmarkError
    from core.registry import UnknownNameError
    from experiments.run.lock import RunFolderBusy
    from experiments.run.suite import NoDatasetsError
    from strategies.selectors import OracleNotAllowed

    return (
        UnknownNameError,
        OracleNotAllowed,
        NoDatasetsError,
        BenchmarkError,
        RunFolderBusy,
        ValueError,
        ImportError,
    )


def _resume_hint(run_dir: Path) -> str:
    """The command that continues this run: the same overrides plus resume and the run folder."""
    keep = [
        o
        for o in HydraConfig.get().overrides.task
        if not o.startswith(("run.resume=", "hydra.run.dir=", "+run.resume=", "run.replace="))
    ]
    args = [*keep, "run.resume=true", f"hydra.run.dir={run_dir}"]
    return f"{PROG} {' '.join(shlex.quote(a) for a in args)}"


@hydra.main(config_path=str(config_dir()), config_name="config", version_base="1.3")
def main(cfg: DictConfig) -> None:
    """Run one experiment described by ``cfg`` and print the eleven metrics (official and strict).

    Args:
        cfg: The composed Hydra configuration.
    """
    if cfg.run.get("dry_run"):
        code = _dry_run(cfg)
        if code:  # a sweep's job that succeeds returns: SystemExit(0) would end the sweep
            sys.exit(code)
        return
    from agents.base import FatalAgentError
    from benchmark.errors import is_storage_failure
    from experiments.run.experiment import NothingProduced, run_experiment
    from experiments.run.processes import WorkerLost
    from experiments.run.results import METRIC_LEGEND
    from strategies.selectors import SelectorError

    config_errors = _config_errors()

    run_dir = Path(HydraConfig.get().runtime.output_dir)
    for handler in logging.getLogger().handlers:
        if isinstance(handler, logging.StreamHandler) and not isinstance(handler, logging.FileHandler):
            handler.setLevel(logging.WARNING)  # per-sample INFO goes to the run's log file, not the terminal
            # Hydra's console handler writes to stdout; warnings belong with the errors, so that stdout holds
            # only the results table (``python -m experiments ... > table.txt`` stays clean).
            handler.setStream(sys.stderr)
    debug = os.environ.get(_DEBUG_ENV) == "1"
    try:
        # Here too, not only in `cli`: a launcher's job process (submitit on SLURM, where `scancel` sends
        # SIGTERM and submitit's own handler would ignore it) runs this function without `cli`.
        with sigterm_stops(PROG):
            outcome = run_experiment(cfg, run_dir)
    except KeyboardInterrupt:  # Ctrl-C or SIGTERM
        report_interrupted(f"interrupted — resume with: {_resume_hint(run_dir)}")
        sys.exit(EXIT_INTERRUPTED)
    except WorkerLost as exc:
        # A worker of run.processes=N died (killed, out of memory); the others finished their datasets.
        print(
            f"{PROG}: error: {one_line(exc)}; finished work is kept — resume with: {_resume_hint(run_dir)}",
            file=sys.stderr,
        )
        sys.exit(EXIT_INCOMPLETE)
    except NothingProduced as exc:
        print(f"{PROG}: error: {one_line(exc)} (run folder: {run_dir})", file=sys.stderr)
        sys.exit(EXIT_NOTHING)
    except config_errors as exc:
        sys.exit(report_error(PROG, CliError(str(exc), EXIT_USAGE), debug=debug))
    except SelectorError as exc:
        # A plug-in raised: one line naming it, the sample and the exception; the traceback with --debug.
        if debug and exc.__cause__ is not None:
            traceback.print_exception(exc.__cause__)
        sys.exit(report_error(PROG, CliError(str(exc), EXIT_USAGE)))
    except FatalAgentError as exc:
        # Every candidate would fail alike (rejected key, unknown model, dead endpoint): the run stopped.
        print(f"{PROG}: error: the run stopped: {one_line(exc.reason)}", file=sys.stderr)
        sys.exit(EXIT_NOTHING)
    except OSError as exc:
        if not is_storage_failure(exc):
            sys.exit(report_error(PROG, exc, debug=debug))
        print(
            f"{PROG}: error: the run folder can no longer be written ({exc}); finished work in {run_dir} is "
            "intact and `run.resume=true` continues from it",
            file=sys.stderr,
        )
        sys.exit(EXIT_STORAGE)
    except Exception as exc:
        sys.exit(report_error(PROG, exc, debug=debug))
    print(outcome.table)
    print(METRIC_LEGEND, file=sys.stderr)
    for name, error in outcome.errors.items():
        print(f"{name}: failed: {error}", file=sys.stderr)
    headline = str(cfg.get("scorer", {}).get("profile", "official"))
    print(
        f"* = the headline profile (scorer.profile={headline}); official = the paper's scoring, "
        "strict = ours (docs/scoring.md); both are in metrics.json / metrics_strict.json",
        file=sys.stderr,
    )
    if (run_dir / "report.html").is_file():
        print(f"report: {run_dir / 'report.html'}", file=sys.stderr)
    print(f"run folder: {run_dir}", file=sys.stderr)
    if outcome.incomplete and str(HydraConfig.get().mode) != "RunMode.MULTIRUN":
        sys.exit(EXIT_INCOMPLETE)


def _dry_run(cfg: DictConfig) -> int:
    """``run.dry_run=true``: the forecast only (a sweep's jobs print theirs together at the sweep's end)."""
    from experiments.run.forecast import dry_run, format_forecast
    from experiments.run.plan import read_settings

    run_dir = Path(HydraConfig.get().runtime.output_dir)
    debug = os.environ.get(_DEBUG_ENV) == "1"
    try:
        doc = dry_run(read_settings(cfg), run_dir)
    except _config_errors() as exc:
        return report_error(PROG, CliError(str(exc), EXIT_USAGE), debug=debug)
    except KeyboardInterrupt:
        report_interrupted(f"{PROG}: interrupted")
        return EXIT_INTERRUPTED
    if str(HydraConfig.get().mode) == "RunMode.MULTIRUN":
        if doc["budget"].get("over"):
            print(f"{run_dir.name}: {doc['budget']['over']}", file=sys.stderr)
        return 0
    print(format_forecast(doc))
    print(f"forecast: {run_dir / 'forecast.json'} (no model was called)", file=sys.stderr)
    return 0


def _hydra_error(exc: Exception) -> str:
    """Hydra's multi-line composition message as one line (the config search path is noise here)."""
    text = str(exc).split("Config search path:")[0]
    if isinstance(exc.__cause__, Exception) and str(exc.__cause__) not in text:
        text += f"\n{exc.__cause__}"
    head, sep, options = text.partition("Available options in")
    if sep:  # "Could not find 'strategy/s9'" + one option per line -> "...; valid: s0, s1, ..."
        group, _, names = options.partition(":")
        return f"{one_line(head)}; valid choices of {group.strip()}: {', '.join(names.split())}"
    return one_line(text)


def cli() -> int:
    """Run Hydra's app under the CLI error policy (``docs/cli.md``) and return the exit code."""
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    debug = debug_requested()
    if "--debug" in sys.argv:
        sys.argv.remove("--debug")  # ours, not Hydra's
    os.environ[_DEBUG_ENV] = "1" if debug else "0"
    if not debug:
        # When a fatal provider error stops the run, the model calls still queued are cancelled before they
        # start, and Python warns that their coroutines were never awaited: noise around the one line.
        warnings.filterwarnings(
            "ignore", message=r"coroutine '.*' was never awaited", category=RuntimeWarning
        )
    # Hydra prints a multi-line report (and exits 1) unless HYDRA_FULL_ERROR is set, in which case it raises:
    # we set it so the exception reaches us and becomes one line (with the traceback only under --debug).
    os.environ["HYDRA_FULL_ERROR"] = "1"
    from experiments.validator_file import ValidatorFileError, rewrite_validator_file

    try:
        sys.argv[1:] = rewrite_validator_file(sys.argv[1:])
    except ValidatorFileError as exc:
        return report_error(PROG, CliError(str(exc), EXIT_USAGE))
    help_text = fast_help(sys.argv[1:], config_dir())
    if help_text is not None:
        print(help_text)  # as Hydra prints it
        return 0
    retired = next((a for a in sys.argv[1:] if a.lstrip("+~").startswith("strategy.profile=")), None)
    if retired is not None:
        # The paper's procedure is a strategy of its own now (docs/strategies.md), not a flag of S3/S4.
        return report_error(
            PROG,
            CliError(
                f"{retired}: the paper's procedure is strategy=s3_paper or strategy=s4_paper", EXIT_USAGE
            ),
        )
    try:
        check_environment()
        with sigterm_stops(PROG):
            main()
    except (HydraException, OmegaConfBaseException) as exc:
        return report_error(PROG, CliError(_hydra_error(exc), EXIT_USAGE), debug=debug)
    except PreflightFailed as exc:  # the config was refused before Hydra created the run folder
        if debug:
            traceback.print_exception(exc.error)
        return report_error(PROG, CliError(str(exc.error), EXIT_USAGE))
    except KeyboardInterrupt:
        report_interrupted(f"{PROG}: interrupted")
        return EXIT_INTERRUPTED
    except Exception as exc:
        return report_error(PROG, exc, debug=debug)
    return 0


if __name__ == "__main__":
    raise SystemExit(cli())
