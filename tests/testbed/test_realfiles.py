"""The realfiles suite: other people's files (pydicom's and nibabel's test data) in benchmark layouts."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from benchmark.discover import discover
from benchmark.manifest import parse_manifest
from testbed.realfiles import BuiltRealDataset, build_realfiles, realfiles_names

REPO = Path(__file__).resolve().parents[2]
ORACLE = "oracle"


@pytest.fixture(scope="session")
def realfiles(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[BuiltRealDataset]]:
    """The realfiles suite with its oracle run, built once per session."""
    root = tmp_path_factory.mktemp("realfiles") / "bench"
    return root, build_realfiles(root, oracle=ORACLE)


def _gt(ds_root: Path) -> dict[str, Any]:
    path = next((ds_root / "VLM").glob("ground_truth_*.json"))
    doc: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return doc


def _hashes(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_at_least_eight_datasets_from_at_least_forty_real_files(
    realfiles: tuple[Path, list[BuiltRealDataset]],
) -> None:
    root, built = realfiles
    assert {d.name for d in discover(root)} == set(realfiles_names())
    assert len(built) >= 8
    origins = set()
    for ds in built:
        provenance = json.loads((ds.root / "VLM" / "provenance.json").read_text(encoding="utf-8"))
        assert set(provenance["packages"]) == {"pydicom", "nibabel"}
        for rel, src in provenance["files"].items():
            assert (ds.root / rel).is_file()
            assert "site-packages" in src or "dist-packages" in src or Path(src).is_file()
            origins.add(src)
    assert len(origins) >= 40, len(origins)


def test_manifests_reroot_onto_the_data_folder_and_list_every_sample(
    realfiles: tuple[Path, list[BuiltRealDataset]],
) -> None:
    _, built = realfiles
    for ds in built:
        lines = (ds.root / "VLM" / "random.txt").read_text(encoding="utf-8").splitlines()
        assert all(line.split(" ", 1)[1].startswith("/data4/") for line in lines)
        entries = parse_manifest(ds.root / "VLM" / "random.txt", ds.root)
        assert [e.index for e in entries] == list(range(len(ds.samples)))
        assert all(e.path.is_file() for e in entries)


def test_expected_failures_stay_in_the_manifest_and_out_of_the_ground_truth(
    realfiles: tuple[Path, list[BuiltRealDataset]],
) -> None:
    _, built = realfiles
    kinds: set[str] = set()
    for ds in built:
        gt = _gt(ds.root)
        failed = {int(i) for i in gt["expected_failures"]}
        scored = {int(i) for i in gt["samples"]}
        assert failed == set(ds.failures)
        assert not failed & scored
        assert failed | scored == set(range(len(ds.samples)))
        assert (
            gt["expected_count"]
            == len(scored)
            == gt["data_meta_expected"]["strict_equals"]["data_volume.total"]
        )
        kinds.update(reason.rsplit("(", 1)[1] for reason in gt["expected_failures"].values())
        for i in failed:  # only samples the builder marked as possibly undecodable may fail
            assert ds.samples[i].expected_failure
    # A codec without a decoder and a truncated file are both represented.
    assert {"UnsupportedTransferSyntax)", "CorruptFile)"} <= kinds


def test_coverage_of_formats_and_photometric_interpretations(
    realfiles: tuple[Path, list[BuiltRealDataset]],
) -> None:
    import pydicom

    _, built = realfiles
    syntaxes, photometric = set(), set()
    for ds in built:
        for s in ds.samples:
            path = ds.root / s.manifest_path
            if s.origin.startswith("pydicom:"):
                header = pydicom.dcmread(path, stop_before_pixels=True, force=True)
                syntaxes.add(str(header.file_meta.TransferSyntaxUID.name))
                photometric.add(str(header.get("PhotometricInterpretation")))
    for name in (
        "Implicit VR Little Endian",
        "Explicit VR Little Endian",
        "Explicit VR Big Endian",
        "RLE Lossless",
        "Deflated Explicit VR Little Endian",
        "JPEG Baseline (Process 1)",
        "JPEG 2000 Image Compression",
        "JPEG 2000 Image Compression (Lossless Only)",
        "JPEG Extended (Process 2 and 4)",
    ):
        assert name in syntaxes, name
    assert {"MONOCHROME1", "MONOCHROME2", "PALETTE COLOR", "RGB", "YBR_FULL", "YBR_FULL_422"} <= photometric
    suffixes = {Path(s.manifest_path).name.lower().split(".", 1)[-1] for ds in built for s in ds.samples}
    assert {"nii", "nii.gz", "mnc", "mgz", "par", "head", "v"} <= suffixes


def test_ground_truth_geometry_matches_the_label_maps(realfiles: tuple[Path, list[BuiltRealDataset]]) -> None:
    _, built = realfiles
    for ds in built:
        gt = _gt(ds.root)
        for i, sample in gt["samples"].items():
            geo = sample["geometry"]
            assert geo["image_size"] == list(ds.truth[int(i)].image_size)
            if gt["task_type"] == "segmentation":
                with Image.open(ds.root / geo["mask_file"]) as mask:
                    assert list(mask.size) == geo["image_size"]
                    assert mask.getextrema()[1] == 1  # the threshold mask has foreground on the GT slice


def test_build_is_byte_identical_across_runs(
    realfiles: tuple[Path, list[BuiltRealDataset]], tmp_path: Path
) -> None:
    root, _ = realfiles
    again = tmp_path / "again"
    build_realfiles(again, oracle=ORACLE)
    assert _hashes(again) == _hashes(root)


@pytest.mark.parametrize("profile", ["official", "strict"])
def test_oracle_scores_full_marks(realfiles: tuple[Path, list[BuiltRealDataset]], profile: str) -> None:
    from benchmark.score.evaluate import score_dataset

    _, built = realfiles
    for ds in built:
        metrics = score_dataset(ds.root, models=[ORACLE], profile=profile)["models"][ORACLE]["metrics"]
        assert metrics["E2E"] == pytest.approx(1.0), (ds.spec.name, metrics)
        assert metrics["SC"] == metrics["MSC"] == pytest.approx(1.0), (ds.spec.name, metrics)


def _render_args(ds: BuiltRealDataset, index: int, out: Path) -> list[str]:
    sample = ds.samples[index]
    args = ["render", str(ds.root / (sample.read_path or sample.manifest_path)), str(out)]
    truth = ds.truth.get(index)
    if truth is not None and truth.slice_index is not None:
        args += ["--slice", str(truth.slice_index)]
    if "frame" in sample.read:
        args += ["--frame", str(sample.read["frame"])]
    return args


@pytest.mark.parametrize("name", realfiles_names())
def test_medio_cli_inspects_and_renders_every_file(
    realfiles: tuple[Path, list[BuiltRealDataset]],
    name: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from medio.__main__ import main

    _, built = realfiles
    ds = next(d for d in built if d.spec.name == name)
    for i, sample in enumerate(ds.samples):
        out = tmp_path / f"{i}.png"
        rc = main(["inspect", str(ds.root / sample.manifest_path)])
        err = capsys.readouterr().err
        # inspect summarises what it can; a header it cannot parse is bad input: one line, exit 2.
        assert rc == 0 or (i in ds.failures and rc == 2 and len(err.strip().splitlines()) == 1), (
            name,
            i,
            err,
        )
        rc = main(_render_args(ds, i, out))
        err = capsys.readouterr().err
        if i in ds.failures:
            # Expected failure: one line naming the file, a non-zero exit, no image.
            assert rc != 0 and not out.exists(), (name, i)
            assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
            assert sample.manifest_path.rsplit("/", 1)[-1] in err
        else:
            assert rc == 0, (name, i, err)
            with Image.open(out) as png:
                assert list(png.size) == list(ds.truth[i].image_size), (name, i)


def test_every_file_of_the_suite_can_be_inspected_in_one_fresh_process(
    realfiles: tuple[Path, list[BuiltRealDataset]],
) -> None:
    # Decoys, label tables, headers and masks included: inspect never raises on bad input; it summarises every
    # file and exits 2 when some could not be read (docs/cli.md). Every scored sample's file reads.
    root, built = realfiles
    files = sorted(str(p) for p in root.glob("*/data/**/*") if p.is_file())
    proc = subprocess.run(
        [sys.executable, "-m", "medio", "inspect", *files], capture_output=True, text=True, cwd=REPO
    )
    assert proc.returncode in (0, 2), proc.stderr
    assert "Traceback" not in proc.stderr
    summaries = json.loads(proc.stdout)
    assert len(summaries) == len(files) >= 100
    unreadable = {f for f, s in zip(files, summaries, strict=True) if s.get("error")}
    assert proc.returncode == (2 if unreadable else 0)
    scored = {str(ds.root / ds.samples[i].manifest_path) for ds in built for i in ds.truth}
    assert not unreadable & scored, sorted(unreadable & scored)


def test_medio_cli_fails_cleanly_on_expected_failures_in_a_fresh_process(
    realfiles: tuple[Path, list[BuiltRealDataset]], tmp_path: Path
) -> None:
    _, built = realfiles
    # One file per kind of failure (a subprocess each is slow): no decoder, damaged data, bogus size.
    by_kind: dict[str, tuple[BuiltRealDataset, int]] = {}
    for ds in built:
        for i, reason in sorted(ds.failures.items()):
            by_kind.setdefault(reason.rsplit("(", 1)[1], (ds, i))
    assert len(by_kind) >= 2, by_kind
    for ds, i in by_kind.values():
        out = tmp_path / "x.png"
        proc = subprocess.run(
            [sys.executable, "-m", "medio", *_render_args(ds, i, out)],
            capture_output=True,
            text=True,
            cwd=REPO,
        )
        assert proc.returncode == 2, (ds.spec.name, i, proc.stderr)
        assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
        assert "Traceback" not in proc.stderr and not out.exists()


def _synth_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "testbed.synth", *args], capture_output=True, text=True, cwd=REPO
    )


def test_cli_builds_the_suite_and_rejects_unknown_names(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The rejection is a message and an exit code: checked in-process. The build starts a fresh interpreter,
    # as a user's command does (the fresh-process smoke of `medstrat synth`).
    from testbed.synth.__main__ import main

    assert main([str(tmp_path / "rf"), "--suite", "realfiles", "--only", "nope"]) == 2
    assert "rf-mr-transfer-syntaxes" in capsys.readouterr().err
    proc = _synth_cli(str(tmp_path / "rf"), "--suite", "realfiles", "--only", "rf-cr-monochrome1")
    assert proc.returncode == 0, proc.stderr
    assert [d.name for d in discover(tmp_path / "rf")] == ["rf-cr-monochrome1"]


def test_catalogue_table_in_docs_matches_the_registry() -> None:
    from testbed.realfiles import REALFILES_MARKER, realfiles_catalogue
    from testbed.synth.catalogue import embedded_catalogue

    doc = (REPO / "docs" / "benchmark.md").read_text(encoding="utf-8")
    assert embedded_catalogue(doc, REALFILES_MARKER) == realfiles_catalogue(), (
        "docs/benchmark.md is stale: run `medstrat synth --suite realfiles --update-doc docs/benchmark.md`"
    )


def test_rgb_with_more_than_eight_bits_is_scaled_like_its_eight_bit_twin(
    realfiles: tuple[Path, list[BuiltRealDataset]],
) -> None:
    # pydicom ships one colour test picture as 8-, 16- and 32-bit RLE RGB: scaled (not cast) renders agree.
    import medio

    _, built = realfiles
    ds = next(d for d in built if d.spec.name == "rf-sc-colour-dicom")
    shown = {
        bits: medio.render(medio.read(ds.root / "data" / "export" / f"SC_rgb_rle{bits}.dcm")).pixels
        for bits in ("", "_16bit", "_32bit")
    }
    assert shown[""].std() > 10  # a real picture, not a flat field
    for bits in ("_16bit", "_32bit"):
        diff = abs(shown[bits].astype(int) - shown[""].astype(int))
        assert diff.max() <= 1, bits


def test_monochrome1_renders_as_the_negative_of_the_same_pixels_read_as_monochrome2(
    realfiles: tuple[Path, list[BuiltRealDataset]], tmp_path: Path
) -> None:
    import pydicom

    import medio

    _, built = realfiles
    ds = next(d for d in built if d.spec.name == "rf-cr-monochrome1")
    declared = ds.root / ds.samples[0].manifest_path
    header = pydicom.dcmread(declared)
    assert header.PhotometricInterpretation == "MONOCHROME1"
    header.PhotometricInterpretation = "MONOCHROME2"
    header.save_as(tmp_path / "m2.dcm")
    a = medio.render(medio.read(declared)).pixels.astype(int)
    b = medio.render(medio.read(tmp_path / "m2.dcm")).pixels.astype(int)
    assert a.std() > 0
    assert (a + b == 255).all()


def test_ground_truth_files_load_typed_and_round_trip(realfiles: tuple[Path, list[BuiltRealDataset]]) -> None:
    from benchmark.groundtruth import load_ground_truth

    _, built = realfiles
    for ds in built:
        path = next((ds.root / "VLM").glob("ground_truth_*.json"))
        gt = load_ground_truth(path)
        assert gt.indices == sorted(ds.truth)
        text = json.dumps(gt.model_dump(by_alias=True), indent=2, ensure_ascii=False)
        assert text == path.read_text(encoding="utf-8")
