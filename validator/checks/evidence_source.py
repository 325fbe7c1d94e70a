"""Evidence checks on the declared source: it lies inside the dataset, is the manifest's file, is named
consistently, re-renders like the written image, and has the declared dimension. None reads ground truth.

A source path is resolved inside the dataset root before anything opens it; a path that escapes (``..``,
absolute, a symlink out) fails `source_in_dataset` and every other check treats the source as unavailable.
The resolution helpers (`declared_source`, `read_options`, `read_target`, `image_alternates`) are shared with
`validator.checks.evidence_payload`.
"""

from __future__ import annotations

import posixpath
import re
import stat
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from benchmark.fields import DIMENSION, IMAGE_PATH, SOURCE_FILE
from medio.sniff import has_suffix
from validator import _raw
from validator.checks.render_range import clipped_cast
from validator.registry import check
from validator.report import CheckResult
from validator.sample import SampleView, stat_path
from validator.values import nonmissing, norm_dim, norm_text

SOURCE = SOURCE_FILE
SIBLING_KEYS = ("label_file", "mask_file", "seg_file", "bbox_file", "image_file", "source_image")


def _rel(value: str) -> str:
    return posixpath.normpath(value.strip().replace("\\", "/").lstrip("./")) if value.strip() else ""


def declared_source(sample: SampleView) -> tuple[Path | None, str]:
    """The declared source resolved inside the dataset, or None with the reason (never
    opens an escaping path)."""
    if "declared_source" not in sample.memo:
        sample.memo["declared_source"] = _declared_source(sample)
    result: tuple[Path | None, str] = sample.memo["declared_source"]
    return result


# Where a candidate may state its source besides extra.source_file (SPEC §3.2's trace keys, in this order).
ALT_SOURCE_KEYS = ("source_relative", "source_path", "source", "raw_file", "original_path", "source_image")
_NOTES_SOURCE = re.compile(r"(?:converted from|original file|source file|source)\s*:\s*(.+)", re.IGNORECASE)


def source_value(sample: SampleView) -> str | None:
    """The source path the candidate states: ``extra.source_file``, another source key of ``extra``, a path in
    ``provenance.notes`` ("Converted from: X"), or the manifest's file when ``original_filename`` names it.

    Args:
        sample: The candidate sample.

    Returns:
        The dataset-relative path as written (None when the candidate states none).
    """
    if "source_value" not in sample.memo:
        sample.memo["source_value"] = _source_value(sample)
    value: str | None = sample.memo["source_value"]
    return value


def _source_value(sample: SampleView) -> str | None:
    for key in ("source_file", *ALT_SOURCE_KEYS):
        value = sample.extra.get(key)
        if isinstance(value, str) and nonmissing(value):
            return value
    notes = sample.get("provenance.notes")
    match = _NOTES_SOURCE.search(notes) if isinstance(notes, str) else None
    if match is not None:
        text = re.split(r",\s*key\s*:", match.group(1), flags=re.IGNORECASE)[0].strip()
        words = text.split(" ")
        for n in range(len(words), 0, -1):  # "X by the rules baseline": the longest prefix that exists
            path = sample.dataset_path(" ".join(words[:n]))
            if path is not None and stat_path(path) is not None:
                return " ".join(words[:n])
        if sample.dataset_root is None:
            return text or None
    name = sample.extra.get("original_filename")
    manifest = sample.entry.relpath if sample.entry is not None else ""
    if isinstance(name, str) and manifest and name.strip() == manifest.rsplit("/", 1)[-1]:
        return manifest
    return None


def _declared_source(sample: SampleView) -> tuple[Path | None, str]:
    value = source_value(sample)
    if value is None:
        return None, f"{SOURCE} is missing (and no other source key or provenance note names one)"
    if sample.dataset_root is None:
        return None, "no dataset folder given, the source cannot be checked"
    path = sample.dataset_path(value)
    if path is None:
        return None, f"{SOURCE} {value!r} points outside the dataset; use a path relative to the dataset root"
    if stat_path(path) is None:
        return None, f"{SOURCE} {value!r} does not exist under the dataset"
    return path, ""


def read_options(sample: SampleView) -> dict[str, Any]:
    """medio.read options for the declared source: container key/index, frame, volume (a fresh dict).

    What the candidate declared wins. When it declared no key or record index and the source is a container
    with several image members or a file the manifest lists for several samples (records of one stack), the
    options are searched in the raw file instead, so that no check rewards agent-private fields: the record
    whose id member (``case_ids`` ...) holds the sample's subject/sample id, else the image member and record
    whose rendering correlates best with the written image.
    """
    if "read_options" not in sample.memo:
        declared = _read_options(sample)
        sample.memo["declared_read_options"] = declared
        sample.memo["read_options"] = declared  # guards against re-entry while the search runs
        sample.memo["read_options"] = _search_options(sample, declared)
    return dict(sample.memo["read_options"])


_ID_FIELDS = ("sample_id", "subject_id", "case_id", "patient_id", "record_id", "image_id")
_MAX_SEARCH = 64


def _search_options(sample: SampleView, declared: dict[str, Any]) -> dict[str, Any]:
    if declared.get("key") is not None and declared.get("index") is not None:
        return declared
    path, _ = declared_source(sample)
    if path is None or not _is_file(path):
        return declared
    facts = _raw.source_facts(path, declared)
    image_keys = [k for k in facts.keys if not any(w in k.lower() for w in _LABEL_WORDS)]
    keys: list[str | None] = [declared.get("key")]
    if declared.get("key") is None and len(image_keys) > 1:
        keys = list(image_keys[:_MAX_SEARCH])
    listed = _manifest_counts(sample)[0].get(_manifest_rel(sample), 0)
    stacked = declared.get("index") is None and listed > 1 and facts.ok and facts.axes.startswith("Z")
    if stacked:
        row = _record_by_id(sample, path, facts.keys)
        if row is not None:
            return {**declared, "index": row}
    dim = norm_dim(sample.get(DIMENSION))
    # A 2D sample of a multi-frame DICOM/TIFF/GIF that names no frame: which frame is searched too.
    framed = (
        not stacked
        and dim == "2d"
        and declared.get("frame") is None
        and facts.ok
        and facts.format in {"dicom", "tiff", "gif"}
        and facts.axes[:1] in ("Z", "T")
        and 1 < facts.shape[0] <= _MAX_SEARCH
    )
    if len(keys) == 1 and not stacked and not framed:
        return declared
    image = sample.image
    size = int(sample.option("ncc_size", 32))
    valid = image is not None and image.valid
    written = _raw.written_small(image.path, size, image.digest) if image is not None and valid else None
    if written is None:
        return declared
    slice_index, axis = _slice(sample)
    best: tuple[float, dict[str, Any]] = (-2.0, declared)
    option = "index" if stacked else "frame" if framed else ""
    for key in keys:
        opts = {**declared, "key": key} if key is not None else dict(declared)
        n = facts.shape[0] if option else 0
        for index in range(min(n, _MAX_SEARCH)) if n else [None]:
            trial = {**opts, option: index} if index is not None else opts
            rendered = _raw.source_render(path, trial, None if option else slice_index, axis, size)
            if not isinstance(rendered, str) and (r := _raw.ncc(rendered, written)) > best[0]:
                best = (r, trial)
    return best[1]


_LABEL_WORDS = ("label", "mask", "seg", "annot")


def _manifest_rel(sample: SampleView) -> str:
    return sample.entry.relpath if sample.entry is not None else ""


def _manifest_counts(sample: SampleView) -> tuple[Counter[str], Counter[str]]:
    """How many manifest samples name each file, and how many live in each folder (once per candidate)."""
    peers = sample.peers or []
    holder = peers[0].memo if peers else sample.memo
    if "manifest_counts" not in holder:
        paths = [p.entry.relpath for p in peers if p.entry is not None]
        holder["manifest_counts"] = (Counter(paths), Counter(posixpath.dirname(p) for p in paths))
    counts: tuple[Counter[str], Counter[str]] = holder["manifest_counts"]
    return counts


def _record_by_id(sample: SampleView, path: Path, keys: tuple[str, ...]) -> int | None:
    """The record of a stacked container whose id member holds one of the sample's ids (if exactly one)."""
    stated = [v for f in _ID_FIELDS for v in (sample.extra.get(f), sample.get(f"context.sample.{f}"))]
    ids = {str(v).strip() for v in stated}
    ids = {v for v in ids if nonmissing(v) and v != "None"}
    if not ids:
        return None
    for member, values in _raw.id_columns(path, keys).items():
        if _raw.is_label_member(member):
            continue
        rows = [k for k, v in enumerate(values) if v.strip() in ids]
        if len(rows) == 1:
            return rows[0]
    return None


def _read_options(sample: SampleView) -> dict[str, Any]:
    extra = sample.extra
    read = extra.get("read")
    declared: dict[str, Any] = read if isinstance(read, dict) else {}
    opts: dict[str, Any] = {k: declared.get(k) for k in ("key", "index", "frame", "series", "volume")}
    for name, keys in (
        ("key", ("source_key", "key", "dataset_key", "h5_key", "mat_key", "npz_key", "variable")),
        ("index", ("source_index", "record_index", "stack_index", "page_index", "row_index")),
        ("volume", ("volume_index",)),
    ):
        for k in keys:
            if (
                opts.get(name) is None
                and extra.get(k) is not None
                and not isinstance(extra.get(k), dict | list)
            ):
                opts[name] = extra[k]
    dim = norm_dim(sample.get(DIMENSION))
    frame = sample.get("media_geometry.spatial.video.frame_index")
    if opts.get("frame") is None and dim == "video" and isinstance(frame, int):
        opts["frame"] = frame
    return {k: v for k, v in opts.items() if v is not None}


def read_target(sample: SampleView, path: Path) -> Path:
    """What to read for the declared source: a 3D sample declared by one DICOM file of a series reads its
    folder (``extra.source_sample_dir`` when declared inside the dataset, else the file's parent)."""
    dim = norm_dim(sample.get(DIMENSION))
    if dim != "3d" or not _is_file(path) or path.suffix.lower() not in {".dcm", ".dicom", ""}:
        return path
    if _raw.source_facts(path, {}).axes.startswith("Z"):
        return path  # a multi-frame (enhanced) DICOM is a volume on its own
    folder = sample.dataset_path(sample.extra.get("source_sample_dir"))
    if folder is not None and folder.is_dir() and path.resolve().is_relative_to(folder):
        return folder
    siblings = [p for p in path.parent.iterdir() if p.suffix.lower() == path.suffix.lower()][:2]
    return path.parent if len(siblings) > 1 else path


def _is_file(path: Path) -> bool:
    st = stat_path(path)
    return st is not None and stat.S_ISREG(st.st_mode)


def image_alternates(sample: SampleView, path: Path) -> list[Path]:
    """Files the image may have been rendered from when the declared source is the label map (kits-style
    manifests list ``segmentation.nii``): a declared ``extra.image_file`` or same-format files beside it, when
    the folder is this sample's own (no other manifest sample lives there: those files would be theirs)."""
    if "image_alternates" in sample.memo:
        cached: list[Path] = sample.memo["image_alternates"]
        return cached
    out: list[Path] = []
    declared = sample.dataset_path(sample.extra.get("image_file") or sample.extra.get("source_image"))
    if declared is not None and declared.is_file():
        out.append(declared)
    labels = {_rel(v) for k in SIBLING_KEYS[:3] if isinstance(v := sample.extra.get(k), str)}
    if _rel(str(source_value(sample))) in labels and path.is_file() and not _shared_folder(sample, path):
        suffix = "".join(path.suffixes[-2:]) if has_suffix(path.name, ".gz") else path.suffix
        out += sorted(
            p
            for p in path.parent.iterdir()
            if p != path and has_suffix(p.name, suffix) and not p.is_symlink()
        )[:4]
    sample.memo["image_alternates"] = out
    return out


def _shared_folder(sample: SampleView, path: Path) -> bool:
    """Whether another manifest sample's file lies in ``path``'s folder."""
    if sample.entry is None or sample.dataset_root is None:
        return False
    folder = sample.dataset_path(posixpath.dirname(sample.entry.relpath) or ".")
    if folder is None or folder != path.parent:
        return False  # the source is not in the manifest file's folder: only that folder is counted
    return _manifest_counts(sample)[1][posixpath.dirname(sample.entry.relpath)] > 1


@check("source_in_dataset", weight=0.10, fields=(SOURCE,), high_risk=True)
def source_in_dataset(sample: SampleView) -> CheckResult:
    """extra.source_file exists under the dataset and is the manifest's file (or a declared sibling of it)."""
    if sample.annotation is None:
        return CheckResult.fail(sample.annotation_error, (SOURCE,))
    path, error = declared_source(sample)
    if path is None:
        hint = f"; the manifest lists {sample.entry.relpath!r}" if sample.entry is not None else ""
        return CheckResult.fail(error + hint, (SOURCE,))
    if sample.entry is None:
        return CheckResult.ok((SOURCE,))
    declared = _rel(str(source_value(sample)))
    manifest = sample.entry.relpath
    siblings = {_rel(v) for k in SIBLING_KEYS if isinstance(v := sample.extra.get(k), str)}
    folder_of_manifest = manifest.startswith(declared.rstrip("/") + "/")
    if declared == manifest or manifest in siblings or folder_of_manifest:
        return CheckResult.ok((SOURCE,))
    return CheckResult.fail(
        f"{SOURCE} is {declared!r} but the manifest lists {manifest!r} for index "
        f"{sample.index}; use the manifest's file (or declare it as label_file/mask_file)",
        (SOURCE,),
        score=0.3,
    )


@check("source_fields_present", weight=0.04, fields=(SOURCE, "context.sample.extra.original_filename"))
def source_fields_present(sample: SampleView) -> CheckResult:
    """extra.source_file and original_filename are filled, and original_filename is the source's basename."""
    fields = (SOURCE, "context.sample.extra.original_filename")
    if sample.annotation is None:
        return CheckResult.fail(sample.annotation_error, fields)
    src, orig = source_value(sample), sample.extra.get("original_filename")
    if not (isinstance(src, str) and nonmissing(src)):
        return CheckResult.fail(
            f"fill {SOURCE} with the raw file's path relative to the dataset root", fields
        )
    base = _rel(src).rsplit("/", 1)[-1]
    if not (isinstance(orig, str) and nonmissing(orig)):
        return CheckResult.fail(
            f"fill context.sample.extra.original_filename (here {base!r})", fields, score=0.5
        )
    if orig.strip() != base and _rel(orig) != _rel(src):
        return CheckResult.fail(
            f"original_filename {orig!r} is not the basename of source_file ({base!r})", fields, score=0.5
        )
    return CheckResult.ok(fields)


def _slice(sample: SampleView) -> tuple[int | None, int]:
    three = sample.block("media_geometry.spatial.three_d")
    index = three.get("slice_index")
    axis = three.get("slice_axis", 0)
    axis_num = (
        axis if isinstance(axis, int) else {"axial": 0, "coronal": 1, "sagittal": 2}.get(norm_text(axis), 0)
    )
    return (index if isinstance(index, int) and not isinstance(index, bool) else None), axis_num


_RENDER_FIELDS = (
    SOURCE,
    "media_geometry.spatial.three_d.slice_index",
    "media_geometry.spatial.video.frame_index",
    IMAGE_PATH,
)


@check("source_renders_like_image", weight=0.10, fields=_RENDER_FIELDS, high_risk=True)
def source_renders_like_image(sample: SampleView) -> CheckResult:
    """The source re-rendered at the declared slice/frame correlates with the written
    image (NCC ≥ threshold)."""
    fields = _RENDER_FIELDS
    if sample.annotation is None:
        return CheckResult.fail(sample.annotation_error, fields)
    image = sample.image
    if image is None or not image.valid:
        return CheckResult.fail(
            f"no openable image for index {sample.index} to compare with the source", fields
        )
    path, error = declared_source(sample)
    if path is None:
        return CheckResult.fail(f"cannot compare with the source: {error}", fields)
    size = int(sample.option("ncc_size", 32))
    threshold = float(sample.option("ncc_threshold", 0.8))
    slice_index, axis = _slice(sample)
    written = _raw.written_small(image.path, size, image.digest)
    if written is None:
        return CheckResult.fail("the written image cannot be decoded", fields)
    options = read_options(sample)
    rendered = _raw.source_render(read_target(sample, path), options, slice_index, axis, size)
    if isinstance(rendered, str):
        return CheckResult.fail(
            f"{rendered}; declare the container key/index (extra.source_key/source_index) or fix source_file",
            fields,
            score=0.5,
        )
    r = _raw.ncc(rendered, written)
    best_path = read_target(sample, path)
    for alt in image_alternates(sample, path) if r < threshold else []:
        other = _raw.source_render(alt, options, slice_index, axis, size)
        if not isinstance(other, str) and (r_alt := _raw.ncc(other, written)) > r:
            r, best_path = r_alt, alt
    if r < threshold:
        return CheckResult(
            max(0.0, r) * 0.5,
            f"the image does not look like {source_value(sample)!r} at "
            f"slice {slice_index} / frame {read_options(sample).get('frame')} (NCC {r:.2f} < "
            f"{threshold}); re-render it from the declared source, slice and frame",
            fields,
            {"ncc": round(r, 4)},
        )
    mine = _raw.render_stats(best_path, options, slice_index, axis, size)
    written_stats = _raw.written_stats(image.path, size, image.digest)
    exact = mine is not None and written_stats is not None and mine.digest == written_stats.digest
    neighbour = None if exact else _closer_neighbour(sample, written, written_stats, r, size)
    if neighbour is not None:
        other_index, r_other = neighbour
        return CheckResult(
            0.25,
            f"the image looks more like the source of sample {other_index} (NCC {r_other:.2f}) than like "
            f"{source_value(sample)!r} (NCC {r:.2f}); write this sample's own image",
            fields,
            {"ncc": round(r, 4), "neighbour": other_index},
        )
    if mine is not None and written_stats is not None:
        size_differs = (written_stats.width, written_stats.height) != (mine.width, mine.height)
        if size_differs and not _resampled(sample):
            return CheckResult(
                0.5,
                f"the image is {written_stats.width}×{written_stats.height} but the source renders at "
                f"{mine.width}×{mine.height}; write it at the source's size (or declare was_resampled: true)",
                fields,
                {"ncc": round(r, 4)},
            )
        clip = float(sample.option("saturation_margin", 0.3))
        if written_stats.saturated - mine.saturated > clip:
            return CheckResult(
                0.5,
                f"{written_stats.saturated:.0%} of the image's pixels are black or white but "
                f"{mine.saturated:.0%} of the source's rendering are: a clipped window; render the full "
                "range",
                fields,
                {"ncc": round(r, 4)},
            )
        shares = _raw.range_shares(best_path, options, slice_index, axis, size)
        cast = _raw.cast_render(best_path, options, slice_index, axis, size)
        versus = (_raw.ncc(cast[0], written) - r, cast[1]) if cast is not None else None
        if (clipped := clipped_cast(shares, written_stats, mine, versus)) is not None:
            return CheckResult(0.5, clipped, fields, {"ncc": round(r, 4), "clipped_cast": True})
    return CheckResult(1.0, "", fields, {"ncc": round(r, 4)})


def _resampled(sample: SampleView) -> bool:
    spatial = sample.block("media_geometry.spatial")
    return any(isinstance(b, dict) and b.get("was_resampled") is True for b in spatial.values())


@dataclass(frozen=True)
class _PeerRenders:
    """Every peer's own source renderings: owner index, identity, unit-norm centred rows, rows by pixel
    digest."""

    owners: list[int]
    idents: list[Any]
    matrix: np.ndarray | None
    by_digest: dict[bytes, list[int]]


def _render_candidates(sample: SampleView) -> list[tuple[Path, dict[str, Any], int | None, int]]:
    """What the sample's image may be a rendering of: its read target and the image files beside a label
    source, with the sample's read options and plane."""
    path, _ = declared_source(sample)
    slice_index, axis = _slice(sample)
    if path is None:
        # The manifest names the sample's file even when the candidate's JSON does not (or is broken).
        listed = sample.dataset_path(sample.entry.relpath) if sample.entry is not None else None
        return [(listed, {}, slice_index, axis)] if listed is not None and _is_file(listed) else []
    options = read_options(sample)
    paths = [read_target(sample, path), *image_alternates(sample, path)]
    return [(p, options, slice_index, axis) for p in dict.fromkeys(paths)]


def _peer_renders(sample: SampleView, size: int) -> _PeerRenders | None:
    """The renderings each peer's own check makes (its declared source, options, plane), computed once per
    candidate and held in the first peer's memo; no extra reads beyond what the peers' checks do."""
    peers = sample.peers or []
    if len(peers) < 2:
        return None
    holder = peers[0].memo
    key = f"peer_renders:{size}"
    if key not in holder:
        owners: list[int] = []
        idents: list[Any] = []
        rows: list[np.ndarray] = []
        digests: list[bytes] = []
        for peer in peers:
            for target, options, slice_index, axis in _render_candidates(peer):
                rendered = _raw.source_render(target, options, slice_index, axis, size)
                if isinstance(rendered, str):
                    continue
                centred = (rendered - rendered.mean()).ravel()
                norm = float(np.sqrt(np.dot(centred, centred)))
                stats = _raw.render_stats(target, options, slice_index, axis, size)
                owners.append(peer.index)
                idents.append(_ident(target, options, slice_index))
                rows.append(centred / norm if norm >= 1e-6 else np.zeros_like(centred))
                digests.append(stats.digest if stats is not None else b"")
        by_digest: dict[bytes, list[int]] = {}
        for k, digest in enumerate(digests):
            if digest:
                by_digest.setdefault(digest, []).append(k)
        holder[key] = _PeerRenders(owners, idents, np.stack(rows) if rows else None, by_digest)
    result: _PeerRenders = holder[key]
    return result


def _ident(target: Path, options: dict[str, Any], slice_index: int | None) -> Any:
    return (str(target), tuple(sorted((k, repr(v)) for k, v in options.items())), slice_index)


def _closer_neighbour(
    sample: SampleView, written: np.ndarray, stats: _raw.PixelStats | None, r_own: float, size: int
) -> tuple[int, float] | None:
    """Another sample whose source rendering the written image is (pixel for pixel), or that correlates
    clearly better with it than this sample's own source."""
    table = _peer_renders(sample, size)
    if table is None or table.matrix is None:
        return None
    mine = {_ident(*c[:3]) for c in _render_candidates(sample)}

    def other(k: int) -> bool:
        return table.owners[k] != sample.index and table.idents[k] not in mine

    if stats is not None and stats.digest:
        for k in table.by_digest.get(stats.digest, ()):
            if other(k):
                return table.owners[k], 1.0
    centred = (written - written.mean()).ravel()
    norm = float(np.sqrt(np.dot(centred, centred)))
    if norm < 1e-6:
        return None
    scores = table.matrix @ (centred / norm)
    margin = float(sample.option("neighbour_margin", 0.05))
    for k in np.argsort(-scores):  # best first; stop at the first row that is not this sample's own
        if scores[k] <= r_own + margin:
            return None
        if other(int(k)):
            return table.owners[int(k)], float(scores[k])
    return None


@check("dimension_matches_source", weight=0.05, fields=(DIMENSION,), high_risk=True)
def dimension_matches_source(sample: SampleView) -> CheckResult:
    """The declared dimension matches the source array's rank and frame count (and the
    volume shape, if given)."""
    fields = (DIMENSION, "media_geometry.spatial.three_d.volume_shape_voxels")
    if sample.annotation is None:
        return CheckResult.fail(sample.annotation_error, fields)
    path, error = declared_source(sample)
    if path is None:
        return CheckResult(1.0, "", fields, {"skipped": error})  # source_in_dataset already reports it
    options = read_options(sample)
    if sample.memo.get("declared_read_options", {}).get("frame") is None:
        options.pop("frame", None)  # a searched frame shows what the image is, not what the source is
    facts = _raw.source_facts(read_target(sample, path), options)
    if not facts.ok:
        return CheckResult(1.0, "", fields, {"skipped": facts.error})
    declared = norm_dim(sample.get(DIMENSION))
    allowed = _source_dims(facts)
    if declared not in allowed:
        return CheckResult.fail(
            f"media.dimension is {declared!r} but the source ({facts.format}, axes "
            f"{facts.axes}, shape {list(facts.shape)}) is {' or '.join(sorted(allowed))}",
            fields,
        )
    shape = sample.get("media_geometry.spatial.three_d.volume_shape_voxels")
    numbers = [int(s) for s in shape if isinstance(s, int | float)] if isinstance(shape, list) else []
    expected = list(facts.shape[:3])
    # (z, h, w) as the array is, (x, y, z) as NIfTI headers and the benchmark's examples list it, or (h, w, z)
    orders = (expected, expected[::-1], [*expected[1:], expected[0]])
    if declared == "3d" and facts.axes.startswith("Z") and shape is not None and numbers not in orders:
        return CheckResult.fail(
            f"three_d.volume_shape_voxels {shape} differs from the source's {expected} (z, h, w)",
            fields,
            score=0.5,
        )
    return CheckResult.ok(fields)


def _source_dims(facts: _raw.SourceFacts) -> set[str]:
    if facts.axes.startswith("T") and facts.format == "dicom":
        return {"video", "2d"}  # a multi-frame (cine) DICOM: the loop, or one frame of it
    if facts.axes.startswith("T") or (facts.format == "video"):
        return {"video"}
    multi = facts.n_frames is not None and facts.n_frames > 1
    if facts.axes.startswith("Z") and facts.shape and facts.shape[0] > 1:
        return {"3d", "video"} if facts.format == "dicom" and multi else {"3d"}
    if multi and facts.format in {"dicom", "gif", "tiff", "nifti"}:
        return {
            "2d",
            "3d",
            "video",
        }  # one decoded frame of a multi-frame source: either reading is defensible
    return {"2d"}
