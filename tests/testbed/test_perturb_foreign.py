"""The simulator on outputs we did not write: the benchmark's own example annotations, and its CLI."""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from testbed.perturb import MISTAKES, correct_annotations, perturb_folder, read_mistakes
from testbed.perturb.apply import _fresh_state

REPO = Path(__file__).resolve().parents[2]


def example_folder(example: Path, out: Path) -> Path:
    """A two-sample folder from one benchmark example: its annotation twice (the second with another source
    and subject, as a neighbour) and a small grey image each."""
    ann = json.loads((example / "oracle_prediction" / "0.json").read_text())
    folder = out / "agent1_data_organization"
    (folder / "standardized_annotations").mkdir(parents=True)
    (folder / "images").mkdir()
    for index in (0, 1):
        doc = json.loads(json.dumps(ann))
        if index:
            extra = doc["context"]["sample"]["extra"]
            extra["source_file"] = "data/other/neighbour_case.nii.gz"
            doc["context"]["sample"]["subject_id"] = "neighbour_case"
        doc["record"]["image_path"] = f"images/{index}.png"
        (folder / "standardized_annotations" / f"{index}.json").write_text(json.dumps(doc))
        pixels = np.arange(32 * 32, dtype=np.uint8).reshape(32, 32) * (index + 1)
        Image.fromarray(pixels).save(folder / "images" / f"{index}.png")
    shutil.copyfile(example / "oracle_prediction" / "data_meta.json", folder / "data_meta.json")
    return folder


def examples(mdsbench_dir: Path) -> list[Path]:
    return sorted(p for p in (mdsbench_dir / "examples").iterdir() if (p / "oracle_prediction").is_dir())


def test_every_mistake_applies_or_declines_cleanly_on_the_benchmarks_own_annotations(
    mdsbench_dir: Path, tmp_path: Path
) -> None:
    applied: set[str] = set()
    for example in examples(mdsbench_dir):
        correct = example_folder(example, tmp_path / example.name / "correct")
        docs = correct_annotations(correct)
        for name, kind in MISTAKES.items():
            out = tmp_path / example.name / name
            state = _fresh_state(correct, out, tmp_path, 0, docs)
            state.rng = random.Random(3)
            before = json.dumps(state.annotation, sort_keys=True)
            if kind.apply(state):
                state.write()
                applied.add(name)
                text = (out / "standardized_annotations" / "0.json").read_text()
                image = out / "images" / "0.png"
                changed = text != json.dumps(json.loads(before), indent=2, ensure_ascii=False)
                assert (
                    changed
                    or not image.is_file()
                    or image.read_bytes() != (correct / "images" / "0.png").read_bytes()
                ), name
    # The JSON-level catalogue does not depend on our oracle's conventions: it finds occasions in the
    # benchmark's own shapes (COCO payloads, label volumes in data/, bbox_format fields, string class names).
    json_level = {n for n, m in MISTAKES.items() if m.category not in ("image",) and "masks" not in m.fields}
    assert len(applied & json_level) >= len(json_level) - 2, sorted(json_level - applied)


def test_the_cli_writes_a_labelled_candidate_and_refuses_bad_input(
    mdsbench_dir: Path, tmp_path: Path
) -> None:
    correct = example_folder(examples(mdsbench_dir)[0], tmp_path / "correct")
    run = [sys.executable, "-m", "testbed.perturb"]
    done = subprocess.run(
        [*run, str(correct), str(tmp_path / "cand"), "--seed", "1", "--clean", "0"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "2 samples, 2 with mistakes" in done.stdout
    assert all(read_mistakes(tmp_path / "cand").values())
    missing = subprocess.run(
        [*run, str(tmp_path / "nowhere"), str(tmp_path / "x")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (
        missing.returncode == 2
        and missing.stderr.count("\n") == 1
        and "standardized_annotations" in missing.stderr
    )
    bad_mix = subprocess.run(
        [*run, str(correct), str(tmp_path / "y"), "--mix", "no_such=1"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad_mix.returncode == 2 and "unknown mistake" in bad_mix.stderr
    assert not (tmp_path / "x").exists() and not (tmp_path / "y").exists()


def test_perturbing_the_same_benchmark_example_twice_gives_the_same_labels(
    mdsbench_dir: Path, tmp_path: Path
) -> None:
    correct = example_folder(examples(mdsbench_dir)[-1], tmp_path / "correct")
    first = perturb_folder(correct, tmp_path / "a", tmp_path, seed=9, key="x")
    again = perturb_folder(correct, tmp_path / "b", tmp_path, seed=9, key="x")
    assert first == again
    with pytest.raises(FileNotFoundError):
        perturb_folder(tmp_path / "nowhere", tmp_path / "c", tmp_path, seed=0)
