"""The layout rules of docs/architecture.md, checked on the source (read with `ast`, nothing imported)."""

from __future__ import annotations

import ast
import re
import sys
from collections import defaultdict
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from imports import PACKAGES, ROOT, Edge, edges, module_name, source_files

# What each floor may import (besides itself and third-party packages): docs/architecture.md.
ALLOWED = {
    "core": set(),
    "medio": {"core"},
    "benchmark": {"core", "medio"},
    "validator": {"core", "medio", "benchmark"},
    "agents": {"core", "medio", "benchmark", "validator"},
    # The test material (suites, simulated candidates, the offline model double) sits beside the product: it
    # may use the product's lower floors; only `experiments` reaches it (a suite chosen as the benchmark).
    "testbed": {"core", "medio", "benchmark", "validator", "agents"},
    "strategies": {"core", "medio", "benchmark", "validator", "agents"},
    "experiments": {"core", "medio", "benchmark", "validator", "agents", "testbed", "strategies"},
}


def _top(module: str) -> str:
    return module.split(".")[0]


def _is_private(module: str) -> bool:
    return any(part.startswith("_") and not part.startswith("__") for part in module.split("."))


def test_no_module_imports_a_private_module_of_another_package(project_edges: tuple[Edge, ...]) -> None:
    offenders = [
        f"{e.path.relative_to(ROOT)}:{e.line}: {e.imported}"
        for e in project_edges
        if _top(e.importer) != _top(e.imported) and _is_private(e.imported)
    ]
    assert not offenders, "private modules imported across packages:\n" + "\n".join(offenders)


def test_every_floor_imports_only_the_floors_below_it(project_edges: tuple[Edge, ...]) -> None:
    offenders = [
        f"{e.path.relative_to(ROOT)}:{e.line}: {e.importer} -> {e.imported}"
        for e in project_edges
        if _top(e.importer) != _top(e.imported) and _top(e.imported) not in ALLOWED[_top(e.importer)]
    ]
    assert not offenders, "imports against the floors:\n" + "\n".join(offenders)


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative-free for small graphs)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


@pytest.mark.parametrize("with_lazy", [False, True], ids=["module-level", "with-function-level"])
def test_the_import_graph_has_no_cycle(with_lazy: bool, project_edges: tuple[Edge, ...]) -> None:
    assert _cycles(_graph([e for e in project_edges if with_lazy or not e.lazy])) == []


def test_no_cycle_either_through_the_imports_for_the_type_checker() -> None:
    assert _cycles(_graph(edges(with_typing=True))) == []


def test_the_cycle_check_sees_a_cycle_closed_inside_a_function() -> None:
    here = ROOT / "x.py"
    planted = [
        Edge("benchmark.a", "benchmark.b", here, 1, False),
        Edge("benchmark.b", "benchmark.a", here, 2, True),
    ]
    assert _cycles(_graph(planted, {"benchmark.a", "benchmark.b"})) == [["benchmark.a", "benchmark.b"]]


def _graph(chosen: list[Edge], modules: set[str] | None = None) -> dict[str, set[str]]:
    modules = modules if modules is not None else {module_name(p) for p in source_files()}
    graph: dict[str, set[str]] = defaultdict(set)
    for e in chosen:
        if e.imported in modules and e.imported != e.importer:
            graph[e.importer].add(e.imported)
    for m in modules:
        graph.setdefault(m, set())
    return graph


def test_every_module_opens_with_the_one_concept_it_holds() -> None:
    # A module is one concept (docs/architecture.md "One concept per module"): its docstring's first line
    # names it, so a reader sees a package's concepts from the first lines without reading the files.
    missing = []
    for path in source_files():
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")), clean=False)
        if not doc or not doc.splitlines()[0].strip():
            missing.append(str(path.relative_to(ROOT)))
    assert missing == [], "modules without a first docstring line naming their concept:\n" + "\n".join(
        missing
    )


def _satellites(chosen: list[Edge], modules: set[str]) -> set[str]:
    """Modules ``x_y`` beside a module ``x`` (or ``_x``) that only ``x`` imports: one concept in two files."""
    importers: dict[str, set[str]] = defaultdict(set)
    for e in chosen:
        if e.importer != e.imported:
            importers[e.imported].add(e.importer)
    found = set()
    for module in modules:
        package, _, stem = module.rpartition(".")
        parts = stem.lstrip("_").split("_")
        for i in range(1, len(parts)):
            base = f"{package}.{'_'.join(parts[:i])}"
            for owner in (base, f"{package}._{'_'.join(parts[:i])}"):
                if owner in modules and importers[module] == {owner}:
                    found.add(module)
    return found


def test_no_module_is_a_satellite_of_another() -> None:
    # Split when a second concept moves in, never to meet a line count: a `leaderboard_figure.py` that only
    # `leaderboard.py` imports is part of the leaderboard. Give a second concept a name of its own.
    found = _satellites(edges(with_typing=True), {module_name(p) for p in source_files()})
    assert not found, sorted(found)


def test_the_satellite_check_sees_a_figure_split_from_its_module() -> None:
    here = ROOT / "x.py"
    board, figure, other = (
        "experiments.selection.board",
        "experiments.selection.board_figure",
        "experiments.x",
    )
    planted = [Edge(board, figure, here, 1, False)]
    assert _satellites(planted, {board, figure}) == {figure}
    # Imported elsewhere too, it is a concept of its own (a shared piece), not a satellite.
    assert _satellites([*planted, Edge(other, figure, here, 2, True)], {board, figure, other}) == set()


def test_no_strategy_switches_on_a_profile_string() -> None:
    # A different procedure is a different strategy (strategies/paper/), never a string switch in one.
    pattern = re.compile(r"""profile\s*(==|!=|in)\s*[\("']|getattr\([^)]*["']profile["']""")
    hits = [
        f"{p.relative_to(ROOT)}:{i}"
        for p in (ROOT / "strategies").rglob("*.py")
        for i, line in enumerate(p.read_text().splitlines(), 1)
        if pattern.search(line)
    ]
    assert hits == []


def test_the_packages_listed_here_are_the_projects() -> None:
    assert all((ROOT / p / "__init__.py").is_file() for p in PACKAGES)


def test_the_selectors_do_not_load_the_scorer_until_the_oracle_runs() -> None:
    # Only the oracle reaches ground truth, through the scorer: importing the selectors must not load it.
    import subprocess

    code = "import sys, strategies.selectors; "
    code += "print(any(m.startswith('benchmark.score') for m in sys.modules))"
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "False"
