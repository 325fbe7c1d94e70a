"""The bundled synthetic suite: coverage, reproducibility, manifests, ground truth, geometry, oracle, docs."""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from benchmark.discover import discover
from benchmark.manifest import parse_manifest
from testbed.synth import catalogue, catalogue_markdown, dataset_names, generate_suite
from testbed.synth.catalogue import embedded_catalogue

REPO = Path(__file__).resolve().parents[2]
ORACLE = "oracle"


@dataclass(frozen=True)
class Suite:
    """A generated small suite and how long it took."""

    root: Path
    seconds: float


def _hashes(root: Path, skip: str | None = None) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not (skip and f"/VLM/{skip}/" in p.as_posix())
    }


@pytest.fixture(scope="session")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Suite:
    """The small suite with the oracle run, generated once per session."""
    root = tmp_path_factory.mktemp("synth") / "bench"
    start = time.perf_counter()
    generate_suite(root, size="small", seed=0, oracle=ORACLE)
    return Suite(root, time.perf_counter() - start)


def _gt(ds_root: Path) -> dict:
    return json.loads(next((ds_root / "VLM").glob("ground_truth_*.json")).read_text(encoding="utf-8"))


def test_suite_has_at_least_twenty_datasets_of_ten_samples(suite: Suite) -> None:
    found = discover(suite.root)
    assert len(found) >= 20
    assert {d.name for d in found} == set(dataset_names())
    for ds in found:
        assert len(parse_manifest(ds.root / "VLM" / "random.txt", ds.root)) == 10


def test_catalogue_covers_every_task_and_dimension() -> None:
    rows = catalogue()
    assert {r.task for r in rows} == {"classification", "segmentation", "detection"}
    assert {r.dimension for r in rows} == {"2D", "3D", "video"}
    assert all(r.traps for r in rows)


def test_same_seed_is_byte_identical_and_other_seed_differs(suite: Suite, tmp_path: Path) -> None:
    # Every dataset's builder runs twice, at two samples per dataset (the traps are per dataset and alternate
    # every other sample, so samples 3-10 add no code path): a fifth of a small-suite rebuild. The time
    # budget of the small suite is checked on the session's build (test_generation_of_small_suite_is_fast).
    # One of the two writes the oracle run too: writing it leaves every other file as it was.
    once, again = tmp_path / "once", tmp_path / "again"
    generate_suite(once, samples=2, seed=0, oracle=ORACLE)
    generate_suite(again, samples=2, seed=0)
    assert {p.name for p in again.iterdir()} == set(dataset_names())
    assert _hashes(again) == _hashes(once, skip=ORACLE)

    some = ["synth-ct-liver-series", "synth-echo-avi", "synth-glioma-h5"]
    other = tmp_path / "other"
    generate_suite(other, size="small", seed=1, only=some)
    first, second = _hashes(suite.root, skip=ORACLE), _hashes(other)
    changed = [k for k in second if k.endswith(".json") or k.endswith(".avi") or k.endswith(".h5")]
    assert any(first.get(k) != second[k] for k in changed)


def test_generation_of_small_suite_is_fast(suite: Suite) -> None:
    # Includes rendering and writing the oracle run; the budget is 30 s on 2 cores without it.
    assert suite.seconds < 60, f"small suite + oracle took {suite.seconds:.1f}s (budget 30s on 2 cores)"


def test_every_manifest_path_reroots_to_an_existing_raw_file(suite: Suite) -> None:
    for ds in discover(suite.root):
        text = (ds.root / "VLM" / "random.txt").read_text(encoding="utf-8")
        assert text.endswith("\n") and "/data3/synth/Agent_test/bundled/" in text
        for entry in parse_manifest(ds.root / "VLM" / "random.txt", ds.root, check_exists=True):
            assert entry.path.is_file(), entry


def test_manifest_separators_and_spaces_are_exercised(suite: Suite) -> None:
    tab = (suite.root / "synth-chest-xray-dicom" / "VLM" / "random.txt").read_text(encoding="utf-8")
    assert "\t" in tab.splitlines()[0]
    spaced = parse_manifest(
        suite.root / "synth-histology-png" / "VLM" / "random.txt", suite.root / "synth-histology-png"
    )
    assert any(" " in e.relpath for e in spaced)


def test_ground_truth_sources_and_label_files_exist(suite: Suite) -> None:
    for ds in discover(suite.root):
        gt = _gt(ds.root)
        assert gt["schema_version"] == "1.1" and gt["expected_count"] == len(gt["samples"])
        stems = [s["source_stem"] for s in gt["samples"].values()]
        assert len(set(stems)) == len(stems), ds.name
        for sample in gt["samples"].values():
            extra = sample["expected_extra"]
            assert (ds.root / extra["source_file"]).is_file(), extra["source_file"]
            assert extra["original_filename"] == Path(extra["source_file"]).name
            for key in ("label_file", "mask_file", "bbox_file", "seg_file"):
                if key in extra:
                    assert (ds.root / extra[key]).is_file(), extra[key]


def test_ground_truth_file_is_written_like_the_published_ones(suite: Suite) -> None:
    path = next((suite.root / "synth-kidney-ct-nifti" / "VLM").glob("ground_truth_*.json"))
    text = path.read_text(encoding="utf-8")
    assert not text.endswith("\n")
    assert text == json.dumps(json.loads(text), indent=2, ensure_ascii=False)


def test_geometry_masks_have_the_image_size_and_known_ids(suite: Suite) -> None:
    for ds in discover(suite.root):
        gt = _gt(ds.root)
        for sample in gt["samples"].values():
            geo = sample["geometry"]
            if gt["task_type"] == "segmentation":
                mask = np.asarray(Image.open(ds.root / geo["mask_file"]))
                assert [mask.shape[1], mask.shape[0]] == geo["image_size"]
                assert mask.any() and mask.max() < len(gt["classes"])
            if gt["task_type"] == "detection":
                w, h = geo["image_size"]
                assert geo["boxes"] and len(geo["boxes"]) == len(geo["box_category_ids"])
                for x, y, bw, bh in geo["boxes"]:
                    assert min(x, y) >= 0 and x + bw <= w and y + bh <= h


def test_volume_segmentation_slice_is_the_largest_foreground_slice(suite: Suite) -> None:
    import nibabel as nib

    ds = suite.root / "synth-brain-mr-nifti"
    gt = _gt(ds)
    for sample in gt["samples"].values():
        labels = np.asarray(nib.load(ds / sample["expected_extra"]["mask_file"]).dataobj).T  # (Z, Y, X)
        counts = (labels > 0).reshape(labels.shape[0], -1).sum(axis=1)
        assert sample["geometry"]["slice_index"] == int(np.argmax(counts))
        gt_mask = np.asarray(Image.open(ds / sample["geometry"]["mask_file"]))
        assert np.array_equal(gt_mask, labels[sample["geometry"]["slice_index"]])


def test_world_coordinates_convert_to_the_gt_box(suite: Suite) -> None:
    import SimpleITK as sitk

    ds = suite.root / "synth-lung-nodule-mhd"
    rows = (ds / "data" / "annotations.csv").read_text().splitlines()[1:]
    table = {r.split(",")[0]: [float(v) for v in r.split(",")[1:]] for r in rows}
    for sample in _gt(ds)["samples"].values():
        img = sitk.ReadImage(str(ds / sample["expected_extra"]["source_file"]))
        x, y, z, diameter = table[sample["expected_extra"]["subject_id"]]
        col, row, sl = img.TransformPhysicalPointToContinuousIndex((x, y, z))
        bx, by, bw, bh = sample["geometry"]["boxes"][0]
        assert round(sl) == sample["geometry"]["slice_index"]
        assert bx <= col <= bx + bw and by <= row <= by + bh
        assert abs(bw * img.GetSpacing()[0] - diameter) < 2 * img.GetSpacing()[0]


def test_oracle_images_are_pngs_of_the_declared_size(suite: Suite) -> None:
    for ds in discover(suite.root):
        out = ds.root / "VLM" / ORACLE / "agent1_data_organization"
        gt = _gt(ds.root)
        for i, sample in gt["samples"].items():
            ann = json.loads((out / "standardized_annotations" / f"{i}.json").read_text(encoding="utf-8"))
            with Image.open(out / "images" / f"{i}.png") as im:
                assert im.format == "PNG"
                size = list(im.size)
            branch = next(b for b in ann["media_geometry"]["spatial"].values() if b)
            assert branch["pixel_size_px"] == size == sample["geometry"]["image_size"]
            if gt["task_type"] == "segmentation":
                with Image.open(out / "masks" / f"{i}.png") as m:
                    assert list(m.size) == size
        meta = json.loads((out / "data_meta.json").read_text(encoding="utf-8"))
        assert meta["data_volume"]["total"] == len(gt["samples"])


@pytest.mark.parametrize("profile", ["official", "strict"])
def test_oracle_scores_full_marks_with_the_scorer(suite: Suite, profile: str) -> None:
    evaluate = pytest.importorskip("benchmark.score.evaluate")
    for ds in discover(suite.root):
        result = evaluate.score_dataset(ds.root, models=[ORACLE], profile=profile)
        metrics = result["models"][ORACLE]["metrics"]
        assert metrics["E2E"] == pytest.approx(1.0), (ds.name, metrics)
        assert metrics["SC"] == metrics["CF"] == metrics["MSC"] == pytest.approx(1.0), (ds.name, metrics)


def test_catalogue_table_in_docs_matches_the_generator() -> None:
    doc = (REPO / "docs" / "benchmark.md").read_text(encoding="utf-8")
    assert embedded_catalogue(doc) == catalogue_markdown(), (
        "docs/benchmark.md is stale: run `medstrat synth --update-doc docs/benchmark.md`"
    )


def test_unknown_dataset_name_lists_valid_names(tmp_path: Path) -> None:
    with pytest.raises(KeyError, match="synth-echo-avi"):
        generate_suite(tmp_path, only=["no-such-dataset"])
