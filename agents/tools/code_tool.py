"""``run_python``: the opt-in code tool (``agent.tools=[code]``), so a coding model can standardize a dataset
the way the paper's agents do: write a conversion script, run it, read its output, fix it, run it again.

Each call runs the model's script in a fresh ``python`` subprocess (`agents.tools._code_child`):

- working directory: the candidate's workspace ``<candidate>/workspace/``, which holds ``data`` (a link to the
  dataset's ``data/``, read-only) and ``output`` (a link to the candidate's output folder, where
  ``images/``, ``masks/``, ``standardized_annotations/`` and ``data_meta.json`` go); the script is kept there
  as ``run_<n>.py`` so a run can be audited;
- ``medio`` (and the project's other packages) importable; no API key or other variable of the parent's
  environment is passed on;
- limits set with ``resource.setrlimit`` in the child: CPU seconds, address space (memory) and file size,
  plus a wall-clock limit enforced by the parent (the whole process group is killed);
- a guard (an audit hook) refusing writes outside the workspace and the output folder (so ``data/`` is
  read-only), reads of the dataset outside ``data/`` (ground truth under ``VLM/``) and of sibling
  candidates, network access and starting processes. Compiled code (and ``ctypes``) can go around it:
  this is a seatbelt for a cooperative model, not a jail (``docs/agents.md``);
- stdout and stderr captured to files and returned truncated (head and tail).

A script that fails, loops forever, allocates past its memory limit or writes where it may not is stopped
and reported to the model as the tool result; the candidate and the run go on.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import Field

from agents.tools.tool_args import ToolArgs
from agents.tools.tools import ToolResult
from core.options import positive_options

__all__ = ["CODE_TOOL", "CodeLimits", "CodeRunner", "RunPythonArgs"]

CODE_TOOL = "run_python"
"""The tool's name, and the value of ``agent.tools`` that enables it is ``code``."""

_CHILD = Path(__file__).with_name("_code_child.py")
# Variables a script may legitimately need from the parent; everything else (API keys!) stays behind.
_PASSED_ENV = ("PATH", "LANG", "LC_ALL", "TZ", "SYSTEMROOT")


class RunPythonArgs(ToolArgs):
    """Run a Python 3 script in your workspace and return its exit code and (truncated) output.

    The working directory holds data/ (the dataset's raw files, read-only) and output/ (your output folder:
    write output/images/<index>.png, output/masks/<index>.png, output/standardized_annotations/<index>.json,
    output/data_meta.json). numpy, medio (medio.inspect/read/render/write_png), pandas, PIL, pydicom, nibabel
    and SimpleITK are importable. No network, no subprocesses; CPU, wall-time and memory are limited. Print
    what you need to see; files written elsewhere than output/ and the working directory are refused.
    """

    code: str = Field(description="The complete Python script to run.")
    timeout_s: float | None = Field(
        None, gt=0, description="Wall-time limit of this run in seconds (capped by the configured limit)."
    )


@dataclass(frozen=True)
class CodeLimits:
    """Bounds of one ``run_python`` call.

    Attributes:
        cpu_s: CPU seconds (``RLIMIT_CPU``); the script is killed by ``SIGXCPU`` past it.
        wall_s: Wall-clock seconds; the process group is killed past it.
        memory_mb: Address space in MiB (``RLIMIT_AS``); allocations past it raise ``MemoryError``.
        file_mb: Largest file the script may write, in MiB (``RLIMIT_FSIZE``).
        output_chars: Characters of stdout and of stderr returned to the model (head and tail kept).
    """

    cpu_s: float = 300.0
    wall_s: float = 600.0
    memory_mb: int = 4096
    file_mb: int = 2048
    output_chars: int = 8000

    @classmethod
    def of(cls, value: CodeLimits | Mapping[str, Any] | None) -> CodeLimits:
        """The limits from a config mapping, or passed through (`core.options.positive_options`)."""
        return positive_options(cls, value, unknown="unknown code limit(s)", bounds="code limits")


def _truncate(text: str, cap: int) -> str:
    if len(text) <= cap:
        return text
    head, tail = cap // 2, cap - cap // 2
    return f"{text[:head]}\n[... {len(text) - cap} characters cut ...]\n{text[-tail:]}"


def _snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    """Relative path → (size, mtime_ns) of every file under ``folder``."""
    out: dict[str, tuple[int, int]] = {}
    if not folder.is_dir():
        return out
    for path in folder.rglob("*"):
        if path.is_file() and not path.is_symlink():
            stat = path.stat()
            out[path.relative_to(folder).as_posix()] = (stat.st_size, stat.st_mtime_ns)
    return out


class CodeRunner:
    """Runs ``run_python`` calls for one candidate.

    Args:
        dataset_root: The dataset root (its ``data/`` is readable, the rest is not).
        output_dir: The candidate's output folder (``agent1_data_organization``), writable.
        workspace: The scripts' working directory (created, with its ``data`` and ``output`` links).
        limits: Bounds of each call.
    """

    def __init__(self, dataset_root: Path, output_dir: Path, workspace: Path, limits: CodeLimits) -> None:
        self.dataset_root = Path(dataset_root).resolve()
        self.output_dir = Path(output_dir).resolve()
        self.workspace = Path(workspace).resolve()
        self.limits = limits
        self._runs = 0
        self._lock = threading.Lock()

    def _prepare(self) -> None:
        self.workspace.mkdir(parents=True, exist_ok=True)
        self.output_dir.mkdir(parents=True, exist_ok=True)
        for name, target in (("data", self.dataset_root / "data"), ("output", self.output_dir)):
            link = self.workspace / name
            if not link.is_symlink():
                if link.exists():  # a script replaced the link by a folder: put the link back
                    shutil.rmtree(link) if link.is_dir() else link.unlink()
                link.symlink_to(target, target_is_directory=True)
        (self.workspace / "tmp").mkdir(exist_ok=True)

    def _policy(self) -> dict[str, Any]:
        # Hidden: this dataset outside data/ (VLM/, the ground truth), the VLM/ folders of sibling datasets,
        # and the other candidates of this dataset (S3's candidates must stay independent). Named one by
        # one, never a whole parent folder, which might hold the Python installation itself.
        candidate = self.workspace.parent
        hidden = [self.dataset_root, *self.dataset_root.parent.glob("*/VLM")]
        hidden += [
            p
            for p in candidate.parent.iterdir()
            if p != candidate and p.is_dir() and (p / "agent1_data_organization").is_dir()
        ]
        return {
            "writable": [str(self.workspace), str(self.output_dir)],
            "readable": [str(self.dataset_root / "data")],
            "hidden": [str(p) for p in hidden],
            "limits": {
                "cpu_s": self.limits.cpu_s,
                "memory_mb": self.limits.memory_mb,
                "file_mb": self.limits.file_mb,
            },
        }

    def _env(self) -> dict[str, str]:
        import medio

        project = str(Path(medio.__file__).resolve().parent.parent)
        tmp = str(self.workspace / "tmp")
        env = {k: os.environ[k] for k in _PASSED_ENV if k in os.environ}
        env.update(
            {
                "PYTHONPATH": project,
                "PYTHONDONTWRITEBYTECODE": "1",
                "PYTHONUNBUFFERED": "1",
                "HOME": tmp,
                "TMPDIR": tmp,
                "MPLCONFIGDIR": tmp,
                "MPLBACKEND": "Agg",
                # One thread per numeric library: the memory limit covers every thread's arena.
                "OMP_NUM_THREADS": "1",
                "OPENBLAS_NUM_THREADS": "1",
                "MKL_NUM_THREADS": "1",
            }
        )
        env.setdefault("LANG", "C.UTF-8")
        return env

    def __call__(self, args: RunPythonArgs) -> ToolResult:
        """Run one script and report what happened (never raises for a failing script).

        Args:
            args: The script and an optional shorter wall-time limit.

        Returns:
            JSON with ``exit_code``, ``stopped_by`` (the limit or refusal that stopped it, or null),
            ``wall_s``, ``changed_outputs`` (files of output/ written or changed), ``stdout`` and ``stderr``.
        """
        with self._lock:
            self._runs += 1
            run = self._runs
        self._prepare()
        script = self.workspace / f"run_{run}.py"
        script.write_text(args.code, encoding="utf-8")
        stdout_path = self.workspace / "tmp" / f"run_{run}.stdout"
        stderr_path = self.workspace / "tmp" / f"run_{run}.stderr"
        wall = min(self.limits.wall_s, args.timeout_s or self.limits.wall_s)
        before = _snapshot(self.output_dir)
        start = time.perf_counter()
        timed_out = False
        with stdout_path.open("wb") as out, stderr_path.open("wb") as err:
            proc = subprocess.Popen(
                [sys.executable, "-B", str(_CHILD), json.dumps(self._policy()), script.name],
                cwd=self.workspace,
                env=self._env(),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                start_new_session=True,  # its own process group: a timeout kills everything it started
            )
            try:
                code = proc.wait(timeout=wall)
            except subprocess.TimeoutExpired:
                timed_out = True
                with contextlib.suppress(ProcessLookupError):  # it ended on its own meanwhile
                    os.killpg(proc.pid, signal.SIGKILL)
                code = proc.wait()
        elapsed = time.perf_counter() - start
        stdout = stdout_path.read_text(encoding="utf-8", errors="replace")
        stderr = stderr_path.read_text(encoding="utf-8", errors="replace")
        after = _snapshot(self.output_dir)
        changed = sorted(k for k, v in after.items() if before.get(k) != v)
        result = {
            "exit_code": code,
            "stopped_by": self._stopped_by(code, timed_out, wall, stderr),
            "wall_s": round(elapsed, 3),
            "changed_outputs": changed[:50] + [f"... {len(changed) - 50} more"] * (len(changed) > 50),
            "stdout": _truncate(stdout, self.limits.output_chars),
            "stderr": _truncate(stderr, self.limits.output_chars),
        }
        return ToolResult(json.dumps(result, ensure_ascii=False))

    def _stopped_by(self, code: int, timed_out: bool, wall: float, stderr: str) -> str | None:
        """Name the limit or the refusal that ended the script, when one did."""
        if timed_out:
            return f"wall-time limit ({wall:g} s)"
        if code == -signal.SIGXCPU:
            return f"CPU-time limit ({self.limits.cpu_s:g} s)"
        if code == -signal.SIGXFSZ:
            return f"file-size limit ({self.limits.file_mb} MiB)"
        if code == -signal.SIGKILL:
            return "killed (SIGKILL): most likely out of memory"
        if code != 0 and "MemoryError" in stderr[-4000:]:
            return f"memory limit ({self.limits.memory_mb} MiB)"
        if code != 0 and "PermissionError: run_python:" in stderr[-4000:]:
            refused = stderr[stderr.rindex("PermissionError: run_python:") :].splitlines()[0]
            return "refused: " + refused.removeprefix("PermissionError: run_python: ")
        return None
