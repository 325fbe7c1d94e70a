"""Errors of the benchmark format layer, each naming the file (and line, when there is one) and the reason.

Every error raised by `benchmark.manifest`, `benchmark.discover`, `benchmark.groundtruth` and
`benchmark.layout` derives from `BenchmarkError`, so a caller at the sample or dataset boundary can catch
one type, record ``str(error)`` (``"<file>:<line>: <reason>"``) and carry on.
"""

from __future__ import annotations

import errno
import json
from pathlib import Path
from typing import Any

__all__ = [
    "BenchmarkError",
    "GroundTruthError",
    "LayoutError",
    "ManifestError",
    "load_json",
]


class BenchmarkError(Exception):
    """A benchmark file is missing, unreadable or malformed.

    Attributes:
        path: The file (or folder) at fault.
        line: The 1-based line in that file, when the fault has one.
        reason: What is wrong, in words a user can act on.
        column: The 1-based column, when known (malformed JSON).
    """

    def __init__(self, path: str | Path, reason: str, *, line: int | None = None, column: int | None = None):
        self.path = Path(path)
        self.line = line
        self.column = column
        self.reason = reason
        super().__init__(self.__str__())

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line is not None else str(self.path)
        return f"{where}: {self.reason}"

    def __reduce__(self) -> tuple[Any, ...]:
        # Keep the error picklable (process pools hand errors back to the parent).
        return (_rebuild, (type(self), str(self.path), self.reason, self.line, self.column))


def _rebuild(
    cls: type[BenchmarkError], path: str, reason: str, line: int | None, column: int | None
) -> BenchmarkError:
    return cls(path, reason, line=line, column=column)


class ManifestError(BenchmarkError):
    """A `VLM/random.txt` manifest line (or the file itself) breaks the SPEC §1 rules."""


class GroundTruthError(BenchmarkError):
    """A ground-truth JSON is missing, malformed, or lacks its samples map."""


class LayoutError(BenchmarkError):
    """An output folder (`agent1_data_organization`) or one of its files is missing or unreadable."""


def load_json(path: Path, error: type[BenchmarkError] = BenchmarkError, *, what: str = "JSON file") -> Any:
    """Read and parse a JSON file, turning every failure into a located `BenchmarkError`.

    This is the one place where a decode error becomes ``"<file>:<line>: malformed JSON ... (column c)"``;
    the ground-truth loader and the output layout both go through it.

    Args:
        path: The JSON file.
        error: The `BenchmarkError` subclass to raise.
        what: How to name the file in the "missing" message (e.g. "ground truth").

    Returns:
        The parsed value, of any JSON type (a list or scalar top level is returned as is).

    Raises:
        BenchmarkError: (of type ``error``) the file is missing, unreadable, not UTF-8, or not valid JSON.
    """
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise error(path, f"{what} not found") from None
    except IsADirectoryError:
        raise error(path, f"{what} is a folder, not a file") from None
    except UnicodeDecodeError as exc:
        raise error(path, f"{what} is not valid UTF-8 (byte offset {exc.start})") from None
    except OSError as exc:
        raise error(path, f"cannot read {what}: {exc.strerror or exc}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise error(
            path, f"malformed JSON: {exc.msg} (column {exc.colno})", line=exc.lineno, column=exc.colno
        ) from None


# A full, read-only or over-quota disk fails every later write too: callers stop the run instead of recording
# one failed sample after another.
_STORAGE_ERRNOS = frozenset({errno.EROFS, errno.ENOSPC, errno.EDQUOT})


def is_storage_failure(exc: BaseException) -> bool:
    """Whether ``exc`` means the output storage can no longer be written (read-only, full, over quota).

    Args:
        exc: Any exception.

    Returns:
        True for an ``OSError`` whose errno is EROFS, ENOSPC or EDQUOT.

    Example:
        >>> import errno
        >>> is_storage_failure(OSError(errno.EROFS, "Read-only file system"))
        True
    """
    return isinstance(exc, OSError) and exc.errno in _STORAGE_ERRNOS
