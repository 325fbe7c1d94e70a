"""The Hydra config is read in one place: below the command line, only the plan builder of `experiments.run`.

`experiments/run/plan.py` (with `roles.py` and `options.py`, the parts of the config it hands them) turns the
composed `DictConfig` into the typed `RunPlan` and its `RunSettings`; every other module of the run takes
those. The entry points (`run_experiment`, `preflight`) receive the config, but may only hand it on to the
plan builder. Checked with `ast` on the source, nothing imported.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from imports import ROOT

RUN = ROOT / "experiments" / "run"
PLAN_BUILDER = {"plan.py", "roles.py", "options.py"}
# What may receive the config itself: the plan builder's entry points, and the preflight that calls them.
HAND_ON = {"build_components", "read_settings", "preflight"}


def _typing_only(tree: ast.AST) -> set[int]:
    return {
        id(n)
        for block in ast.walk(tree)
        if isinstance(block, ast.If) and "TYPE_CHECKING" in ast.unparse(block.test)
        for stmt in block.body
        for n in ast.walk(stmt)
    }


def _annotations(tree: ast.AST) -> set[int]:
    """The nodes of every annotation (a type named there is not a use of it)."""
    roots: list[ast.AST] = []
    for n in ast.walk(tree):
        if isinstance(n, ast.arg | ast.AnnAssign) and n.annotation is not None:
            roots.append(n.annotation)
        elif isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.returns is not None:
            roots.append(n.returns)
    return {id(x) for root in roots for x in ast.walk(root)}


def _config_names(func: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """Parameters of ``func`` that hold the config: annotated `DictConfig`, or named ``cfg``."""
    params = [*func.args.posonlyargs, *func.args.args, *func.args.kwonlyargs]
    return {
        a.arg
        for a in params
        if a.arg == "cfg" or (a.annotation is not None and "DictConfig" in ast.unparse(a.annotation))
    }


def _called_name(call: ast.Call) -> str:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def config_reads(source: str, name: str) -> list[str]:
    """Every place of ``source`` that reads the Hydra config instead of handing it to the plan builder."""
    tree = ast.parse(source, filename=name)
    typing_only = _typing_only(tree) | _annotations(tree)
    found: list[str] = []
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import | ast.ImportFrom):
            modules = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            if any(m.split(".")[0] == "omegaconf" for m in modules):
                found.append(f"{name}:{node.lineno}: imports omegaconf")
        elif isinstance(node, ast.Name) and node.id in ("OmegaConf", "DictConfig"):
            found.append(f"{name}:{node.lineno}: uses {node.id}")
    for func in ast.walk(tree):
        if not isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        names = _config_names(func)
        if not names:
            continue
        handed = {
            id(arg)
            for call in ast.walk(func)
            if isinstance(call, ast.Call) and _called_name(call) in HAND_ON
            for arg in [*call.args, *(k.value for k in call.keywords)]
        }
        for node in ast.walk(func):
            if isinstance(node, ast.Name) and node.id in names and id(node) not in handed:
                found.append(f"{name}:{node.lineno}: {func.name} reads the config ({node.id})")
    return found


def test_only_the_plan_builder_of_the_run_reads_the_config() -> None:
    offenders = [
        hit
        for path in sorted(RUN.glob("*.py"))
        if path.name not in PLAN_BUILDER
        for hit in config_reads(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))
    ]
    assert offenders == []


def test_the_check_finds_a_config_read_below_the_plan() -> None:
    # Each of these is a read the check must refuse; handing the config to the plan builder is not one.
    read_key = "def finish(cfg: DictConfig) -> str:\n    return str(cfg.run.name)\n"
    renamed = "def split(config: 'DictConfig') -> int:\n    return int(config.get('processes'))\n"
    helper = "def loop(cfg):\n    executor(cfg)\n"
    imported = "from omegaconf import OmegaConf\n"
    for source in (read_key, renamed, helper, imported):
        assert config_reads(source, "x.py"), source
    handed = "def run_experiment(cfg: DictConfig) -> None:\n    plan = build_components(cfg, settings=None)\n"
    assert config_reads(handed, "x.py") == []


def test_the_plan_builder_is_where_the_check_says() -> None:
    assert all((RUN / name).is_file() for name in PLAN_BUILDER)
    assert config_reads((RUN / "plan.py").read_text(encoding="utf-8"), "plan.py")  # it does read the config
