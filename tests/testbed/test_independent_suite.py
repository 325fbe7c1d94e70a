"""The independent suite (nilearn's and scikit-learn's shipped pixels in community layouts) builds offline and
deterministically, with ground truth the official scorer accepts from a perfect answer."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

pytest.importorskip("nilearn")
pytest.importorskip("sklearn")

from testbed.independent import (  # after the skips: the suite needs both packages
    INDEPENDENT_MARKER,
    build_independent,
    independent_catalogue,
    independent_names,
)

REPO = Path(__file__).resolve().parents[2]


def _hashes(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.name.startswith("eval_results")
    }


@pytest.fixture(scope="module")
def independent(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("independent")
    build_independent(out, oracle="oracle")
    return out


def test_build_is_byte_identical_across_runs(independent: Path, tmp_path: Path) -> None:
    build_independent(tmp_path, oracle="oracle")
    first, second = _hashes(independent), _hashes(tmp_path)
    assert first == second
    assert len(first) > 100


def test_layouts_follow_their_communities(independent: Path) -> None:
    assert 6 <= len(independent_names()) <= 8
    gt = {
        n: json.loads((independent / n / "VLM" / f"ground_truth_{n}.json").read_text(encoding="utf-8"))
        for n in independent_names()
    }
    assert {g["task_type"] for g in gt.values()} == {"classification", "segmentation", "detection"}
    assert all(4 <= len(g["samples"]) <= 10 for g in gt.values())
    msd = json.loads((independent / "task11-braintissue/data/dataset.json").read_text(encoding="utf-8"))
    assert gt["task11-braintissue"]["dataset_name"] == msd["name"]
    assert len(msd["training"]) == len(gt["task11-braintissue"]["samples"]) and msd["test"]
    coco = json.loads(
        (independent / "coco-hemispheres/data/annotations/instances_train2017.json").read_text(
            encoding="utf-8"
        )
    )
    geometry = [s["geometry"] for s in gt["coco-hemispheres"]["samples"].values()]
    assert sum(len(g["boxes"]) for g in geometry) == len(coco["annotations"])
    assert [a["bbox"] for a in coco["annotations"][:2]] == geometry[0]["boxes"]
    # Class names come from the documents, never from the folder codes.
    assert gt["tissue-patches"]["classes"][0] == "grey matter"
    assert "t0001" in gt["tissue-patches"]["samples"]["0"]["source_stem"]
    provenance = json.loads((independent / "tissue-patches/VLM/provenance.json").read_text(encoding="utf-8"))
    assert {"nilearn", "scikit-learn"} <= set(provenance["packages"])


@pytest.mark.parametrize("profile", ["official", "strict"])
def test_oracle_scores_full_marks(independent: Path, profile: str) -> None:
    from benchmark.score.evaluate import score_dataset

    for name in independent_names():
        metrics = score_dataset(independent / name, models=["oracle"], profile=profile)["models"]["oracle"][
            "metrics"
        ]
        assert metrics["E2E"] == pytest.approx(1.0), (name, metrics)
        assert metrics["MSC"] == pytest.approx(1.0), (name, metrics)


def test_cli_builds_and_rejects_an_unknown_name(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # In-process: the command's output and exit codes are what is checked here. The same command starts in a
    # fresh process in test_realfiles.py::test_cli_builds_the_suite_and_rejects_unknown_names (--suite
    # realfiles) and in the README's runnable blocks (--suite independent, test_readme_examples.py).
    from testbed.synth.__main__ import main

    args = [str(tmp_path / "ind"), "--suite", "independent"]
    assert main([*args, "--only", "tissue-patches"]) == 0, capsys.readouterr().err
    assert "1 datasets written" in capsys.readouterr().out
    assert (tmp_path / "ind/tissue-patches/VLM/random.txt").read_text(encoding="utf-8").count("\n") == 9
    assert main([*args, "--only", "nope"]) == 2
    assert "tissue-patches" in capsys.readouterr().err
    assert not (tmp_path / "ind" / "nope").exists()


def test_catalogue_table_in_docs_matches_the_registry() -> None:
    from testbed.synth.catalogue import embedded_catalogue

    doc = (REPO / "docs" / "benchmark.md").read_text(encoding="utf-8")
    assert embedded_catalogue(doc, INDEPENDENT_MARKER) == independent_catalogue(), (
        "docs/benchmark.md is stale: run `medstrat synth --suite independent --update-doc docs/benchmark.md`"
    )
