"""The commands of the previous flat layout, kept: ``python -m experiments.reselect`` and its siblings.

The modules behind these commands live in the sub-packages that say what they are (`experiments.selection`,
`experiments.analysis`, `experiments.run`), but a user's command line, a script, or a stored run's config
(``_target_: experiments.reselect.ReplayAgent``) still names the old dotted path. `install` puts a finder on
``sys.meta_path`` that answers exactly those names (and their submodules) with the module that lives at the
new path: ``python -m`` runs the same file (``runpy`` asks the loader for its code), and an import returns a
module whose names are the new module's own objects, so a class reached through either path is one class.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from collections.abc import Sequence
from types import CodeType, ModuleType

# Old dotted name -> the module (or package) it is now; a command of docs/cli.md each.
MOVED = {
    "experiments.ablation": "experiments.analysis.ablation",
    "experiments.budget_matched": "experiments.analysis.budget_matched",
    "experiments.leaderboard": "experiments.selection.leaderboard",
    "experiments.merge": "experiments.run.merge",
    "experiments.passk": "experiments.analysis.passk",
    "experiments.reselect": "experiments.selection.reselect",
    "experiments.validator_eval": "experiments.analysis.validator_eval",
}
_MODULE_KEYS = frozenset(
    {"__name__", "__spec__", "__loader__", "__file__", "__cached__", "__package__", "__path__"}
)


def new_name(name: str) -> str | None:
    """The current dotted name of ``name`` when it is (or lies under) a moved command, else None."""
    for old, new in MOVED.items():
        if name == old or name.startswith(old + "."):
            return new + name[len(old) :]
    return None


class _MovedFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds an old command name and loads it as a view of the module at its new name."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        target_name = new_name(fullname)
        if target_name is None:
            return None
        real = importlib.util.find_spec(target_name)
        if real is None:
            return None
        is_package = real.submodule_search_locations is not None
        spec = importlib.util.spec_from_loader(fullname, self, origin=real.origin, is_package=is_package)
        if spec is not None and is_package:
            spec.submodule_search_locations = list(real.submodule_search_locations or [])
        return spec

    def exec_module(self, module: ModuleType) -> None:
        real = importlib.import_module(str(new_name(module.__name__)))
        module.__dict__.update({k: v for k, v in vars(real).items() if k not in _MODULE_KEYS})

    def get_code(self, fullname: str) -> CodeType | None:
        """The new module's code: what ``python -m OLD`` runs as ``__main__``."""
        real = importlib.util.find_spec(str(new_name(fullname)))
        loader = real.loader if real is not None else None
        get_code = getattr(loader, "get_code", None)
        return get_code(real.name) if callable(get_code) and real is not None else None


def install() -> None:
    """Answer the old command names from now on (once per process)."""
    if not any(isinstance(f, _MovedFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _MovedFinder())
