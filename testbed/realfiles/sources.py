"""Where the real files come from: the test data that ships inside the installed pydicom and nibabel wheels.

Only files present on disk are used (``pydicom.data.get_testdata_file(name, download=False)``; nibabel's
``tests/data`` folder located from the package path, so pytest is not needed). A file a package version does
not ship raises :class:`MissingSource`, naming it, instead of silently shrinking the suite.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

__all__ = ["MissingSource", "nibabel_file", "pydicom_file", "pydicom_tree_file", "source_versions"]


class MissingSource(FileNotFoundError):
    """A file the realfiles suite needs is not shipped by the installed package version."""


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
    import nibabel
    import pydicom

    return {"pydicom": str(pydicom.__version__), "nibabel": str(nibabel.__version__)}


def sha256(path: Path) -> str:
    """Hex SHA-256 of a file (the provenance table records which bytes each dataset file came from)."""
    return hashlib.sha256(path.read_bytes()).hexdigest()
