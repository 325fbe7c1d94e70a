"""Import one of the scripts in ``perf/`` as a module (perf/ is a folder of scripts, not a package; a plain
module: test files import it by a unique name)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

PERF = Path(__file__).resolve().parents[2] / "perf"


def load_perf_script(name: str) -> ModuleType:
    """``perf/<name>.py`` imported as the module ``perf_<name>``.

    The module is put in `sys.modules` before it runs: dataclasses resolve their annotations through it.
    """
    spec = importlib.util.spec_from_file_location(f"perf_{name}", PERF / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module
