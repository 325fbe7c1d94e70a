"""Parse a dataset manifest (`VLM/random.txt`) and re-root its paths onto the dataset's own `data/` folder.

SPEC §1: one sample per line, ``<index><whitespace><path>``. The separator is a space in most files and a TAB
in some (rsna), and paths contain spaces (``Dye samples/DS1.tif``), so a line is split on its FIRST run of
whitespace only. Paths are absolute paths on the benchmark authors' machines
(``/data3/chenxin/Agent_test/<group>/<id>/data/...``, ``/data4/chenxin/Med-Agent/<group>/<id>/data/...``)
and are re-rooted onto ``<dataset>/data/``.

Line forms, tried in this order on each stripped line (a file may mix them):

1. ``<index>:<path>``, spaces or TABs allowed around the colon (LCTSC writes ``0: /data3/...``; the reference
   reads that form with ``split(":", 1)``, issue 30). Only the FIRST colon separates, so a path holding colons
   of its own (``0: C:\\MDS\\data\\x.png``, ``0: /a/data/t 10:30.png``) keeps them.
2. ``<index><whitespace><path>`` (SPEC §1, the reference S3's ``^(\\d+)\\s+(.+)$``): ``0 C:\\x`` is this
   form, because the token before the colon (``0 C``) is not an index.

The one line the two readings split differently is ``0 : /path``: the reference's whitespace rule would take
``": /path"`` as the path, which names no file; it is read here as index 0 and ``/path``, the file the line
means. A line without an index (the reference S3 falls back to its line number) is refused: the index names
the outputs, and a guessed one would silently shift them.

Re-rooting rule (`reroot`), in order:

1. A relative path that starts with ``data/`` (optionally ``./data/``) is taken relative to the dataset root.
2. An absolute path is cut at a path component equal to ``data``: the one right after a component equal to the
   dataset folder's name when there is such a pair (``.../kits23/data/...`` for the dataset ``kits23``),
   otherwise the FIRST ``data`` component. First, not last, because raw data often has its own ``data``
   sub-folders (``data/train/data/x.png``) while the authors' roots use ``/data3``/``/data4``, which are not
   ``data``; the dataset-name anchor also copes with an authors' root that is literally ``/data/...``.
   Windows paths (``D:\\MDS-Bench\\<id>\\data\\x.png``, ``D:/...``, UNC ``\\\\host\\share\\...``) are absolute
   paths too: backslashes become separators and the drive or share is one more component before the cut.
3. Anything else cannot be re-rooted and is an error, as is a path whose ``..`` components climb out of
   ``data/`` and a path naming the ``data`` folder itself.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from benchmark.errors import ManifestError

__all__ = [
    "DATA_DIR",
    "MANIFEST_NAME",
    "VLM_DIR",
    "ManifestEntry",
    "parse_manifest",
    "reroot",
    "reroot_relpath",
]

#: The folder, under a dataset root, that holds the raw files.
DATA_DIR = "data"
#: The folder, under a dataset root, that holds the manifest, the ground truth and the runs.
VLM_DIR = "VLM"
#: The manifest's file name inside `VLM_DIR`.
MANIFEST_NAME = "random.txt"

# The index is ASCII digits only (int() would also accept "٣" or "+3"); the rest after the first run of
# whitespace is the path, spaces included.
_INDEX_RE = re.compile(r"[0-9]+")
_SPLIT_RE = re.compile(r"(\S+)(?:\s+(.*))?", re.DOTALL)
# Form 1 of the module docstring: an index, optional blanks, the first colon; the rest is the path.
_COLON_RE = re.compile(r"([0-9]+)[ \t]*:[ \t]*(.*)", re.DOTALL)
_EXPECTED = "expected '<index> <path>' or '<index>: <path>'"


@dataclass(frozen=True)
class ManifestEntry:
    """One manifest line: a sample index and the raw file (or folder) it names.

    Attributes:
        index: The sample index (names the outputs: ``images/<index>.png``).
        raw: The path exactly as written in the manifest.
        path: The re-rooted absolute path under ``<dataset>/data/``.
        relpath: ``path`` relative to the dataset root, POSIX style (``"data/x/y.dcm"``), the form the ground
            truth's ``expected_extra.source_file`` uses.
        line: The 1-based line of the manifest this entry came from.
    """

    index: int
    raw: str
    path: Path
    relpath: str
    line: int


class _RerootError(ValueError):
    """Internal: a path cannot be re-rooted; carries only the reason (the caller adds file and line)."""


def reroot_relpath(raw_path: str, dataset_name: str | None = None) -> str:
    """Map a manifest path to its POSIX path relative to the dataset root (``"data/..."``).

    Args:
        raw_path: The path as written in the manifest.
        dataset_name: The dataset folder's name, used to anchor the ``/<name>/data/`` segment (module rule 2).

    Returns:
        ``"data/<rest>"`` with ``.`` and empty components removed and ``..`` resolved lexically.

    Raises:
        ManifestError: The path has no ``data`` segment, is relative without starting with ``data/``, names
            the data folder itself, or climbs out of ``data/``. The error's ``path`` is the raw path.
    """
    try:
        return _relpath(raw_path, dataset_name)
    except _RerootError as exc:
        raise ManifestError(raw_path, str(exc)) from None


def reroot(raw_path: str, dataset_root: str | Path) -> Path:
    """Re-root a manifest path onto ``<dataset_root>/data/`` (module docstring, rules 1-3).

    Args:
        raw_path: The path as written in the manifest (an authors' absolute path or ``data/...``).
        dataset_root: The dataset folder (the one holding ``data/`` and ``VLM/``).

    Returns:
        The absolute path of the raw file under ``dataset_root``. Existence is not checked.

    Raises:
        ManifestError: The path cannot be re-rooted (see `reroot_relpath`).

    Example:
        >>> reroot("/data4/chenxin/Med-Agent/forth_dataset/kits23/data/dataset/case_00286/x.nii.gz",
        ...        "/bench/kits23").as_posix()
        '/bench/kits23/data/dataset/case_00286/x.nii.gz'
    """
    root = Path(dataset_root).absolute()
    return root.joinpath(*reroot_relpath(raw_path, root.name).split("/"))


#: A drive-letter path (``D:\\x``, ``D:/x``) or a UNC path (``\\\\server\\share\\x``): the authors' machines
#: may run any OS, and their absolute paths are re-rooted like POSIX ones.
_WINDOWS_ABSOLUTE = re.compile(r"^(?:[A-Za-z]:[\\/]|\\\\)")


def _posix_text(text: str) -> str:
    """A Windows absolute path as a POSIX absolute one (drive letter or UNC host/share kept as components)."""
    if not _WINDOWS_ABSOLUTE.match(text):
        # A relative Windows path (``data\\x.png``): with no "/" at all, a backslash can only be a separator.
        return text.replace("\\", "/") if "\\" in text and "/" not in text else text
    # Backslashes are separators on Windows; a drive letter or the UNC server/share is just another
    # component before the ``data`` segment, which is where the cut happens.
    return "/" + text.replace("\\", "/").lstrip("/")


def _relpath(raw_path: str, dataset_name: str | None) -> str:
    text = _posix_text(raw_path.strip())
    if not text:
        raise _RerootError("the path is empty")
    parts = list(PurePosixPath(text).parts)
    if text.startswith("/"):
        parts = parts[1:]  # drop the root "/"
        cut = _data_component(parts, dataset_name)
        if cut is None:
            raise _RerootError(
                f"cannot re-root {raw_path!r}: it has no '/{DATA_DIR}/' segment to map onto "
                f"<dataset>/{DATA_DIR}/"
            )
        rest = parts[cut + 1 :]
    else:
        parts = [p for p in parts if p != "."]
        if not parts or parts[0] != DATA_DIR:
            raise _RerootError(
                f"cannot re-root {raw_path!r}: a relative path must start with '{DATA_DIR}/' (SPEC §1)"
            )
        rest = parts[1:]
    rest = [p for p in rest if p not in ("", ".")]
    if ".." in rest:
        normal = posixpath.normpath("/".join(rest))
        if normal == ".." or normal.startswith("../"):
            raise _RerootError(f"{raw_path!r} escapes the {DATA_DIR}/ folder through '..'")
        rest = [] if normal == "." else normal.split("/")
    if not rest:
        raise _RerootError(f"{raw_path!r} names the {DATA_DIR}/ folder itself, not a file in it")
    return "/".join([DATA_DIR, *rest])


def _data_component(parts: list[str], dataset_name: str | None) -> int | None:
    """The index of the ``data`` component to cut at (module rule 2), or None when there is none."""
    candidates = [k for k, p in enumerate(parts) if p == DATA_DIR]
    if not candidates:
        return None
    if dataset_name:
        anchored = [k for k in candidates if k > 0 and parts[k - 1] == dataset_name]
        if anchored:
            return anchored[0]
    return candidates[0]


def parse_manifest(
    manifest_path: str | Path, dataset_root: str | Path | None = None, *, check_exists: bool = False
) -> list[ManifestEntry]:
    """Read a manifest and re-root every entry onto the dataset's ``data/`` folder.

    Blank lines and leading/trailing whitespace are ignored; a UTF-8 byte-order mark is tolerated.

    Args:
        manifest_path: The ``random.txt`` file.
        dataset_root: The dataset folder; defaults to the manifest's grandparent
            (``<dataset>/VLM/random.txt``).
        check_exists: Also require every re-rooted path to exist (file or folder).

    Returns:
        The entries in ascending index order.

    Raises:
        ManifestError: Naming the file and line: a line with no path, an index that is not a non-negative
            integer, a duplicated index, a path that cannot be re-rooted or escapes ``data/``, a missing raw
            file (with ``check_exists``); naming only the file: an unreadable or empty manifest.
    """
    manifest = Path(manifest_path)
    root = (Path(dataset_root) if dataset_root is not None else manifest.parent.parent).absolute()
    try:
        text = manifest.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise ManifestError(manifest, "manifest not found") from None
    except UnicodeDecodeError as exc:
        raise ManifestError(manifest, f"manifest is not valid UTF-8 (byte offset {exc.start})") from None
    except OSError as exc:
        raise ManifestError(manifest, f"cannot read manifest: {exc.strerror or exc}") from None

    entries: list[ManifestEntry] = []
    first_line: dict[int, int] = {}
    for line_no, line in enumerate(text.splitlines(), start=1):
        entry = _parse_line(manifest, root, line_no, line.strip())
        if entry is None:
            continue
        if entry.index in first_line:
            raise ManifestError(
                manifest,
                f"duplicated index {entry.index} (first seen on line {first_line[entry.index]})",
                line=line_no,
            )
        first_line[entry.index] = line_no
        if check_exists and not entry.path.exists():
            raise ManifestError(
                manifest, f"raw file for index {entry.index} not found: {entry.path}", line=line_no
            )
        entries.append(entry)
    if not entries:
        raise ManifestError(manifest, "manifest has no entries")
    entries.sort(key=lambda e: e.index)
    return entries


def _parse_line(manifest: Path, root: Path, line_no: int, line: str) -> ManifestEntry | None:
    """Parse one stripped line; None for a blank line."""
    if not line:
        return None
    match = _COLON_RE.fullmatch(line) or _SPLIT_RE.fullmatch(line)
    if match is None:  # unreachable for a stripped non-empty line; kept for type narrowing
        raise ManifestError(manifest, f"cannot parse line {line!r}", line=line_no)
    token, raw = match.group(1), match.group(2)
    if _INDEX_RE.fullmatch(token) is None:
        raise ManifestError(
            manifest, f"index {token!r} is not a non-negative integer ({_EXPECTED})", line=line_no
        )
    if not raw:
        raise ManifestError(manifest, f"index {token} has no path ({_EXPECTED})", line=line_no)
    try:
        relpath = _relpath(raw, root.name)
    except _RerootError as exc:
        raise ManifestError(manifest, str(exc), line=line_no) from None
    return ManifestEntry(
        index=int(token), raw=raw, path=root.joinpath(*relpath.split("/")), relpath=relpath, line=line_no
    )
