"""medio imports its format libraries under one lock: threads whose first use of pydicom/nibabel comes
through different entry points at the same moment (read a DICOM, inspect a DICOM, read a NIfTI) all get
complete modules, even when nobody called ``medio.preload()``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROUNDS = 12

# One fresh interpreter imports medio (not pydicom/nibabel) and forks a child per round; in each child 16
# threads start together at a barrier, each making its first format call through a different path.
_ROUNDS = r"""
import os, sys, threading
from concurrent.futures import ThreadPoolExecutor

import medio

files, rounds = sys.argv[2:], int(sys.argv[1])
assert "pydicom" not in sys.modules and "nibabel" not in sys.modules
jobs = [(f, op) for f in files for op in ("read", "inspect")]
failures = 0
for _ in range(rounds):
    pid = os.fork()
    if pid == 0:
        barrier = threading.Barrier(len(jobs))

        def go(job):
            path, op = job
            barrier.wait()
            try:
                if op == "read":
                    medio.read(path)
                    return None
                return medio.inspect(path).get("error")
            except Exception as exc:
                return f"{type(exc).__name__}: {exc}"

        with ThreadPoolExecutor(len(jobs)) as pool:
            errors = [e for e in pool.map(go, jobs) if e]
        for e in errors[:3]:
            print(e, file=sys.stderr)
        os._exit(min(len(errors), 100))
    _, status = os.waitpid(pid, 0)
    failures += os.waitstatus_to_exitcode(status) != 0
sys.exit(failures)
"""


@pytest.mark.heavy
def test_first_format_use_from_many_threads_gets_complete_modules(pydicom_file, nibabel_data: Path) -> None:
    dicom = [pydicom_file(n) for n in ("CT_small.dcm", "MR_small.dcm", "MR_small_RLE.dcm", "image_dfl.dcm")]
    nifti = [nibabel_data / n for n in ("example4d.nii.gz", "standard.nii.gz", "anatomical.nii", "tiny.mnc")]
    proc = subprocess.run(
        [sys.executable, "-c", _ROUNDS, str(ROUNDS), *map(str, dicom + nifti)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, f"{proc.returncode} of {ROUNDS} rounds failed:\n{proc.stderr[-1500:]}"


def test_preload_imports_every_installed_format_library_in_the_calling_thread() -> None:
    script = (
        "import sys, medio\n"
        "missing = medio.preload()\n"
        "wanted = ['pydicom', 'pydicom.pixels.utils', 'nibabel', 'nibabel.minc2', 'PIL.JpegImagePlugin',\n"
        "          'medio.dicom', 'medio.nifti', 'medio.bitmap']\n"
        "absent = [m for m in wanted if m not in sys.modules]\n"
        "assert not absent and 'pydicom' not in missing, (absent, missing)\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-1500:]
