"""The text of the documents datasets ship beside their data: ``.docx``, PDF, and plain text or Markdown.

Real datasets describe their labels in a Word or PDF README as often as in a ``README.md``; a reader that
only decodes bytes calls those binary. `read_document` returns the words of each, bounded:

- ``.docx``: a zip of XML (ECMA-376 Part 1, §17); the paragraphs of ``word/document.xml`` (``w:p``) with their
  text runs (``w:t``), tabs and breaks, read with the standard library;
- PDF: the text layer of each page, by ``pypdf`` (pure Python); a scanned page without one gives no text;
- anything else: decoded as text (`medio.dataset_docs.read_text_any`).
"""

from __future__ import annotations

import zipfile
from pathlib import Path
from xml.etree import ElementTree

from medio.errors import MedioError

__all__ = ["DOCUMENT_SUFFIXES", "DocumentError", "read_document"]

DOCUMENT_SUFFIXES = frozenset({".docx", ".pdf"})
"""Suffixes whose text is not their bytes."""

_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_MAX_FILE_BYTES = 50 * 1024**2  # a README is small; a 50 MB "document" is a scan or an archive
_MAX_XML_BYTES = 20 * 1024**2  # word/document.xml unpacked: a bound on a zip bomb
_MAX_PAGES = 200


class DocumentError(MedioError):
    """A document that cannot be read as text (encrypted, broken, too large), with the file and the reason."""


def read_document(path: Path, max_chars: int = 200_000) -> str:
    """The text of a document, at most ``max_chars`` characters.

    Args:
        path: A ``.docx``, ``.pdf`` or text file.
        max_chars: Characters returned at most (the reading stops there).

    Returns:
        The text; paragraphs (docx) and pages (PDF) on their own lines.

    Raises:
        DocumentError: The file is too large, encrypted, or not the format its suffix says.
    """
    suffix = path.suffix.lower()
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise DocumentError(path, f"cannot be read ({exc.strerror or exc})") from exc
    if suffix in DOCUMENT_SUFFIXES and size > _MAX_FILE_BYTES:
        raise DocumentError(path, f"{size:,} bytes is above the {_MAX_FILE_BYTES:,}-byte document cap")
    if suffix == ".docx":
        return _docx(path, max_chars)
    if suffix == ".pdf":
        return _pdf(path, max_chars)
    from medio.dataset_docs import read_text_any

    return read_text_any(path)[:max_chars]


def _docx(path: Path, max_chars: int) -> str:
    try:
        with zipfile.ZipFile(path) as archive:
            try:
                info = archive.getinfo("word/document.xml")
            except KeyError:
                raise DocumentError(path, "no word/document.xml: not a Word document") from None
            if info.file_size > _MAX_XML_BYTES:
                raise DocumentError(path, f"word/document.xml unpacks to {info.file_size:,} bytes")
            xml = archive.read(info)
    except (zipfile.BadZipFile, OSError, RuntimeError) as exc:
        # RuntimeError: zipfile's answer to an encrypted member.
        raise DocumentError(path, f"not a readable .docx ({exc})") from exc
    try:
        root = ElementTree.fromstring(xml)
    except ElementTree.ParseError as exc:
        raise DocumentError(path, f"word/document.xml is not XML ({exc})") from exc
    lines: list[str] = []
    total = 0
    for paragraph in root.iter(f"{_W}p"):
        pieces = []
        for node in paragraph.iter():
            if node.tag == f"{_W}t" and node.text:
                pieces.append(node.text)
            elif node.tag == f"{_W}tab":
                pieces.append("\t")
            elif node.tag in (f"{_W}br", f"{_W}cr"):
                pieces.append("\n")
        line = "".join(pieces)
        lines.append(line)
        total += len(line) + 1
        if total >= max_chars:
            break
    return "\n".join(lines).strip("\n")[:max_chars]


def _pdf(path: Path, max_chars: int) -> str:
    import pypdf
    from pypdf.errors import PdfReadError

    try:
        reader = pypdf.PdfReader(path)
        if reader.is_encrypted:
            try:
                # An owner-password-only PDF (print/copy restrictions) opens with the empty user password.
                opened = reader.decrypt("")
            except Exception as exc:  # pypdf raises its own or a cryptography error for unknown ciphers
                raise DocumentError(path, f"encrypted PDF ({exc})") from exc
            if not opened:
                raise DocumentError(path, "encrypted PDF: a password is needed")
        pages: list[str] = []
        total = 0
        for page in reader.pages[:_MAX_PAGES]:
            text = page.extract_text() or ""
            pages.append(text)
            total += len(text) + 1
            if total >= max_chars:
                break
    except DocumentError:
        raise
    except (PdfReadError, OSError, ValueError, KeyError, TypeError) as exc:
        raise DocumentError(path, f"not a readable PDF ({type(exc).__name__}: {exc})") from exc
    return "\n".join(pages).strip()[:max_chars]
