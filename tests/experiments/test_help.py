"""The fast ``python -m experiments --help`` prints exactly Hydra's help, and imports nothing heavy."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from experiments._config_path import config_dir
from experiments.help import app_config_groups, fast_help

REPO = Path(__file__).resolve().parents[2]

# Runs the CLI and reports which heavy modules it imported (on stderr, after the help text).
_PROBE = (
    "import atexit, runpy, sys\n"
    "heavy = ('numpy', 'pandas', 'pydantic', 'strategies', 'litellm', 'matplotlib', 'scipy')\n"
    "report = lambda: print('IMPORTED=' + ','.join(m for m in heavy if m in sys.modules), file=sys.stderr)\n"
    "atexit.register(report)\n"
    "sys.argv = ['experiments'] + sys.argv[1:]\n"
    "runpy.run_module('experiments', run_name='__main__', alter_sys=True)\n"
)


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _PROBE, *args], cwd=REPO, capture_output=True, text=True, timeout=120
    )


def test_fast_help_is_hydras_help_and_imports_nothing_heavy() -> None:
    fast = _run("--help")
    # An override next to --help leaves the fast path: Hydra composes and renders the same template.
    hydra = _run("--help", "run.seed=1")
    assert fast.returncode == 0 and hydra.returncode == 0, fast.stderr + hydra.stderr
    assert fast.stdout == hydra.stdout
    # The paper's S3/S4 (issue 22) and plan selection are configs of their own.
    assert "strategy: plans, s0, s1, s2, s3, s3_paper, s4, s4_paper" in fast.stdout
    assert "IMPORTED=\n" in fast.stderr  # none of numpy, pandas, pydantic, strategies, litellm ...


def test_fast_help_declines_what_only_hydra_can_answer(tmp_path: Path) -> None:
    folder = config_dir()
    assert fast_help(["--help", "strategy=s3"], folder) is None
    assert fast_help(["--cfg", "job"], folder) is None
    assert fast_help([], folder) is None
    # A template that shows the composed config needs Hydra.
    (tmp_path / "config.yaml").write_text("hydra:\n  help:\n    template: 'x $CONFIG'\n")
    assert fast_help(["--help"], tmp_path) is None
    (tmp_path / "config.yaml").write_text("hydra:\n  help:\n    template: '${hydra.job.name}'\n")
    assert fast_help(["--help"], tmp_path) is None  # an interpolation into Hydra's own config


def test_app_config_groups_lists_nested_groups_and_skips_hydras(tmp_path: Path) -> None:
    for rel in ("b/y.yaml", "b/x.yaml", "a/inner/z.yaml", "hydra/launcher/j.yaml", "empty/readme.txt"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("{}\n")
    assert app_config_groups(tmp_path) == "a/inner: z\nb: x, y\n"
