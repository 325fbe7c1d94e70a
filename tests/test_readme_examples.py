"""Every README code block marked ``<!-- runnable -->`` runs as written, in order, in one fresh folder (a
later block may use what an earlier one made, as a reader following the README would)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
MARKER = "<!-- runnable -->"
_BLOCK = re.compile(re.escape(MARKER) + r"\s*\n```(bash|python)\n(.*?)\n```", re.DOTALL)


def runnable_blocks(text: str) -> list[tuple[str, str]]:
    """``(language, code)`` of each fenced block right after a runnable marker, in README order."""
    return [(m.group(1), m.group(2)) for m in _BLOCK.finditer(text)]


def test_every_marker_is_followed_by_a_block() -> None:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert text.count(MARKER) == len(runnable_blocks(text)) >= 3


@pytest.mark.heavy
def test_runnable_readme_blocks_run_as_written(tmp_path: Path) -> None:
    blocks = runnable_blocks((REPO / "README.md").read_text(encoding="utf-8"))
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO)  # this checkout, as `pip install .` would provide
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])  # `python` = us
    env["MEDSTRAT_CACHE"] = str(tmp_path / "cache")
    for number, (language, code) in enumerate(blocks, 1):
        cmd = ["bash", "-euo", "pipefail", "-c", code] if language == "bash" else [sys.executable, "-c", code]
        done = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, (
            f"README runnable block {number} ({language}) failed:\n{code}\n{done.stderr}"
        )
        assert "Traceback" not in done.stderr, done.stderr
    made = {p.name for p in tmp_path.iterdir()}
    assert {"suite", "schema.json", "mr.png", "ct.png", "ct_default.png"} <= made
