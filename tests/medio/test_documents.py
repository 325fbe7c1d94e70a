"""Documents beside the data read as text: Word (.docx), PDF, text; a broken or encrypted file is one clear
error (`medio.documents`)."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from medio.documents import DocumentError, read_document

_W = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'


def _docx(path: Path, body: str) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("word/document.xml", f"<w:document {_W}><w:body>{body}</w:body></w:document>")
    return path


def _pdf(path: Path, text: str) -> Path:
    """A one-page PDF whose text layer is ``text`` (hand-written objects, byte offsets computed)."""
    stream = f"BT /F1 12 Tf 20 100 Td ({text}) Tj ET".encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 300 144] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for k, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % k + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    path.write_bytes(bytes(out))
    return path


def test_a_word_document_gives_its_paragraphs_with_tabs_and_breaks(tmp_path: Path) -> None:
    body = (
        "<w:p><w:r><w:t>Fundus photographs</w:t></w:r></w:p>"
        "<w:p><w:r><w:t>label</w:t><w:tab/><w:t>meaning</w:t></w:r></w:p>"
        "<w:p><w:r><w:t>0 = normal</w:t><w:br/><w:t>1 = glaucoma</w:t></w:r></w:p>"
    )
    text = read_document(_docx(tmp_path / "README_file.docx", body))
    assert text == "Fundus photographs\nlabel\tmeaning\n0 = normal\n1 = glaucoma"


def test_a_pdf_gives_its_text_layer(tmp_path: Path) -> None:
    assert "Chest radiographs, two classes" in read_document(
        _pdf(tmp_path / "a.pdf", "Chest radiographs, two classes")
    )


def test_an_encrypted_pdf_is_one_clear_error(tmp_path: Path) -> None:
    import pypdf

    writer = pypdf.PdfWriter(clone_from=_pdf(tmp_path / "plain.pdf", "secret labels"))
    writer.encrypt(user_password="pw", owner_password="owner", algorithm="RC4-128")
    with (tmp_path / "locked.pdf").open("wb") as out:
        writer.write(out)
    with pytest.raises(DocumentError, match="encrypted PDF"):
        read_document(tmp_path / "locked.pdf")


@pytest.mark.parametrize(
    ("name", "data", "reason"),
    [
        ("broken.pdf", b"%PDF-1.4\nnot really a pdf", "not a readable PDF"),
        ("broken.docx", b"PK\x03\x04 truncated", "not a readable .docx"),
    ],
)
def test_a_broken_document_is_one_line_naming_the_file(
    tmp_path: Path, name: str, data: bytes, reason: str
) -> None:
    (tmp_path / name).write_bytes(data)
    with pytest.raises(DocumentError) as caught:
        read_document(tmp_path / name)
    assert reason in str(caught.value) and name in str(caught.value) and "\n" not in str(caught.value)


def test_a_zip_that_is_no_word_document_says_so(tmp_path: Path) -> None:
    with zipfile.ZipFile(tmp_path / "x.docx", "w") as archive:
        archive.writestr("content.txt", "hello")
    with pytest.raises(DocumentError, match="not a Word document"):
        read_document(tmp_path / "x.docx")


def test_text_is_bounded_and_plain_files_are_decoded(tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_text("# Title\n" + "x" * 5000, encoding="utf-8")
    assert read_document(tmp_path / "notes.md", max_chars=100) == ("# Title\n" + "x" * 5000)[:100]
