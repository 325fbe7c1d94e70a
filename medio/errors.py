"""Errors raised by :mod:`medio`: every one names the file and the reason."""

from __future__ import annotations

from os import PathLike

from core.errors import InputError


class MedioError(InputError):
    """A file could not be read or rendered.

    Args:
        path: The file (or folder) concerned.
        reason: What went wrong, in words a user can act on.

    Attributes:
        path: The file as a string.
        reason: The reason, without the path.
    """

    def __init__(self, path: str | PathLike[str], reason: str) -> None:
        self.path = str(path)
        # One line, always: the reason goes into logs, traces and decision reasons, and library messages
        # wrapped into it may span several lines.
        self.reason = " / ".join(part.strip() for part in reason.splitlines() if part.strip())
        super().__init__(f"{self.path}: {reason}")

    def __reduce__(self) -> tuple[type[MedioError], tuple[str, str]]:
        # Keep errors picklable across process pools even for subclasses with extra attributes.
        return (type(self), (self.path, self.reason))


class UnsupportedFormat(MedioError):
    """Neither the extension nor the magic bytes identify a format medio reads."""


class UnsupportedTransferSyntax(MedioError):
    """Compressed DICOM pixel data for which no installed pydicom decoder plugin works.

    Args:
        path: The DICOM file.
        reason: The message, naming the plugin(s) that would decode it.
        transfer_syntax: The Transfer Syntax UID.
        plugins: Packages that would decode this syntax when installed.
    """

    def __init__(
        self,
        path: str | PathLike[str],
        reason: str,
        *,
        transfer_syntax: str = "",
        plugins: tuple[str, ...] = (),
    ) -> None:
        super().__init__(path, reason)
        self.transfer_syntax = transfer_syntax
        self.plugins = plugins


class CorruptFile(MedioError):
    """The file has the right format but its content is damaged or truncated."""


class EmptyFile(MedioError):
    """The file has zero bytes."""


class ImageTooLarge(MedioError):
    """The image exceeds a safety limit (Pillow's decompression-bomb limit, medio's memory cap)."""


class KeyNotFound(MedioError):
    """A container key, dataset path, column, series or index does not exist in the file."""


class InvalidLabelMap(MedioError):
    """A label map cannot be rendered faithfully (non-integer ids or ids above 255)."""


class NotAnImage(MedioError):
    """The data is not an image: a scalar, a 1-D vector or an empty array."""
