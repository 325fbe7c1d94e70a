"""Where the Hydra configs live, whether we run from the source tree, an editable install or a wheel."""

from __future__ import annotations

import importlib.util
from pathlib import Path


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
