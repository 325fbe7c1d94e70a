"""The package installs, imports without litellm, and the Hydra app composes its config."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

PACKAGES = ("medio", "benchmark", "validator", "agents", "strategies", "experiments")


def _run(code_or_args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    return subprocess.run(
        [sys.executable, *code_or_args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


def test_importing_every_package_does_not_import_litellm(tmp_path: Path) -> None:
    code = (
        "import json, sys\n"
        f"for name in {PACKAGES!r}:\n"
        "    __import__(name)\n"
        "print(json.dumps({'litellm': 'litellm' in sys.modules}))\n"
    )
    out = _run(["-c", code], cwd=Path(__file__).resolve().parent.parent)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.strip().splitlines()[-1]) == {"litellm": False}


def test_hydra_app_prints_the_composed_config_from_any_directory(tmp_path: Path) -> None:
    repo = Path(__file__).resolve().parent.parent
    env_code = (
        f"import sys; sys.path.insert(0, {str(repo)!r}); import runpy; "
        "sys.argv=['experiments','--cfg','job']; runpy.run_module('experiments', run_name='__main__')"
    )
    out = _run(["-c", env_code], cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    for group in ("strategy:", "agent:", "benchmark:", "validator:"):
        assert group in out.stdout
    assert "name: s3" in out.stdout


def test_hydra_app_accepts_a_strategy_override(tmp_path: Path) -> None:
    repo = Path(__file__).resolve().parent.parent
    code = (
        f"import sys; sys.path.insert(0, {str(repo)!r}); import runpy; "
        "sys.argv=['experiments','--cfg','job','strategy=s0']; "
        "runpy.run_module('experiments', run_name='__main__')"
    )
    out = _run(["-c", code], cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "kind: direct" in out.stdout


def test_every_package_folder_is_listed_for_the_wheel() -> None:
    """A subpackage missing from pyproject's explicit list would vanish from a non-editable install."""
    import tomllib

    repo = Path(__file__).resolve().parent.parent
    listed = set(tomllib.loads((repo / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    on_disk = {
        ".".join(init.parent.relative_to(repo).parts)
        for top in PACKAGES
        for init in (repo / top).rglob("__init__.py")
    }
    assert on_disk - listed == set(), "add these to [tool.setuptools] packages"
