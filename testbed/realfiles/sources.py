"""Where the real files come from: the test data that ships inside the installed pydicom and nibabel wheels.

Only files present on disk are used (``pydicom.data.get_testdata_file(name, download=False)``; nibabel's
``tests/data`` folder located from the package path, so pytest is not needed). A file a package version does
not ship raises :class:`MissingSource`, naming it, instead of silently shrinking the suite.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from pathlib import Path

__all__ = ["MissingSource", "nibabel_file", "pydicom_file", "pydicom_tree_file", "source_versions"]


class MissingSource(FileNotFoundError):
    """A file a suite of real files (realfiles, foreign, independent) needs is not shipped by the installed
    package version."""


def module_versions(modules: Mapping[str, str]) -> dict[str, str]:
    """``label -> version`` of each module named in ``modules`` (``label -> module``); same versions => same
    bytes, so a suite's ``provenance.json`` and cache key record them."""
    return {
        label: str(getattr(importlib.import_module(m), "__version__", "?")) for label, m in modules.items()
    }


def pydicom_file(name: str) -> Path:
    """Path of one of pydicom's bundled test files, without any download.

    Args:
        name: File name as pydicom's data manager knows it (e.g. ``"MR_small.dcm"``).

    Returns:
        The absolute path.

    Raises:
        MissingSource: The installed pydicom does not ship the file offline.
    """
    from pydicom.data import get_testdata_file

    found = get_testdata_file(name, download=False)
    if not isinstance(found, str) or not Path(found).is_file():
        raise MissingSource(f"pydicom does not ship {name!r} offline")
    return Path(found)


def pydicom_tree_file(rel: str) -> Path:
    """A file of pydicom's ``test_files`` tree by relative path (the DICOMDIR trees have no unique names).

    Args:
        rel: Path under ``pydicom/data/test_files`` (e.g. ``"dicomdirtests/77654033/CT2/17106"``).

    Returns:
        The absolute path.

    Raises:
        MissingSource: The file is not there.
    """
    import pydicom.data

    path = Path(pydicom.data.__file__).parent / "test_files" / rel
    if not path.is_file():
        raise MissingSource(f"pydicom does not ship test_files/{rel}")
    return path


def nibabel_file(name: str) -> Path:
    """Path of one of nibabel's bundled test files (``nibabel/tests/data/<name>``).

    Args:
        name: File name.

    Returns:
        The absolute path.

    Raises:
        MissingSource: The installed nibabel does not ship the file.
    """
    import nibabel

    path = Path(nibabel.__file__).parent / "tests" / "data" / name
    if not path.is_file():
        raise MissingSource(f"nibabel does not ship tests/data/{name}")
    return path


def source_versions() -> dict[str, str]:
    """The versions of the packages whose files make up the suite (same versions => byte-identical suite)."""
    return module_versions({"pydicom": "pydicom", "nibabel": "nibabel"})
