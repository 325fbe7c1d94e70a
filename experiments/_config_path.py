"""Where the Hydra configs live (source tree, editable install or wheel), and composing one in-process."""

from __future__ import annotations

import copy
import importlib.util
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from omegaconf import DictConfig

_COMPOSED: dict[tuple[object, ...], DictConfig] = {}
"""Configs `compose_config` has composed in this process, by what decides them (`_compose_key`)."""

_COMPOSED_MAX = 256
"""Kept compositions at most (a few tens of kB each); past it the store starts empty again."""


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

    A second call with the same overrides, while the config files and ``sys.path`` are unchanged, returns a
    copy of the first result instead of composing again (Hydra reads and merges every YAML file each time,
    ~70 ms; a copy takes ~2 ms). Overrides that add a search path are composed every time: the files there
    are not watched.

    Calls that differ only in plain values (``benchmark.root=/tmp/a`` against ``/tmp/b``: a key with a dot,
    not under ``hydra``, not a config group, a single value that is not a mapping, no ``+``/``~``/``@``)
    reuse the composition of their other overrides and set those values the way Hydra applies a value
    override after composing (``OmegaConf.update(cfg, key, value, merge=True)`` in struct mode, in the
    order given). A value Hydra would refuse (an unknown key) is left to Hydra: that call is composed
    whole, so it fails with Hydra's own error.

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

    folder = config_dir()
    rewritten = list(rewrite_validator_file(overrides))
    if _adds_search_path(rewritten):
        with initialize_config_dir(config_dir=str(folder), version_base="1.3"):
            return compose("config", overrides=rewritten)
    return copy.deepcopy(_kept(folder, _config_state(folder), rewritten))


def _kept(folder: Path, state: tuple[object, ...], overrides: list[str]) -> DictConfig:
    """The kept composition of ``overrides`` (not a copy: callers copy it), composed first if missing."""
    from hydra import compose, initialize_config_dir

    key = (tuple(overrides), state)
    composed = _COMPOSED.get(key)
    if composed is None:
        composed = _with_values(folder, state, overrides)
        if composed is None:
            with initialize_config_dir(config_dir=str(folder), version_base="1.3"):
                composed = compose("config", overrides=overrides)
        if len(_COMPOSED) >= _COMPOSED_MAX:
            _COMPOSED.clear()
        _COMPOSED[key] = composed
    return composed


def _with_values(folder: Path, state: tuple[object, ...], overrides: list[str]) -> DictConfig | None:
    """The composition of ``overrides`` as the composition of all but their plain values with those values
    set on a copy (see `compose_config`); None when there are no plain values or Hydra would refuse one."""
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    values = _plain_values(folder, overrides)
    if not values:
        return None
    rest = [item for i, item in enumerate(overrides) if i not in values]
    base = copy.deepcopy(_kept(folder, state, rest))
    try:
        for key, value in values.values():
            OmegaConf.update(base, key, value, merge=True)
    except OmegaConfBaseException:  # e.g. a key the config does not have: Hydra's error, from Hydra
        return None
    return base


def _plain_values(folder: Path, overrides: Sequence[str]) -> dict[int, tuple[str, object]]:
    """The overrides of ``overrides`` that only set a value, by position: (key, parsed value).

    Hydra applies every override that is not a config group choice after composing, in the order given; a
    value is taken out of that order only when no other such override touches its key (the same key, a
    key under it, or one it is under: ``~agent.x``, ``+agent.retry={...}``).
    """
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.core.override_parser.types import OverrideType, ValueType
    from hydra.errors import HydraException

    try:
        parsed = OverridesParser.create().parse_overrides(list(overrides))
    except HydraException:  # a syntax error: Hydra reports it when composing
        return {}
    plain: dict[int, tuple[str, object]] = {}
    others: list[str] = []  # keys of the config (not group) overrides left in Hydra's order
    for i, item in enumerate(parsed):
        key = item.key_or_group
        group = "/" in key or (folder / key).is_dir()
        if (
            item.type is OverrideType.CHANGE
            and item.package is None
            and item.value_type is ValueType.ELEMENT
            and "." in key
            and key.split(".", 1)[0] != "hydra"
            and not group
            and not isinstance(item.value(), dict)
        ):
            plain[i] = (key, item.value())
        elif not group:
            others.append(key)

    def touches(a: str, b: str) -> bool:
        return a == b or a.startswith(b + ".") or b.startswith(a + ".")

    return {i: kv for i, kv in plain.items() if not any(touches(kv[0], other) for other in others)}


def _adds_search_path(overrides: Sequence[str]) -> bool:
    """Whether an override adds a search path (its files are not watched: never reused)."""
    return any("searchpath" in item.partition("=")[0] for item in overrides)


def _config_state(folder: Path) -> tuple[object, ...]:
    """What a composition depends on besides its overrides: every config file's name, size and change time,
    and ``sys.path`` (Hydra finds its plugins there)."""
    files = []
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            stat = path.stat()
            files.append((path.relative_to(folder).as_posix(), stat.st_size, stat.st_mtime_ns))
    return (str(folder), tuple(files), tuple(sys.path))


def _compose_key(folder: Path, overrides: Sequence[str]) -> tuple[object, ...] | None:
    """The key of ``overrides``' kept composition; None when an override adds a search path."""
    if _adds_search_path(overrides):
        return None
    return (tuple(overrides), _config_state(folder))
