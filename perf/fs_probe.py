"""What creating a file costs in a folder: the probe that `perf/concurrency.py` and `perf/tool_cost.py` print.

Our run writes every candidate's files (a PNG per image, a JSON per annotation, each through a temporary file
and a rename); bare LiteLLM writes nothing. So where the run folder lies enters the comparison. On the 2-core
machine these figures come from, creating an entry in a new folder of the ext4 disk cost anywhere from 0.02 to
1 ms of CPU (kernel time, varying with the moment and the folder), against ~0.01 ms on tmpfs (``/dev/shm``);
both scripts take ``--workdir`` and print this probe, so a reader knows which case a figure is.

    PYTHONPATH=. python perf/fs_probe.py [FOLDER ...]
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path


def create_cost_us(folder: str | Path, files: int = 200, rounds: int = 3) -> float:
    """Median CPU microseconds to create, write and rename one small file in fresh subfolders of ``folder``.

    Each round makes a new subfolder holding ten files per sub-subfolder, as a candidate's ``images/`` and
    ``standardized_annotations/`` are made, and removes it after.

    Args:
        folder: Where to probe (it must exist).
        files: Files per round.
        rounds: Rounds (the median is kept).

    Returns:
        CPU microseconds per file (folder creation included).
    """
    costs = []
    for _ in range(rounds):
        with tempfile.TemporaryDirectory(dir=folder, prefix=".fs-probe-") as tmp:
            start = time.process_time()
            for k in range(files):
                sub = os.path.join(tmp, f"d{k // 10}")
                if k % 10 == 0:
                    os.mkdir(sub)
                path = os.path.join(sub, f"f{k}")
                fd = os.open(path + ".tmp", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
                os.write(fd, b"x" * 2048)
                os.close(fd)
                os.replace(path + ".tmp", path)
            costs.append((time.process_time() - start) / files * 1e6)
    return statistics.median(costs)


def describe(folder: str | Path) -> str:
    """One line: the folder and its file-creation cost."""
    return f"file creation in {folder}: {create_cost_us(folder):.0f} us of CPU per file (fs_probe.py)"


if __name__ == "__main__":
    for arg in sys.argv[1:] or [tempfile.gettempdir(), "/dev/shm"]:
        if Path(arg).is_dir():
            print(describe(arg))
        else:
            print(f"{arg}: not a folder", file=sys.stderr)
