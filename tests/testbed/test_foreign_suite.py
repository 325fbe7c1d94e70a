"""The foreign suite (issue 24, item 4): other packages' pixels in community layouts, built offline and
deterministically, with ground truth the official scorer accepts from a perfect answer."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from testbed.foreign import FOREIGN_MARKER, build_foreign, foreign_catalogue, foreign_names

pytest.importorskip("skimage")
REPO = Path(__file__).resolve().parents[2]


def _hashes(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.name.startswith("eval_results")
    }


@pytest.fixture(scope="module")
def foreign(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("foreign")
    build_foreign(out, oracle="oracle")
    return out


def test_build_is_byte_identical_across_runs(foreign: Path, tmp_path: Path) -> None:
    build_foreign(tmp_path, oracle="oracle")
    first, second = _hashes(foreign), _hashes(tmp_path)
    assert first == second
    assert len(first) > 100


def test_layouts_are_the_communities_and_names_come_from_their_documents(foreign: Path) -> None:
    gt = {
        n: json.loads((foreign / n / "VLM" / f"ground_truth_{n}.json").read_text(encoding="utf-8"))
        for n in foreign_names()
    }
    assert gt["fx-fundus-nnunet"]["dataset_name"] == "Retina Vessel Tiles"  # dataset.json "name"
    assert gt["fx-bids-func-4d"]["dataset_name"] == "Resting State Pilot"  # dataset_description.json
    assert gt["fx-us-study-labels"]["dataset_name"] == "fx-us-study-labels"  # README without a title
    assert (foreign / "fx-bids-derivatives-dseg/data/derivatives/tissue/dseg.tsv").is_file()
    assert gt["fx-bids-derivatives-dseg"]["classes"][1] == "matière grise"
    nhdr = foreign / "fx-mri-nrrd-exports/data/exports/stationB/scan_d.nhdr"
    assert b"encoding: bzip2" in nhdr.read_bytes() and nhdr.with_name("scan_d.raw.bz2").is_file()
    provenance = json.loads((foreign / "fx-fundus-nnunet/VLM/provenance.json").read_text(encoding="utf-8"))
    assert "scikit-image" in provenance["packages"] and "pydicom" not in provenance["packages"]


@pytest.mark.parametrize("profile", ["official", "strict"])
def test_oracle_scores_full_marks(foreign: Path, profile: str) -> None:
    from benchmark.score.evaluate import score_dataset

    for name in foreign_names():
        metrics = score_dataset(foreign / name, models=["oracle"], profile=profile)["models"]["oracle"][
            "metrics"
        ]
        assert metrics["E2E"] == pytest.approx(1.0), (name, metrics)
        assert metrics["MSC"] == pytest.approx(1.0), (name, metrics)


def test_cli_builds_and_prints_the_time(tmp_path: Path) -> None:
    cmd = [sys.executable, "-m", "testbed.synth", str(tmp_path / "fx"), "--suite", "foreign"]
    done = subprocess.run([*cmd, "--only", "fx-tiff-stations"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "1 datasets written" in done.stdout and done.stdout.rstrip().endswith("s")
    bad = subprocess.run([*cmd, "--only", "nope"], capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "fx-tiff-stations" in bad.stderr


def test_catalogue_table_in_docs_matches_the_registry() -> None:
    from testbed.synth.catalogue import embedded_catalogue

    doc = (REPO / "docs" / "benchmark.md").read_text(encoding="utf-8")
    assert embedded_catalogue(doc, FOREIGN_MARKER) == foreign_catalogue(), (
        "docs/benchmark.md is stale: run `medstrat synth --suite foreign --update-doc docs/benchmark.md`"
    )
