"""The ``medstrat`` command line and import hygiene.

``inspect`` runs as a user runs it (a fresh interpreter); ``render`` calls the same ``main(argv)`` in this
process (a fresh interpreter per file cost ~1 CPU s of start-up each; the error policy is `cli_main`'s, proven
in a fresh process by tests/test_cli_errors.py).
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from PIL import Image

import medio
from medio.__main__ import main

PYTHON = sys.executable
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def in_process(capfd: pytest.CaptureFixture[str]) -> Iterator[pytest.CaptureFixture[str]]:
    """``main(argv)`` here: the logging it sets up (root handler, pydicom's level) is undone afterwards."""
    root, pydicom = logging.getLogger(), logging.getLogger("pydicom")
    handlers, levels = list(root.handlers), (root.level, pydicom.level)
    yield capfd
    root.handlers[:] = handlers
    root.setLevel(levels[0])
    pydicom.setLevel(levels[1])


def _main(capfd: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """``medstrat ARGS`` as ``main(argv)``: the exit code, stdout and stderr."""
    capfd.readouterr()
    code = main(list(args))
    out, err = capfd.readouterr()
    return code, out, err


def _cases(pydicom_file, nibabel_data):
    return [
        (pydicom_file("CT_small.dcm"), []),
        (pydicom_file("MR_small.dcm"), []),
        (pydicom_file("MR_small_bigendian.dcm"), []),
        (pydicom_file("SC_rgb_rle_32bit_2frame.dcm"), ["--frame", "1"]),
        (nibabel_data / "example4d.nii.gz", []),
        (nibabel_data / "anatomical.nii", []),
    ]


def test_cli_inspect_and_render_on_bundled_files(tmp_path, pydicom_file, nibabel_data, in_process):
    cases = _cases(pydicom_file, nibabel_data)
    inspected = subprocess.run(
        [PYTHON, "-m", "medio", "inspect", *(str(path) for path, _ in cases)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
        check=False,
    )
    rendered = [
        _main(in_process, "render", str(path), str(tmp_path / f"{path.name}.png"), *extra)
        for path, extra in cases
    ]
    code, out, err = inspected.returncode, inspected.stdout, inspected.stderr
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


def test_cli_render_options(tmp_path, nibabel_data, in_process):
    out = tmp_path / "s.png"
    code, stdout, stderr = _main(
        in_process,
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
    assert code == 0, stderr
    info = json.loads(stdout)
    assert info["slice_index"] == 3 and info["axis"] == 1 and info["window"] == [0.0, 200.0]


def test_cli_errors_are_one_line_exit_2(tmp_path, pydicom_file, in_process):
    empty = tmp_path / "empty.dcm"
    empty.write_bytes(b"")
    commands = [
        ["render", str(empty), str(tmp_path / "o.png")],
        ["render", str(pydicom_file("MR_small_jpeg_ls_lossless.dcm")), str(tmp_path / "o.png")],
        ["render", str(pydicom_file("CT_small.dcm")), str(tmp_path / "o.png"), "--slice", "4"],
    ]
    for args in commands:
        code, _, err = _main(in_process, *args)
        if code == 0:
            continue  # e.g. a JPEG-LS decoder is installed here
        assert code == 2
        assert "Traceback" not in err and err.count("\n") == 1
        assert err.startswith("medstrat: error: ") and args[1] in err


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
