"""The sub-packages of `experiments/` import one way (docs/architecture.md), checked with `ast` on the source.

`stored` and `publish` at the bottom, then `report`, `run`, `selection`, `analysis`: a module imports its own
sub-package, the ones below it, and the command line's helpers at the top level of `experiments/`
(`_config_path`, `validator_file`, `help`). Entry points (``__main__`` modules, the Hydra `callbacks` and the
``medstrat`` dispatcher `cli`) sit above everything and may import any of them; nothing imports one.
"""

from __future__ import annotations

import ast
import sys
from collections import defaultdict
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from imports import ROOT, Edge, module_name
from test_package_layering import _cycles

# Sub-package -> its floor inside experiments/; a floor may import only lower floors (and itself).
FLOORS = {"stored": 0, "publish": 0, "report": 1, "tracking": 1, "run": 2, "selection": 3, "analysis": 4}
# On top of the floors: what a sub-package must never import although it lies below (the brief of each).
NEVER = {("analysis", "run")}
HELPERS = {"experiments", "experiments._config_path", "experiments.validator_file"}
HELPERS |= {"experiments.help"}
ENTRIES = {"experiments.__main__", "experiments.callbacks", "experiments.cli"}


def _part(module: str) -> str | None:
    """The sub-package of an experiments module, "helper", "entry", or None outside experiments."""
    parts = module.split(".")
    if parts[0] != "experiments":
        return None
    if module in ENTRIES or parts[-1] == "__main__":
        return "entry"
    if len(parts) > 1 and parts[1] in FLOORS:
        return parts[1]
    return "helper"


def _inside(project_edges: tuple[Edge, ...]) -> list[Edge]:
    """The imports from one experiments module to another."""
    return [e for e in project_edges if _part(e.importer) and _part(e.imported) and e.importer != e.imported]


def _against_floors(chosen: list[Edge]) -> list[str]:
    bad = []
    for e in chosen:
        src, dst = _part(e.importer), _part(e.imported)
        if src == dst or src == "entry":
            continue
        if dst == "entry":
            bad.append(f"{e.path.relative_to(ROOT)}:{e.line}: {e.importer} imports the entry {e.imported}")
        elif src == "helper":
            if dst != "helper":
                bad.append(f"{e.path.relative_to(ROOT)}:{e.line}: helper {e.importer} -> {e.imported}")
        elif dst != "helper" and (FLOORS[dst] >= FLOORS[str(src)] or (src, dst) in NEVER):
            bad.append(f"{e.path.relative_to(ROOT)}:{e.line}: {src} -> {dst} ({e.importer} -> {e.imported})")
    return bad


def test_every_experiments_subpackage_imports_only_the_floors_below_it(
    project_edges: tuple[Edge, ...],
) -> None:
    offenders = _against_floors(_inside(project_edges))
    assert not offenders, "imports against the floors of experiments/:\n" + "\n".join(offenders)


def test_the_floor_check_sees_a_run_module_importing_the_analysis() -> None:
    # The check above must be able to fail: an arrow from the run up to the analysis is reported.
    loop = ROOT / "experiments/run/loop.py"
    up = Edge("experiments.run.loop", "experiments.analysis.ablation", loop, 1, True)
    path = ROOT / "experiments/analysis/passk.py"
    back = Edge("experiments.analysis.passk", "experiments.run.plan", path, 1, False)
    assert len(_against_floors([up, back])) == 2


@pytest.mark.parametrize("with_lazy", [False, True], ids=["module-level", "with-function-level"])
def test_the_experiments_subpackages_form_no_cycle(with_lazy: bool, project_edges: tuple[Edge, ...]) -> None:
    graph: dict[str, set[str]] = defaultdict(set)
    for e in _inside(project_edges):
        if with_lazy or not e.lazy:
            src, dst = _part(e.importer), _part(e.imported)
            if src != dst:
                graph[str(src)].add(str(dst))
    for node in [*FLOORS, "helper", "entry"]:
        graph.setdefault(node, set())
    assert _cycles(graph) == []


def test_experiments_keeps_at_most_eight_modules_beside_its_subpackages() -> None:
    top = [module_name(p) for p in sorted((ROOT / "experiments").glob("*.py"))]
    assert len(top) <= 8, top
    for package in FLOORS:
        doc = (ROOT / "experiments" / package / "__init__.py").read_text(encoding="utf-8")
        assert doc.startswith('"""') and len(doc) > 200, f"experiments/{package}/__init__.py: no docstring"


STUDIES = ("analysis", "report", "selection", "stored")
READER = ROOT / "experiments" / "stored" / "run_folder.py"


def _json_parses(path: Path) -> list[int]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        n.lineno
        for n in ast.walk(tree)
        if isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and n.func.attr in ("load", "loads")
        and isinstance(n.func.value, ast.Name)
        and n.func.value.id == "json"
    ]


def test_what_studies_runs_reads_run_folders_through_the_one_reader() -> None:
    # metrics.json, samples.jsonl, run.json, usage.json, roles.json: parsed in stored/run_folder.py only
    files = sorted(p for pkg in STUDIES for p in (ROOT / "experiments" / pkg).rglob("*.py") if p != READER)
    hits = [f"{p.relative_to(ROOT)}:{line}" for p in files for line in _json_parses(p)]
    assert hits == [], "parse run-folder files with experiments.stored.run_folder"
    assert _json_parses(READER)  # the reader itself is seen by the same scan


def _defined(path: Path) -> set[str]:
    """Top-level names a module defines or imports."""
    names: set[str] = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {t.id for t in targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return names


def _module_file(dotted: str) -> Path | None:
    base = ROOT.joinpath(*dotted.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def test_the_project_imports_experiments_modules_by_their_current_path() -> None:
    # The project's own code, tests and scripts name the modules where they are.
    files = [
        *(ROOT / "experiments").rglob("*.py"),
        *(ROOT / "tests").rglob("*.py"),
        *(ROOT / "perf").glob("*.py"),
    ]
    stale = []
    for path in files:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                pairs = [(a.name, None) for a in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                pairs = [(node.module, a.name) for a in node.names]
            else:
                continue
            for module, name in pairs:
                if module.split(".")[0] != "experiments" or module.startswith("experiments.conf"):
                    continue
                found = _module_file(module)
                if found is None or (
                    name is not None
                    and found.name == "__init__.py"
                    and _module_file(f"{module}.{name}") is None
                    and name not in _defined(found)
                ):
                    stale.append(f"{path.relative_to(ROOT)}:{node.lineno}: {module} {name or ''}")
    assert stale == [], "imports of experiments modules by a path that no longer exists:\n" + "\n".join(stale)
