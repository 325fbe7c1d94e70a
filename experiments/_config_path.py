"""Where the Hydra configs live (source tree, editable install or wheel), and composing one in-process."""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from omegaconf import DictConfig


def config_dir() -> Path:
    """Return the absolute path of the folder that holds ``config.yaml``.

    A wheel ships ``conf/`` as the package ``experiments.conf``; an editable install maps that package onto
    the repository's ``conf/``; a plain source checkout has neither, so we fall back to ``<repo>/conf``.

    Returns:
        The folder containing ``config.yaml``.

    Raises:
        FileNotFoundError: If no candidate folder holds ``config.yaml``.
    """
    candidates: list[Path] = []
    spec = importlib.util.find_spec("experiments.conf")
    if spec is not None and spec.submodule_search_locations:
        candidates.extend(Path(p) for p in spec.submodule_search_locations)
    candidates.append(Path(__file__).resolve().parent.parent / "conf")
    for folder in candidates:
        if (folder / "config.yaml").is_file():
            return folder.resolve()
    looked = ", ".join(str(c) for c in candidates)
    raise FileNotFoundError(f"config.yaml not found; looked in: {looked}")


def compose_config(overrides: Sequence[str] = ()) -> DictConfig:
    """Compose ``config.yaml`` with Hydra overrides, as ``python -m experiments`` would, without running it.

    Tests and perf drivers use this to build a run configuration in-process.

    Args:
        overrides: Hydra override strings (``"strategy=s3"``, ``"+agent.api_key=..."``).

    Returns:
        The composed configuration.

    Raises:
        FileNotFoundError: If no folder holds ``config.yaml``.
    """
    # Imported here so that `import experiments` stays cheap for callers that never compose.
    from hydra import compose, initialize_config_dir

    from experiments.validator_file import rewrite_validator_file

    with initialize_config_dir(config_dir=str(config_dir()), version_base="1.3"):
        return compose("config", overrides=rewrite_validator_file(overrides))
