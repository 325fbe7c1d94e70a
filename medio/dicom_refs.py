"""Find the images a derived DICOM object (SR, SEG, RTSTRUCT) references, by UID, in its folder tree.

Derived objects name their images by SOP Instance UID (and their series by Series Instance UID), never by
path (PS3.3 C.12.1, C.8.20.2, C.8.8.5). The images usually sit beside the object or in a sibling series
folder of the same study, so the search starts in the object's own folder and climbs one parent at a time,
nearest first, and stops as soon as every UID is found.

Bounds: at most :data:`MAX_LEVELS` parents, never above a folder named ``data`` (the raw-data root of a
benchmark dataset, SPEC §3), and at most :data:`MAX_INDEX_FILES` headers read per search. Each folder's
index (its DICOM files' instance UIDs, from the file meta only) is cached by folder and modification time,
and each image's geometry by file and modification time: many SEG files beside one series read it once.
"""

from __future__ import annotations

import functools
import logging
import os
import struct
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Concatenate, ParamSpec, TypeVar

import numpy as np

from medio import _dicom_tags as tags
from medio.errors import CorruptFile, MedioError

log = logging.getLogger(__name__)

MAX_LEVELS = 4
MAX_INDEX_FILES = 20000
# The raw-data folder of a benchmark dataset (`<dataset>/data/...`): references never leave it.
DATA_ROOT_NAME = "data"

_SOP_INSTANCE_UID = 0x00080018
_SERIES_INSTANCE_UID = 0x0020000E


@dataclass(frozen=True)
class Instance:
    """One DICOM file of the index: its path and UIDs (the series UID only in a series search)."""

    path: Path
    sop_instance_uid: str
    series_instance_uid: str


@dataclass
class Found:
    """What a search found: instances by SOP Instance UID, and where it looked.

    Attributes:
        instances: ``{sop_instance_uid: Instance}`` for the UIDs found.
        root: The highest folder searched.
        scanned: How many file headers the search read (cached folders count too).
        series: ``{series_instance_uid: [Instance, ...]}`` of every indexed file, for the series asked for.
    """

    instances: dict[str, Instance] = field(default_factory=dict)
    root: Path | None = None
    scanned: int = 0
    series: dict[str, list[Instance]] = field(default_factory=dict)

    def missing(self, uids: Iterable[str]) -> list[str]:
        """The UIDs of ``uids`` that were not found."""
        return [u for u in uids if u not in self.instances]


_P = ParamSpec("_P")
_T = TypeVar("_T")


def reports_damage(
    func: Callable[Concatenate[str | Path, _P], _T],
) -> Callable[Concatenate[str | Path, _P], _T]:
    """Wrap a reader of one derived object (first argument: its path): pydicom's errors from a damaged data
    set become ``CorruptFile`` naming the path.

    pydicom parses sequence items when they are first accessed, so a truncated SEG or RTSTRUCT may open
    cleanly and fail (``OSError: No tag to read ...``) only when its segments or contours are read.
    """

    @functools.wraps(func)
    def wrapper(path: str | Path, /, *args: _P.args, **kwargs: _P.kwargs) -> _T:
        try:
            return func(path, *args, **kwargs)
        except MedioError:
            raise
        except (OSError, EOFError, ValueError, KeyError, IndexError, TypeError, struct.error) as exc:
            reason = f"malformed DICOM data set ({type(exc).__name__}: {exc})"
            raise CorruptFile(Path(path), reason) from exc

    return wrapper


def _search_roots(start: Path) -> list[Path]:
    """The folders to search, nearest first: the object's folder, then its parents (bounded)."""
    folder = start.parent if start.is_file() else start
    roots = [folder]
    while len(roots) <= MAX_LEVELS and folder.name != DATA_ROOT_NAME and folder.parent != folder:
        folder = folder.parent
        roots.append(folder)
    return roots


def _read_uids(path: Path, deep: bool) -> tuple[str, str] | None:
    """(SOP Instance UID, Series Instance UID or "") from the first header elements; None when not DICOM.

    The SOP Instance UID is also the file meta's Media Storage SOP Instance UID (PS3.10 7.1), read without
    touching the data set; the Series Instance UID comes after all of groups 0008-0018 (a hundred elements in
    a CT header), so it is read only when ``deep``.
    """
    from pydicom.filereader import read_file_meta_info, read_partial

    if not deep:
        try:
            meta_uid = str(read_file_meta_info(path).get("MediaStorageSOPInstanceUID") or "").strip()
        except Exception:  # no or damaged file meta: the data set is read below
            meta_uid = ""
        if meta_uid:
            return meta_uid, ""
    last = _SERIES_INSTANCE_UID if deep else _SOP_INSTANCE_UID

    def past_series_uid(tag: int, vr: str | None, length: int) -> bool:
        return tag > last

    try:
        with path.open("rb") as fh:
            ds = read_partial(fh, stop_when=past_series_uid, force=True)
        sop = str(ds.get("SOPInstanceUID") or "").strip()
        series = str(ds.get("SeriesInstanceUID") or "").strip()
    except Exception as exc:  # an unreadable file is simply not a candidate (it is reported when read)
        log.debug("no UIDs in %s: %s", path, exc)
        return None
    return (sop, series) if sop else None


@functools.lru_cache(maxsize=4096)
def _folder_index(folder: str, mtime_ns: int, deep: bool) -> tuple[Instance, ...]:
    """The DICOM files directly in ``folder`` (cached per folder version: ``mtime_ns`` keeps it fresh)."""
    from medio.dicom import is_dicom_file

    out = []
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return ()
    for name in names:
        path = Path(folder) / name
        if name.startswith(".") or not path.is_file() or not is_dicom_file(path):
            continue
        uids = _read_uids(path, deep)
        if uids is not None:
            out.append(Instance(path, *uids))
    return tuple(out)


def _index(folder: Path, deep: bool = False) -> tuple[Instance, ...]:
    try:
        mtime = folder.stat().st_mtime_ns
    except OSError:
        return ()
    return _folder_index(str(folder), mtime, deep)


def find_instances(start: Path, uids: Iterable[str], *, series_uids: Iterable[str] = ()) -> Found:
    """Find the files holding the SOP Instance UIDs ``uids`` in the folder tree around ``start``, and every
    indexed file of the series ``series_uids`` (``Found.series``: an RTSTRUCT whose contours name no image).

    UIDs not found are absent from the result (``Found.missing``); the object itself is never a reference.
    """
    wanted = {u for u in uids if u}
    want_series = {s for s in series_uids if s}
    found = Found()
    seen: set[Path] = set()
    start = start.resolve()
    for root in _search_roots(start):
        found.root = root
        for dirpath, dirnames, _files in os.walk(root):
            dirnames.sort()
            folder = Path(dirpath)
            if folder in seen:
                dirnames.clear()  # a subtree searched at the level below
                continue
            seen.add(folder)
            entries = _index(folder, deep=bool(want_series))
            found.scanned += len(entries)
            for entry in entries:
                if entry.path == start:
                    continue
                if entry.sop_instance_uid in wanted:
                    found.instances[entry.sop_instance_uid] = entry
                if entry.series_instance_uid in want_series:
                    found.series.setdefault(entry.series_instance_uid, []).append(entry)
            # Series members cannot be known to be complete, so a series search finishes its level's tree.
            complete = not want_series and wanted <= found.instances.keys()
            if complete or found.scanned >= MAX_INDEX_FILES:
                return found
    return found


@dataclass(frozen=True)
class SliceGeometry:
    """Where an image's pixels lie in patient space (PS3.3 C.7.6.2.1.1), from its header.

    Attributes:
        path: The image file.
        sop_instance_uid: Its SOP Instance UID.
        rows: Rows.
        columns: Columns.
        position: ImagePositionPatient: the centre of the first pixel, in mm.
        orientation: ImageOrientationPatient: row direction cosines, then column direction cosines.
        spacing: PixelSpacing: (row spacing, column spacing) in mm, i.e. between rows, between columns.
        series_instance_uid: Its Series Instance UID.
        n_frames: NumberOfFrames (an enhanced multi-frame image holds a whole series in one file).
    """

    path: Path
    sop_instance_uid: str
    rows: int
    columns: int
    position: tuple[float, ...]
    orientation: tuple[float, ...]
    spacing: tuple[float, float]
    series_instance_uid: str = ""
    n_frames: int = 1

    @property
    def normal(self) -> np.ndarray:
        """The slice normal (row cosine × column cosine)."""
        return np.cross(np.asarray(self.orientation[:3]), np.asarray(self.orientation[3:]))

    def to_pixels(self, points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Patient coordinates (N, 3) in mm to (row, column) pixel coordinates of this slice.

        Inverts P = S + c·Δc·X + r·Δr·Y (PS3.3 C.7.6.2.1.1: X the row cosine, Δc the column spacing
        PixelSpacing[1]; Y the column cosine, Δr the row spacing PixelSpacing[0]).
        """
        offset = points - np.asarray(self.position)
        col = offset @ np.asarray(self.orientation[:3]) / self.spacing[1]
        row = offset @ np.asarray(self.orientation[3:]) / self.spacing[0]
        return row, col


def slice_heights(geometries: list[SliceGeometry]) -> tuple[np.ndarray, float | None]:
    """Each slice's height along the first slice's normal (in the order given), and the median gap between
    neighbouring slices (None for a single slice).
    """
    along = np.asarray([float(np.dot(g.position, geometries[0].normal)) for g in geometries])
    gaps = np.abs(np.diff(np.sort(along)))
    return along, float(np.median(gaps)) if len(gaps) else None


def nearest_slice(along: np.ndarray, gap: float | None, height: float) -> int | None:
    """The slice nearest ``height`` (see `slice_heights`), when within half a slice gap of it (else None): a
    plane closer to one slice than to its neighbours belongs to it."""
    distances = np.abs(along - height)
    k = int(np.argmin(distances))
    return k if distances[k] <= (gap / 2 if gap is not None else 0.5) else None


def slice_geometry(path: Path) -> SliceGeometry:
    """An image's geometry from its header; ``CorruptFile`` when it lacks ImagePositionPatient,
    ImageOrientationPatient, PixelSpacing or the size, ``MedioError`` when it cannot be parsed.
    """
    from medio.dicom import open_dataset

    ds, _ = open_dataset(path, stop_before_pixels=True)
    position, orientation = tags.position(ds, 0), tags.orientation(ds, 0)
    spacing = tags.pixel_spacing(ds)
    rows, columns = ds.get("Rows"), ds.get("Columns")
    lacking = [
        name
        for name, value in (
            ("ImagePositionPatient", position),
            ("ImageOrientationPatient", orientation),
            ("PixelSpacing", spacing),
            ("Rows/Columns", rows and columns),
        )
        if not value
    ]
    if lacking or position is None or orientation is None or spacing is None:
        raise CorruptFile(path, f"image has no patient geometry ({', '.join(lacking)} missing)")
    return SliceGeometry(
        path,
        tags.text(ds, "SOPInstanceUID") or "",
        int(rows),
        int(columns),
        position,
        orientation,
        spacing,
        tags.text(ds, "SeriesInstanceUID") or "",
        int(tags.first_float(ds.get("NumberOfFrames")) or 1),
    )


@functools.lru_cache(maxsize=65536)
def _cached_geometry(path: str, mtime_ns: int, size: int) -> SliceGeometry | None:
    # Many SEG/RTSTRUCT files beside one series read its headers once (the key changes when the file does).
    try:
        return slice_geometry(Path(path))
    except MedioError as exc:
        log.debug("file without patient geometry: %s", exc)
        return None


def geometries_of(files: Iterable[Path]) -> list[SliceGeometry]:
    """The geometries (cached per file version) of the files that have one, in name order (the others with a
    debug log).
    """
    out = []
    for file in sorted(set(files)):
        try:
            stat = file.stat()
        except OSError:
            continue
        geometry = _cached_geometry(str(file), stat.st_mtime_ns, stat.st_size)
        if geometry is not None:
            out.append(geometry)
    return out


def ordered_geometries(geometries: list[SliceGeometry]) -> list[SliceGeometry]:
    """A series' slices (in file name order) along the slice normal, as `medio.dicom_series.read_series`
    stacks them.
    """
    from medio.dicom_series import _slice_order

    orientation = geometries[0].orientation if geometries else None
    order, _ = _slice_order([g.position for g in geometries], orientation, [None] * len(geometries))
    return [geometries[i] for i in order]


def referenced_series(
    obj: Path, uids: Iterable[str], series_uids: Iterable[str] = ()
) -> tuple[list[SliceGeometry], Found]:
    """The ordered slices of the series an object references, found in its folder tree, and the search result.

    The series is the one holding most of the referenced instances ``uids`` (else the first of ``series_uids``
    found); its every file in the folders searched makes the volume, so a label map built on it lines up slice
    by slice with the series as :func:`medio.dicom_series.read_series` reads it. Empty when nothing was found.
    """
    uids = [u for u in dict.fromkeys(uids) if u]
    found = find_instances(obj, uids, series_uids=series_uids)
    if found.instances:
        # Every image file in the folders holding a referenced instance; their headers tell the series.
        folders = {i.path.parent for i in found.instances.values()}
        candidates = geometries_of(e.path for f in folders for e in _index(f) if e.path != obj.resolve())
        votes: dict[str, int] = {}
        for g in candidates:
            if g.sop_instance_uid in found.instances:
                votes[g.series_instance_uid] = votes.get(g.series_instance_uid, 0) + 1
        best = max(votes, key=lambda s: votes[s]) if votes else None
        chosen = [g for g in candidates if g.series_instance_uid == best]
    else:
        members = next((m for m in found.series.values() if m), [])
        chosen = geometries_of(i.path for i in members)
    return (ordered_geometries(chosen) if chosen else []), found
