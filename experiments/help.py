"""A fast ``python -m experiments --help``: the same text as Hydra's, without composing every config group.

Hydra's ``--help`` composes the whole config and then lists the options of every group twice (its own groups
and the app's), deep-copying its config repository once per group: about half a second on our 2-core machine
before a single line is printed (docs/performance.md). Our help template only uses ``$APP_CONFIG_GROUPS``,
which is the list of ``<group>/<option>.yaml`` files under the config folder, so a plain ``--help`` renders
the template from ``config.yaml`` directly. Anything else (overrides next to ``--help``, a template that
needs the composed config or Hydra's own groups, a config file that does not resolve) returns None and Hydra
answers as usual; ``tests/experiments/test_help.py`` checks that both give the same text.
"""

from __future__ import annotations

import string
from collections.abc import Sequence
from pathlib import Path

__all__ = ["app_config_groups", "fast_help"]

_HELP_FLAGS = (["--help"], ["-h"])
_CONFIG_SUFFIX = ".yaml"


def app_config_groups(folder: Path) -> str:
    """List the app's config groups as Hydra's ``$APP_CONFIG_GROUPS`` does.

    One line per group that holds at least one config file (nested groups as ``a/b``), groups and options
    sorted, Hydra's own ``hydra/...`` groups left out.

    Args:
        folder: The config folder (the one holding ``config.yaml``).

    Returns:
        ``"group: option, option\\n"`` lines.
    """
    lines: list[str] = []
    for group_dir in sorted(p for p in folder.rglob("*") if p.is_dir()):
        group = group_dir.relative_to(folder).as_posix()
        if group == "hydra" or group.startswith("hydra/") or "__pycache__" in group.split("/"):
            continue
        options = sorted(f.stem for f in group_dir.iterdir() if f.is_file() and f.suffix == _CONFIG_SUFFIX)
        if options:
            lines.append(f"{group}: {', '.join(options)}")
    return "".join(f"{line}\n" for line in sorted(lines))


def fast_help(argv: Sequence[str], folder: Path) -> str | None:
    """The help text for ``argv`` when it is a plain ``--help`` our template can render, else None.

    Args:
        argv: The command-line arguments (without the program name).
        folder: The config folder (the one holding ``config.yaml``).

    Returns:
        The text Hydra would print, or None when Hydra must answer (other arguments, a template that needs
        what only Hydra composes, a config that does not load).
    """
    if list(argv) not in _HELP_FLAGS:
        return None
    from omegaconf import OmegaConf

    try:
        cfg = OmegaConf.load(folder / "config.yaml")
        text = OmegaConf.select(cfg, "hydra.help.template", throw_on_missing=True)
    except Exception:  # a config only Hydra can compose (defaults, interpolations into other groups)
        return None
    if not isinstance(text, str):
        return None
    template = string.Template(text)
    if not template.is_valid() or set(template.get_identifiers()) - {"APP_CONFIG_GROUPS"}:
        return None
    return template.substitute(APP_CONFIG_GROUPS=app_config_groups(folder))
