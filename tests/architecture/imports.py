"""The project's own import graph, read with `ast` (nothing is imported): shared by the layout tests."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("core", "medio", "benchmark", "validator", "agents", "testbed", "strategies", "experiments")


@dataclass(frozen=True)
class Edge:
    """``importer`` imports ``imported`` (module names) on ``line`` of ``path``; ``lazy``: in a function."""

    importer: str
    imported: str
    path: Path
    line: int
    lazy: bool


def module_name(path: Path) -> str:
    """The dotted module name of a file of the repository."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def source_files() -> list[Path]:
    """Every Python file of the packages."""
    return sorted(p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py"))


def _resolve(node: ast.ImportFrom, importer: str, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    base = importer.split(".") if is_package else importer.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


# Fields holding statement lists: an import is a statement, so only these need visiting (walking every
# expression node with `ast.walk` cost ~4 CPU s per reading of the project).
_BLOCKS = ("body", "orelse", "finalbody", "handlers", "cases")


def _imports(
    body: list[ast.stmt], lazy: bool = False, with_typing: bool = False
) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool]]:
    """Every import statement under ``body`` with whether it sits inside a function.

    The body of an ``if TYPE_CHECKING:`` block is left out unless ``with_typing``: those imports never run, so
    they are not edges of the import graph at run time (its ``else`` branch does run); they still tie two
    modules together for a reader and a type checker.
    """
    for node in body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node, lazy
            continue
        inner = lazy or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        typing_only = isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
        for field in _BLOCKS:
            if field == "body" and typing_only and not with_typing:
                continue
            for child in getattr(node, field, ()):
                if isinstance(child, (ast.ExceptHandler, ast.match_case)):
                    yield from _imports(child.body, inner, with_typing)
                else:
                    yield from _imports([child], inner, with_typing)


def edges(with_typing: bool = False) -> list[Edge]:
    """Every import of a project module by a project module (``from m import x``: ``m.x`` if a module).

    Args:
        with_typing: Also the imports under ``if TYPE_CHECKING:``.
    """
    files = source_files()
    known = {module_name(p) for p in files}
    found: list[Edge] = []
    for path in files:
        importer = module_name(path)
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node, lazy in _imports(tree.body, with_typing=with_typing):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                base = _resolve(node, importer, path.name == "__init__.py")
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
            for target in targets:
                if target.split(".")[0] in PACKAGES:
                    found.append(Edge(importer, target, path, node.lineno, lazy))
    return found
