"""Identify a file's format: by extension first, then by its magic bytes."""

from __future__ import annotations

import gzip
import zlib
from os import PathLike
from pathlib import Path

from medio.errors import EmptyFile, MedioError, UnsupportedFormat

# Format family → its suffixes; longest first where one ends another's (".nii.gz" is tried before ".gz").
_SUFFIXES: dict[str, tuple[str, ...]] = {
    "nifti": (".nii.gz", ".nii"),
    # Other volume formats nibabel reads (medio.nifti.NIBABEL_SUFFIXES); .hdr/.img/.v are checked by content.
    "nibabel": (".brik.gz", ".brik", ".head", ".mnc", ".mgz", ".mgh", ".par", ".rec"),
    "dicom": (".dcm", ".dicom", ".ima"),
    "itk": (".mha", ".mhd", ".nrrd", ".nhdr"),
    "tiff": (".tif", ".tiff"),
    "bitmap": (".png", ".jpg", ".jpeg", ".bmp", ".pgm", ".ppm", ".pbm", ".pnm", ".gif"),
    "npy": (".npy",),
    "npz": (".npz",),
    "hdf5": (".h5", ".hdf5", ".hdf"),
    "matlab": (".mat",),
    "czi": (".czi",),
    "table": (".parquet", ".pq", ".csv", ".tsv"),
    "video": (".avi", ".mp4", ".mov", ".m4v", ".mkv", ".webm"),
}
# Suffix → family, tried in this order.
EXTENSIONS: dict[str, str] = {suffix: family for family, suffixes in _SUFFIXES.items() for suffix in suffixes}

HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"
APPLEDOUBLE_MAGIC = b"\x00\x05\x16\x07"  # RFC 1740
# Names an ENVI header or data file may have (the pair is recognised by the header's first line "ENVI").
_ENVI_SUFFIXES = (".hdr", ".dat", ".img", ".raw", ".bsq", ".bil", ".bip", ".sli")
_PAR_MAGIC = b"# === DATA DESCRIPTION FILE"
_HEAD_BYTES = 1100


# Suffixes made of two dot-parts that name one format; a plain rsplit on "." would cut them in half.
COMPOUND_SUFFIXES = (".nii.gz", ".seg.nrrd", ".ome.tiff", ".ome.tif", ".tar.gz")


def split_suffix(name: str) -> tuple[str, str]:
    """Split a file name (or path) into its stem and its possibly compound suffix.

    Args:
        name: A file name or a ``/``-separated path; only the last part is used.

    Returns:
        ``(stem, suffix)``; the suffix keeps its case and is ``""`` when there is none (a leading dot,
        as in ``.hidden``, is not a suffix).

    Example:
        >>> split_suffix("data/case_1/image.nii.gz")
        ('image', '.nii.gz')
    """
    base = name.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]
    lower = base.lower()
    for ext in COMPOUND_SUFFIXES:
        if lower.endswith(ext) and len(base) > len(ext):
            return base[: -len(ext)], base[-len(ext) :]
    if "." in base[1:]:
        stem, ext = base.rsplit(".", 1)
        return stem, "." + ext
    return base, ""


def has_suffix(name: str | PathLike[str], suffixes: str | tuple[str, ...]) -> bool:
    """Whether a file name ends with one of ``suffixes``, ignoring case (``.TIF`` is ``.tif``, ``.NII.GZ`` is
    ``.nii.gz``): real datasets mix both, so no extension test in the project compares case.

    Args:
        name: A file name or path.
        suffixes: One suffix or several, written in lower case with their dot.

    Returns:
        True when the name ends with one of them.

    Example:
        >>> has_suffix("scans/CASE1.NII.GZ", ".nii.gz"), has_suffix("a.TIF", (".tif", ".tiff"))
        (True, True)
    """
    wanted = (suffixes,) if isinstance(suffixes, str) else suffixes
    return str(name).lower().endswith(tuple(s.lower() for s in wanted))


def sniff(path: str | Path) -> str:
    """Return the format family of ``path``.

    A folder is a DICOM series. A known extension decides directly (``.mat`` is refined to v5 or v7.3 by its
    header); otherwise the magic bytes are read.

    Args:
        path: A file or folder.

    Returns:
        One of ``"dicom"``, ``"dicom_series"``, ``"nifti"``, ``"nibabel"`` (MINC, MGH, PAR/REC, AFNI, ECAT,
        Analyze), ``"itk"``, ``"tiff"``, ``"bitmap"``, ``"npy"``,
        ``"npz"``, ``"hdf5"``, ``"matlab"``, ``"table"``, ``"video"``, ``"czi"``, ``"envi"`` (header or data
        file of a pair), ``"appledouble"`` (a macOS ``._`` stub, read as its real sibling).

    Raises:
        MedioError: The path does not exist.
        EmptyFile: The file has zero bytes.
        UnsupportedFormat: Neither extension nor magic bytes are recognised.
    """
    p = Path(path)
    if p.is_dir():
        return "dicom_series"
    if not p.exists():
        raise MedioError(p, "no such file or folder")
    if p.stat().st_size == 0:
        raise EmptyFile(p, "the file is empty (0 bytes)")
    name = p.name.lower()
    if name.startswith("._") and _is_appledouble(p):
        return "appledouble"  # before the extension: "._scan.tiff" is metadata, not a TIFF
    for suffix, family in EXTENSIONS.items():
        if name.endswith(suffix):
            return family
    with p.open("rb") as fh:
        head = fh.read(_HEAD_BYTES)
    if name.endswith(_ENVI_SUFFIXES) and _is_envi(p):
        return "envi"
    if name.endswith((".hdr", ".img", ".img.gz")):
        found = _analyze_pair(p, head)
        if found is not None:
            return found
    found = sniff_bytes(head)
    if found is None and "." not in name.lstrip(".") and _is_envi(p):
        return "envi"  # an ENVI data file without extension (its header is "<name>.hdr")
    if found is None and head[:2] == b"\x1f\x8b":
        found = _sniff_gzip(p)
    if found is None:
        raise UnsupportedFormat(
            p,
            f"unknown extension {p.suffix or '(none)'!r} and no known magic bytes (starts with {head[:8]!r})",
        )
    return found


def sniff_bytes(head: bytes) -> str | None:
    """Recognise a format from the first bytes of a file.

    Args:
        head: At least the first 1100 bytes when available (DICOM's tag sits at 128, NIfTI-1's at 344, an HDF5
            signature after a MATLAB 512-byte userblock).

    Returns:
        The format family, or ``None`` when nothing matches.
    """
    if head[128:132] == b"DICM":
        return "dicom"
    if head.startswith(b"ZISRAWFILE"):
        return "czi"
    if head.startswith(APPLEDOUBLE_MAGIC):
        return "appledouble"
    if head[344:348] in (b"n+1\x00", b"ni1\x00") or head[4:8] in (b"n+2\x00", b"ni2\x00"):
        return "nifti"
    if head.startswith((b"MATRIX6", b"MATRIX7", b"CDF\x01", b"CDF\x02")) or head.startswith(_PAR_MAGIC):
        return "nibabel"  # ECAT 6/7, MINC1 (netCDF classic), Philips PAR header
    if head.startswith(b"MATLAB"):
        return "matlab"
    if head.startswith(HDF5_SIGNATURE) or head[512:520] == HDF5_SIGNATURE:
        return "hdf5"
    if head.startswith(b"\x93NUMPY"):
        return "npy"
    if head.startswith(b"PK\x03\x04"):
        return "npz"
    if head.startswith(b"PAR1"):
        return "table"
    if head.startswith((b"II*\x00", b"MM\x00*", b"II+\x00", b"MM\x00+")):
        return "tiff"
    if head.startswith((b"\x89PNG", b"\xff\xd8\xff", b"GIF87a", b"GIF89a")):
        return "bitmap"
    if _looks_like_bmp(head) or _looks_like_pnm(head):
        return "bitmap"
    if head.startswith(b"RIFF") and head[8:12] == b"AVI ":
        return "video"
    if head[4:8] == b"ftyp" or head.startswith(b"\x1aE\xdf\xa3"):
        return "video"
    if head.startswith(b"NRRD") or head.startswith((b"ObjectType", b"NDims")):
        return "itk"
    if _looks_like_raw_dicom(head):
        return "dicom"
    if _looks_like_delimited_text(head):
        return "table"
    return None


def _is_envi(path: Path) -> bool:
    from medio.envi import header_of

    return header_of(path) is not None


def _is_appledouble(path: Path) -> bool:
    with path.open("rb") as fh:
        return fh.read(4) == APPLEDOUBLE_MAGIC


def _looks_like_bmp(head: bytes) -> bool:
    # "BM" alone is two printable bytes that many files start with; a BMP also has a known DIB header size at
    # 14 and a positive width and height (Microsoft BITMAPINFOHEADER family). Without these checks an unknown
    # file went to Pillow, which read a width and height of millions from random bytes.
    if not head.startswith(b"BM") or len(head) < 26:
        return False
    dib = int.from_bytes(head[14:18], "little")
    if dib == 12:
        width, height = int.from_bytes(head[18:20], "little"), int.from_bytes(head[20:22], "little")
    elif dib in (40, 52, 56, 64, 108, 124):
        width = int.from_bytes(head[18:22], "little", signed=True)
        height = abs(int.from_bytes(head[22:26], "little", signed=True))
    else:
        return False
    return 0 < width <= 65535 and 0 < height <= 65535


def _looks_like_pnm(head: bytes) -> bool:
    # Netpbm: "P1".."P6", whitespace, then the width (comments may come first).
    if head[:2] not in (b"P1", b"P2", b"P3", b"P4", b"P5", b"P6") or head[2:3] not in (
        b"\n",
        b" ",
        b"\r",
        b"\t",
    ):
        return False
    fields = b" ".join(ln.split(b"#", 1)[0] for ln in head[2:256].splitlines()).split()
    return len(fields) >= 2 and fields[0].isdigit() and fields[1].isdigit()


def analyze_header(path: Path) -> Path:
    """The ``.hdr`` beside an Analyze-style ``.img``/``.img.gz`` (any case), else ``path`` itself."""
    if path.name.lower().endswith((".img", ".img.gz")):
        base = path.name[: -len(".img.gz")] if path.name.lower().endswith(".gz") else path.stem
        for ext in (".hdr", ".HDR"):
            if path.with_name(base + ext).is_file():
                return path.with_name(base + ext)
    return path


def _analyze_pair(path: Path, head: bytes) -> str | None:
    """``nifti`` or ``nibabel`` (Analyze 7.5) for a ``.hdr``/``.img`` pair, judged by the header size."""
    hdr = analyze_header(path)
    if hdr != path:
        with hdr.open("rb") as fh:
            head = fh.read(_HEAD_BYTES)
    elif not path.name.lower().endswith(".hdr"):
        return None
    size = head[:4]
    if size in (b"\x1c\x02\x00\x00", b"\x00\x00\x02\x1c"):  # 540: NIfTI-2
        return "nifti"
    if size in (b"\x5c\x01\x00\x00", b"\x00\x00\x01\x5c"):  # 348: NIfTI-1 pair or Analyze 7.5
        return "nifti" if head[344:348] in (b"ni1\x00", b"n+1\x00") else "nibabel"
    return None


def _looks_like_raw_dicom(head: bytes) -> bool:
    # A DICOM data set written without the 128-byte preamble starts with a little-endian group 0002 or 0008
    # element (PS3.10 7.1 makes the preamble mandatory, but many exporters drop it).
    if len(head) < 8:
        return False
    group = int.from_bytes(head[0:2], "little")
    element = int.from_bytes(head[2:4], "little")
    return group in (0x0002, 0x0008) and element < 0x0100


def _looks_like_delimited_text(head: bytes) -> bool:
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError:
        # The head may end in the middle of a multi-byte character.
        try:
            text = head[:-4].decode("utf-8")
        except UnicodeDecodeError:
            return False
    lines = [ln for ln in text.splitlines()[:5] if ln.strip()]
    if len(lines) < 2:
        return False
    for sep in (",", "\t", ";"):
        counts = {ln.count(sep) for ln in lines[:-1]}
        if len(counts) == 1 and counts.pop() > 0:
            return True
    return False


def _sniff_gzip(path: Path) -> str | None:
    try:
        with gzip.open(path, "rb") as fh:
            inner = fh.read(_HEAD_BYTES)
    except (OSError, EOFError, zlib.error):
        return None
    return "nifti" if sniff_bytes(inner) == "nifti" else None
