"""The per-image JSON paths several packages name are spelled once, in `benchmark.fields`: a string equal to
one of them anywhere else in the packages is a second spelling that can drift (a typo is a silent miss)."""

from __future__ import annotations

import ast
from pathlib import Path

import benchmark.fields as fields

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("core", "medio", "benchmark", "validator", "agents", "strategies", "experiments")


def test_no_package_spells_a_shared_field_path_itself() -> None:
    paths = {getattr(fields, name): name for name in fields.__all__}
    assert len(paths) == len(fields.__all__)  # each constant names a different path
    found = []
    for package in PACKAGES:
        for module in sorted((ROOT / package).rglob("*.py")):
            if module == ROOT / "benchmark" / "fields.py":
                continue
            for node in ast.walk(ast.parse(module.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Constant) and node.value in paths:
                    rel = module.relative_to(ROOT)
                    found.append(f"{rel}:{node.lineno} spells {paths[node.value]}")
    assert not found, "use benchmark.fields: " + "; ".join(found)
