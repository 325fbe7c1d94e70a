"""Hydra callbacks: at the end of a sweep (``-m strategy=s0,s1,s2,s3,s4``) write the ablation."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig

__all__ = ["AblationCallback"]

log = logging.getLogger(__name__)


class AblationCallback(Callback):
    """Runs `experiments.ablation.write_ablation` on the sweep folder once every job has finished."""

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        """Write ``ablation.{md,csv,tex,png}`` into the sweep folder (a failure is logged, never raised).

        Args:
            config: The sweep's config (``hydra.sweep.dir`` is read).
            **kwargs: Unused (Hydra's signature).
        """
        from experiments.ablation import write_ablation

        sweep_dir = Path(str(config.hydra.sweep.dir))
        try:
            written = write_ablation(sweep_dir)
        except Exception:  # the runs are done and saved; a table bug must not turn the sweep into a failure
            log.exception("could not write the ablation tables for %s", sweep_dir)
            return
        print(f"ablation: {', '.join(str(p) for p in written)}")
