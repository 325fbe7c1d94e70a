"""The Hydra app uses Hydra's public API only, so a Hydra upgrade cannot silently change what it does.

Replacing Hydra's private methods (``Hydra.get_mode``, ``Sweeper.validate_batch_is_legal``) would save a
little start-up (docs/experiments.md "Speed" has how much) and break unseen when Hydra changes them. The
project is scanned for such patches, and the sweep behaviour Hydra itself provides is pinned: a sweep with a
job whose config does not compose is refused before any job runs, with one line and exit 2.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from cli_in_process import run_cli_in_process

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("core", "medio", "benchmark", "validator", "agents", "testbed", "strategies", "experiments")


def _hydra_patches(tree: ast.Module) -> list[int]:
    """Lines that import Hydra's private modules or assign to an attribute of a name imported from Hydra."""
    hydra_names: set[str] = set()
    found: list[int] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "hydra":
            hydra_names |= {a.asname or a.name for a in node.names}
            if "._internal" in f".{node.module}" or any(a.name == "_internal" for a in node.names):
                found.append(node.lineno)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "hydra":
                    hydra_names.add((alias.asname or alias.name).split(".")[0])
                    if "._internal" in alias.name:
                        found.append(node.lineno)
    for node in ast.walk(tree):
        targets = node.targets if isinstance(node, ast.Assign) else []
        for target in targets:
            base = target
            while isinstance(base, ast.Attribute):
                base = base.value
            if target is not base and isinstance(base, ast.Name) and base.id in hydra_names:
                found.append(node.lineno)
    return found


def test_no_module_patches_or_imports_hydras_internals() -> None:
    hits = [
        f"{path.relative_to(ROOT)}:{line}"
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
        for line in _hydra_patches(ast.parse(path.read_text(encoding="utf-8")))
    ]
    assert hits == [], "Hydra's private internals used or patched:\n" + "\n".join(hits)


@pytest.mark.parametrize(
    "source",
    [
        "from hydra._internal.hydra import Hydra\nHydra.get_mode = None\n",
        "from hydra.plugins.sweeper import Sweeper\nSweeper.validate_batch_is_legal = None\n",
        "import hydra._internal.utils\n",
    ],
    ids=["get-mode", "sweeper", "internal-import"],
)
def test_the_scan_sees_a_patch(source: str) -> None:
    assert _hydra_patches(ast.parse(source))


def test_a_sweep_with_a_job_that_does_not_compose_is_refused_before_any_job(
    cli_env: dict[str, str], tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    sweep = tmp_path / "sweep"
    args = ["-m", "strategy=s0,s9", "run.dry_run=true", f"hydra.sweep.dir={sweep}"]
    done = run_cli_in_process(args, cli_env, tmp_path, capfd)
    assert done.returncode == 2, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "strategy/s9" in lines[0], done.stderr
    assert not list(sweep.rglob("forecast.json"))  # not even the good job ran
