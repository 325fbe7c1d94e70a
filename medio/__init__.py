"""Read every raw medical format into (array, header facts) and render it to an 8-bit PNG.

Public API (docs/contracts.md, docs/medio.md)::

    image = medio.read("CT_small.dcm")           # MedImage: canonical axes, modality LUT applied
    shown = medio.render(image)                   # Rendered: uint8 pixels + info (window, slice, ...)
    medio.write_png(shown.pixels, "out.png")     # atomic
    medio.inspect("any.file")                    # JSON-able summary, never raises on bad input

Heavy libraries (pydicom, nibabel, SimpleITK, h5py, scipy.io, pandas/pyarrow, PyAV) are imported on first use,
under one import lock (:mod:`medio.libraries`); multi-threaded programs call ``medio.preload()`` in the main
thread first.
"""

import importlib
import sys
from types import ModuleType
from typing import TYPE_CHECKING, Any

from medio.errors import (
    CorruptFile,
    EmptyFile,
    ImageTooLarge,
    InvalidLabelMap,
    KeyNotFound,
    MedioError,
    NotAnImage,
    UnsupportedFormat,
    UnsupportedTransferSyntax,
)
from medio.libraries import preload

if TYPE_CHECKING:
    from medio.inspect import inspect
    from medio.png import read_png_size, write_png
    from medio.read import read
    from medio.render import choose_slice, render
    from medio.types import MedImage, Meta, Rendered

# Loaded on first use (PEP 562): every CLI imports `core.cli_errors`, and that must not cost numpy and the
# readers before an argument is parsed (docs/performance.md, start-up).
_LAZY = {
    "inspect": "inspect",
    "read_png_size": "png",
    "write_png": "png",
    "read": "read",
    "choose_slice": "render",
    "render": "render",
    "MedImage": "types",
    "Meta": "types",
    "Rendered": "types",
}
# Submodules that share their name with the function they define: `medio.read` is the function.
_SHADOWED = frozenset({"inspect", "read", "render"})


def __getattr__(name: str) -> Any:
    """Import the public name's module on first access."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    setattr(sys.modules[__name__], name, value)
    return value


class _Package(ModuleType):  # `medio.types` is a submodule: the stdlib name must not be `types`
    """The package module; keeps ``medio.read`` (etc.) the function when its submodule is imported."""

    def __setattr__(self, name: str, value: Any) -> None:
        # The import system binds each loaded submodule as an attribute of its package; for the three
        # submodules named like their function, the package attribute stays the function (as when these
        # names were imported eagerly here).
        if name in _SHADOWED and isinstance(value, ModuleType):
            value = getattr(value, name, value)
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package

__all__ = [
    "CorruptFile",
    "EmptyFile",
    "ImageTooLarge",
    "InvalidLabelMap",
    "KeyNotFound",
    "MedImage",
    "MedioError",
    "Meta",
    "NotAnImage",
    "Rendered",
    "UnsupportedFormat",
    "UnsupportedTransferSyntax",
    "choose_slice",
    "inspect",
    "preload",
    "read",
    "read_png_size",
    "render",
    "write_png",
]
