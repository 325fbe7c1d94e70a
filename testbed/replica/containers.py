"""Deterministic writers for the replica's containers that the synthetic suite's writers do not cover:
Excel workbooks (openpyxl), Word documents (a minimal OOXML package), macOS AppleDouble ``._name`` stubs and
palette-colour TIFFs.

Office files are ZIP packages; openpyxl stamps the clock into ``docProps/core.xml`` and into every member's
time, so both are pinned here and the package is re-zipped with fixed member times.
"""

from __future__ import annotations

import datetime
import io
import struct
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["write_appledouble", "write_docx", "write_palette_tiff", "write_xlsx"]

_FIXED_TIME = datetime.datetime(2023, 6, 1, 12, 0, 0)
_ZIP_TIME = (2023, 6, 1, 12, 0, 0)


def _normalised_zip(raw: bytes) -> bytes:
    """The same ZIP package with every member's time fixed and deflate compression (bytes reproducible)."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(raw)) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            member = zipfile.ZipInfo(info.filename, date_time=_ZIP_TIME)
            member.compress_type = zipfile.ZIP_DEFLATED
            member.external_attr = 0o644 << 16
            dst.writestr(member, src.read(info.filename))
    return out.getvalue()


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def write_xlsx(path: Path, sheets: dict[str, tuple[Sequence[str], Sequence[Sequence[Any]]]]) -> None:
    """Write an Excel workbook: one sheet per entry, a header row then the data rows (None = empty cell).

    Args:
        path: The ``.xlsx`` file.
        sheets: ``{sheet name: (header, rows)}`` in sheet order.
    """
    from openpyxl import Workbook
    from openpyxl.writer.excel import ExcelWriter

    book = Workbook()
    book.remove(book.active)
    for title, (header, rows) in sheets.items():
        sheet = book.create_sheet(title)
        sheet.append(list(header))
        for row in rows:
            sheet.append(list(row))
    book.properties.creator = "openpyxl"
    book.properties.created = _FIXED_TIME
    book.properties.modified = _FIXED_TIME
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        ExcelWriter(book, archive).save()
    _write(path, _normalised_zip(buffer.getvalue()))


_DOCX_TYPES = (
    '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
    '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
    '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
    '<Default Extension="xml" ContentType="application/xml"/>'
    '<Override PartName="/word/document.xml" '
    'ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/>'
    "</Types>"
)
_DOCX_RELS = (
    '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
    '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
    '<Relationship Id="rId1" '
    'Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" '
    'Target="word/document.xml"/></Relationships>'
)
_W_NS = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"


def write_docx(path: Path, paragraphs: Sequence[str]) -> None:
    """Write a minimal valid Word document (ECMA-376 Part 1: content types, package relationship, main
    document part) holding one ``w:p`` per paragraph."""
    from xml.sax.saxutils import escape

    body = "".join(f'<w:p><w:r><w:t xml:space="preserve">{escape(p)}</w:t></w:r></w:p>' for p in paragraphs)
    document = (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
        f'<w:document xmlns:w="{_W_NS}"><w:body>{body}<w:sectPr/></w:body></w:document>'
    )
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("[Content_Types].xml", _DOCX_TYPES)
        archive.writestr("_rels/.rels", _DOCX_RELS)
        archive.writestr("word/document.xml", document)
    _write(path, _normalised_zip(buffer.getvalue()))


# AppleDouble (RFC 1740 and Apple's "AppleSingle/AppleDouble Formats for Foreign Files", 1990): a 26-byte
# header (magic, version, 16 filler bytes, entry count), 12-byte entry descriptors (id, offset, length).
# macOS's copyfile writes a Finder Info entry (id 9) that carries the extended attributes in an "ATTR" block
# after the 32 Finder bytes, then an empty resource fork entry (id 2) at the end of the file.
APPLEDOUBLE_MAGIC = 0x00051607
APPLEDOUBLE_VERSION = 0x00020000
_ENTRY_RESOURCE_FORK = 2
_ENTRY_FINDER_INFO = 9
_ATTR_MAGIC = 0x41545452  # "ATTR"
_ATTR_HEADER = 36
_FINDER_INFO = 32


def write_appledouble(path: Path, attributes: dict[str, bytes], size: int | None = None) -> None:
    """Write a macOS AppleDouble ``._name`` stub (what ``zip`` on a Mac puts under ``__MACOSX/``).

    Args:
        path: The stub (``__MACOSX/.../._<name>``).
        attributes: Extended attributes stored in the Finder Info entry's ATTR block (name -> value).
        size: Pad the ATTR data to make the file exactly this size (the real stub's size), if it fits.
    """
    names = [name.encode("utf-8") + b"\x00" for name in attributes]
    entry_sizes = [
        (11 + len(n) + 3) // 4 * 4 for n in names
    ]  # offset, length, flags, namelen, name; 4-aligned
    header_end = 26 + 2 * 12
    attr_start = header_end + _FINDER_INFO + 2  # two pad bytes align the ATTR header (copyfile does this)
    data_start = attr_start + _ATTR_HEADER + sum(entry_sizes)
    values = list(attributes.values())
    total = data_start + sum(len(v) for v in values)
    if size is not None and size > total:
        values[-1] = values[-1] + b"\x00" * (size - total)
        total = size
    entries = bytearray()
    offset = data_start
    for name, value, entry_size in zip(names, values, entry_sizes, strict=True):
        entry = struct.pack(">IIHB", offset, len(value), 0, len(name)) + name
        entries += entry.ljust(entry_size, b"\x00")
        offset += len(value)
    attr_header = struct.pack(
        ">IIIII12xHH", _ATTR_MAGIC, 0, total, data_start, total - data_start, 0, len(names)
    )
    finder = total - header_end  # the Finder Info entry spans the ATTR block too
    head = struct.pack(">II16sH", APPLEDOUBLE_MAGIC, APPLEDOUBLE_VERSION, b"Mac OS X        ", 2)
    head += struct.pack(">III", _ENTRY_FINDER_INFO, header_end, finder)
    head += struct.pack(">III", _ENTRY_RESOURCE_FORK, total, 0)
    blob = head + b"\x00" * _FINDER_INFO + b"\x00\x00" + attr_header + bytes(entries) + b"".join(values)
    _write(path, blob)


def write_palette_tiff(path: Path, index: np.ndarray, colormap: np.ndarray) -> None:
    """Write an 8-bit palette-colour TIFF (PhotometricInterpretation 3, a 3 x 256 uint16 ColorMap), the way
    fundus cameras export monochrome modes (infrared, angiography) at a third of an RGB frame's size."""
    import tifffile

    path.parent.mkdir(parents=True, exist_ok=True)
    tifffile.imwrite(path, index.astype(np.uint8), photometric="palette", colormap=colormap, metadata=None)
