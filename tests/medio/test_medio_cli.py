"""The ``python -m medio`` command line, run as a user would (subprocess), and import hygiene."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image

import medio

PYTHON = sys.executable
REPO = Path(__file__).resolve().parents[2]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PYTHON, "-m", "medio", *args], capture_output=True, text=True, timeout=120, cwd=REPO, check=False
    )


def _cases(pydicom_file, nibabel_data):
    return [
        (pydicom_file("CT_small.dcm"), []),
        (pydicom_file("MR_small.dcm"), []),
        (pydicom_file("MR_small_bigendian.dcm"), []),
        (pydicom_file("SC_rgb_rle_32bit_2frame.dcm"), ["--frame", "1"]),
        (nibabel_data / "example4d.nii.gz", []),
        (nibabel_data / "anatomical.nii", []),
    ]


def _run_many(commands: list[list[str]]) -> list[tuple[int, str, str]]:
    """Run several CLI invocations concurrently (interpreter start-up dominates their cost)."""
    procs = [
        subprocess.Popen(
            [PYTHON, "-m", "medio", *c], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO
        )
        for c in commands
    ]
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        results.append((proc.returncode, out, err))
    return results


@pytest.mark.heavy
def test_cli_inspect_and_render_on_bundled_files(tmp_path, pydicom_file, nibabel_data):
    cases = _cases(pydicom_file, nibabel_data)
    commands = [["inspect", *(str(path) for path, _ in cases)]]
    commands += [["render", str(path), str(tmp_path / f"{path.name}.png"), *extra] for path, extra in cases]
    (code, out, err), *rendered = _run_many(commands)
    assert code == 0, err
    summaries = json.loads(out)
    assert [s["format"] for s in summaries] == ["dicom"] * 4 + ["nifti"] * 2
    assert all("error" not in s for s in summaries)
    results = {}
    for (path, _), (code, out, err) in zip(cases, rendered, strict=True):
        assert code == 0, err
        info = json.loads(out)
        png = tmp_path / f"{path.name}.png"
        assert medio.read_png_size(png) == tuple(info["size"])
        results[path.name] = (info, png)
    ct, _ = results["CT_small.dcm"]
    assert ct["method"].startswith("ct_preset") and ct["window"] == [40.0, 400.0]
    rgb, rgb_png = results["SC_rgb_rle_32bit_2frame.dcm"]
    assert rgb["frame"] == 1 and Image.open(rgb_png).mode == "RGB"
    nifti, _ = results["example4d.nii.gz"]
    assert nifti["frame"] == 0 and nifti["slice_index"] is not None


def test_cli_render_options(tmp_path, nibabel_data):
    out = tmp_path / "s.png"
    done = _run(
        "render",
        str(nibabel_data / "anatomical.nii"),
        str(out),
        "--slice",
        "3",
        "--axis",
        "1",
        "--window",
        "0,200",
    )
    assert done.returncode == 0, done.stderr
    info = json.loads(done.stdout)
    assert info["slice_index"] == 3 and info["axis"] == 1 and info["window"] == [0.0, 200.0]


def test_cli_errors_are_one_line_exit_2(tmp_path, pydicom_file):
    empty = tmp_path / "empty.dcm"
    empty.write_bytes(b"")
    commands = [
        ["render", str(empty), str(tmp_path / "o.png")],
        ["render", str(pydicom_file("MR_small_jpeg_ls_lossless.dcm")), str(tmp_path / "o.png")],
        ["render", str(pydicom_file("CT_small.dcm")), str(tmp_path / "o.png"), "--slice", "4"],
    ]
    for args, (code, _, err) in zip(commands, _run_many(commands), strict=True):
        if code == 0:
            continue  # e.g. a JPEG-LS decoder is installed here
        assert code == 2
        assert "Traceback" not in err and err.count("\n") == 1
        assert err.startswith("python -m medio: error: ") and args[1] in err


@pytest.mark.parametrize("module", ["medio"])
def test_import_medio_is_light_and_never_imports_litellm(module):
    code = (
        f"import sys, {module}; heavy = [m for m in ('litellm', 'pydicom', 'nibabel', 'SimpleITK', 'h5py', "
        "'pandas', 'pyarrow', 'av', 'scipy') if m in sys.modules]; print(','.join(heavy))"
    )
    done = subprocess.run(
        [PYTHON, "-c", code], capture_output=True, text=True, timeout=60, cwd=REPO, check=True
    )
    assert "litellm" not in done.stdout
    assert done.stdout.strip() == ""
