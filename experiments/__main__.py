"""Entry point of ``python -m experiments`` (Hydra).

Example:
    python -m experiments strategy=s3                       # S3 on the bundled suite with the rules agent
    python -m experiments -m strategy=s0,s1,s2,s3,s4        # the ablation (tables and figure at the end)
    python -m experiments strategy=s3 selector=majority benchmark.datasets=[synth-fundus-npy]
    python -m experiments --cfg job                         # print the composed config
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from agents.base import FatalAgentError
from benchmark.errors import BenchmarkError, is_storage_failure
from experiments._config_path import config_dir
from experiments.suite import NoDatasetsError
from strategies.registry import UnknownNameError
from strategies.selectors import OracleNotAllowed

EXIT_USAGE = 2
EXIT_STORAGE = 4
EXIT_INCOMPLETE = 3
EXIT_NOTHING_USABLE = 4  # no candidate wrote a sample, or a failure every candidate shares stopped the run


@hydra.main(config_path=str(config_dir()), config_name="config", version_base="1.3")
def main(cfg: DictConfig) -> None:
    """Run one experiment described by ``cfg`` and print the eleven metrics (official and strict).

    Args:
        cfg: The composed Hydra configuration.
    """
    from experiments.run import run_experiment

    run_dir = Path(HydraConfig.get().runtime.output_dir)
    for handler in logging.getLogger().handlers:
        if isinstance(handler, logging.StreamHandler) and not isinstance(handler, logging.FileHandler):
            handler.setLevel(logging.WARNING)  # per-sample INFO goes to the run's log file, not the terminal
    try:
        outcome = run_experiment(cfg, run_dir)
    except (
        UnknownNameError,
        OracleNotAllowed,
        NoDatasetsError,
        BenchmarkError,
        ValueError,
        ImportError,
    ) as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(EXIT_USAGE)
    except FatalAgentError as exc:
        print(f"error: the run stopped: {exc.reason}", file=sys.stderr)
        sys.exit(EXIT_NOTHING_USABLE)
    except OSError as exc:
        if not is_storage_failure(exc):
            raise
        print(
            f"error: the run folder can no longer be written ({exc}); finished work in {run_dir} is intact "
            "and `run.resume=true` continues from it",
            file=sys.stderr,
        )
        sys.exit(EXIT_STORAGE)
    if outcome.nothing_usable is not None:
        # No table: a table of zeros would read like a result.
        print(f"error: {outcome.nothing_usable}; run folder: {run_dir}", file=sys.stderr)
        sys.exit(EXIT_NOTHING_USABLE)
    print(outcome.table)
    for name, error in outcome.errors.items():
        print(f"{name}: failed: {error}", file=sys.stderr)
    print(f"run folder: {run_dir}", file=sys.stderr)
    if outcome.incomplete and str(HydraConfig.get().mode) != "RunMode.MULTIRUN":
        sys.exit(EXIT_INCOMPLETE)


if __name__ == "__main__":
    main()
