"""The agents' seams and the modules that only forward names, checked on the source (`ast`, nothing imported).

`agents/` holds three seams beside the protocol and the rules agent (docs/agents.md): the model client
(`agents.model`), the folder tools any agent may call (`agents.tools`) and the model-driven agent with its
modes (`agents.llm`). The client knows no tool and no mode; the tools know no mode. Imports under
``if TYPE_CHECKING:`` and inside functions count: they tie two modules together for a reader too.
"""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from imports import PACKAGES, ROOT, Edge, edges, module_name, source_files

MODEL, TOOLS, AGENT = "agents.model", "agents.tools", "agents.llm"


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


@pytest.fixture(scope="module")
def all_edges() -> tuple[Edge, ...]:
    """Every project import, with those for the type checker (``with_typing``): ~1.4 CPU s."""
    return tuple(edges(with_typing=True))


def _crossing(found: tuple[Edge, ...], importer: str, forbidden: tuple[str, ...]) -> list[str]:
    return [
        f"{e.path.relative_to(ROOT)}:{e.line}: {e.importer} -> {e.imported}"
        for e in found
        if _within(e.importer, importer) and any(_within(e.imported, f) for f in forbidden)
    ]


def test_the_seams_exist_and_the_old_tower_is_gone() -> None:
    for package in (MODEL, TOOLS, AGENT):
        assert (ROOT / package.replace(".", "/") / "__init__.py").is_file(), package
    assert not (ROOT / "agents" / "litellm").exists()


def test_the_model_client_imports_no_tool_and_no_mode(all_edges: tuple[Edge, ...]) -> None:
    offenders = _crossing(all_edges, MODEL, (TOOLS, AGENT))
    assert not offenders, "agents.model reaches the tools or the agent:\n" + "\n".join(offenders)


def test_the_tools_import_no_agent_and_no_mode(all_edges: tuple[Edge, ...]) -> None:
    offenders = _crossing(all_edges, TOOLS, (AGENT,))
    assert not offenders, "agents.tools reaches the agent or its modes:\n" + "\n".join(offenders)


def test_the_seam_checks_see_a_crossing_inside_a_function() -> None:
    here = ROOT / "x.py"
    planted = (Edge("agents.model.client", "agents.llm.guided", here, 3, True),)
    assert _crossing(planted, MODEL, (TOOLS, AGENT)) == ["x.py:3: agents.model.client -> agents.llm.guided"]


def _forwards_only(tree: ast.Module) -> bool:
    """Whether a module's statements do nothing but bring in names from the project and hand them on.

    A docstring, ``from __future__``, ``__all__``, imports of project modules, and a helper so imported that
    makes the module stand for another (`_stands_for_another`) are forwarding; one definition, or one
    statement doing anything else, is code of its own.
    """
    imported: set[str] = set()
    body = tree.body[1:] if ast.get_docstring(tree) is not None else tree.body
    if not body:
        return False  # a docstring alone forwards nothing
    for node in body:
        if isinstance(node, ast.ImportFrom) and node.module == "__future__":
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            relative = isinstance(node, ast.ImportFrom) and node.level > 0
            module = node.module if isinstance(node, ast.ImportFrom) else node.names[0].name
            if not relative and (module or "").split(".")[0] not in PACKAGES:
                return False
            imported |= {(a.asname or a.name).split(".")[0] for a in node.names}
            continue
        if isinstance(node, ast.Assign) and [ast.unparse(t) for t in node.targets] == ["__all__"]:
            continue
        if isinstance(node, (ast.Assign, ast.Expr)) and _stands_for_another(node, imported):
            continue
        return False
    return True


def _stands_for_another(node: ast.Assign | ast.Expr, imported: set[str]) -> bool:
    """``__getattr__ = short_name(__name__, ...)`` or ``moved(__name__, ...)``: the module made to stand for
    another by an imported helper (a call that does work, such as ``preload()``, is code of its own)."""
    if not isinstance(node.value, ast.Call):
        return False
    names = {n.id for n in ast.walk(node.value) if isinstance(n, ast.Name)}
    if not names - {"__name__"} <= imported or "__name__" not in names:
        return False
    return isinstance(node, ast.Expr) or [ast.unparse(t) for t in node.targets] == ["__getattr__"]


def forwarders() -> set[str]:
    """Modules of the project (package ``__init__`` files aside: they may name their public API) that only
    forward names."""
    return {
        module_name(p)
        for p in source_files()
        if p.name != "__init__.py" and _forwards_only(ast.parse(p.read_text(encoding="utf-8")))
    }


def test_no_module_exists_only_to_forward_a_name() -> None:
    found = sorted(forwarders())
    assert not found, (
        "modules that only forward names (import from the module that defines them):\n" + "\n".join(found)
    )


PLANTED = {
    "short-name": ("from core.names import short_name", '__getattr__ = short_name(__name__, "a.b")'),
    "moved": ("from core.names import moved", 'moved(__name__, "a", "b")'),
    "re-export": ("from __future__ import annotations", "from agents.llm.agent import A", '__all__ = ["A"]'),
    "entry-call": ("from experiments.cli import main", "main()"),
    "constant": ("from agents.base import Task", "LIMIT = 3"),
    "function": ("from agents.base import Task", "def f(t: Task) -> int:", "    return 1"),
    "third-party": ("from litellm import completion",),
    "docstring": (),
}
"""Planted modules (each after a docstring) and whether each only forwards a name."""
FORWARDS = {"short-name", "moved", "re-export"}


@pytest.mark.parametrize("case", sorted(PLANTED))
def test_the_forwarder_check_tells_a_forward_from_code(case: str) -> None:
    source = "\n".join(['"""A module."""', *PLANTED[case]]) + "\n"
    assert _forwards_only(ast.parse(source)) is (case in FORWARDS)


def test_no_package_is_named_after_a_dependency() -> None:
    # A folder is named for what it does, not for the library it wraps (the model client is agents/model,
    # not agents/litellm): a dependency's name as a package name says nothing of the code inside.
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    deps = {
        re.split(r"[<>=!~\[; ]", d, maxsplit=1)[0].lower().replace("-", "_") for d in project["dependencies"]
    }
    folders = {p.parent.relative_to(ROOT).as_posix() for p in source_files() if p.name == "__init__.py"}
    named = sorted(f for f in folders if f.rsplit("/", 1)[-1].lower() in deps)
    assert named == []
