"""The project's own import graph, read with `ast` (nothing is imported): shared by the layout tests."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("core", "medio", "benchmark", "validator", "agents", "strategies", "experiments")


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


def _lines_under(tree: ast.AST, kinds: tuple[type[ast.AST], ...]) -> set[int]:
    return {
        n.lineno
        for f in ast.walk(tree)
        if isinstance(f, kinds)
        for n in ast.walk(f)
        if isinstance(n, (ast.Import, ast.ImportFrom))
    }


def edges() -> list[Edge]:
    """Every import of a project module by a project module (``from m import x``: ``m.x`` if a module)."""
    known = {module_name(p) for p in source_files()}
    found: list[Edge] = []
    for path in source_files():
        importer = module_name(path)
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        lazy_lines = _lines_under(tree, (ast.FunctionDef, ast.AsyncFunctionDef))
        # `if TYPE_CHECKING:` imports never run: they are not edges of the import graph.
        typing_lines = {
            n.lineno
            for block in ast.walk(tree)
            if isinstance(block, ast.If) and "TYPE_CHECKING" in ast.unparse(block.test)
            for stmt in block.body
            for n in ast.walk(stmt)
        }
        for node in ast.walk(tree):
            if getattr(node, "lineno", None) in typing_lines:
                continue
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = _resolve(node, importer, path.name == "__init__.py")
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
            for target in targets:
                if target.split(".")[0] in PACKAGES:
                    found.append(Edge(importer, target, path, node.lineno, node.lineno in lazy_lines))
    return found
