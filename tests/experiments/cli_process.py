"""``python -m experiments`` in a fresh interpreter, as a user runs it (a plain module: test files import
it by a unique name)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path


def run_cli(
    args: Sequence[str], env: dict[str, str], cwd: Path, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m experiments ARGS`` with ``env`` in ``cwd``; its output captured as text."""
    return subprocess.run(
        [sys.executable, "-m", "experiments", *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def nonblank_lines(text: str) -> list[str]:
    """The lines of ``text`` that are not blank (what a one-line failure is checked against)."""
    return [line for line in text.splitlines() if line.strip()]
