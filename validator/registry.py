"""The check registry (``@check``) and profile loading (``conf/validator/*.yaml``).

A check is a function ``fn(view) -> CheckResult`` registered under a name with a default weight, the JSON
field paths it covers and whether it is high-risk (S2's checklist). A profile is a YAML file naming the
modules that define its checks and a weight per check; users add a check by decorating a function in their own
module and naming the module in their profile YAML.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from core.registry import Registry, UnknownNameError
from validator.profile_files import compose
from validator.report import CheckResult

log = logging.getLogger(__name__)

Scope = Literal["sample", "meta"]
CheckFn = Callable[[Any], CheckResult]

BUILTIN_MODULES = (
    "validator.checks.structure",
    "validator.checks.mdsbench",
    "validator.checks.evidence_source",
    "validator.checks.evidence_payload",
    "validator.checks.evidence_extra",
    "validator.checks.meta",
    "validator.checks.consistency",
    "validator.checks.evidence_support",
    "validator.checks.evidence_docs",
)


class ProfileError(ValueError):
    """A profile YAML is missing, malformed, or names an unknown check."""


@dataclass(frozen=True)
class CheckSpec:
    """A registered check.

    Attributes:
        name: Unique name, used in profiles and reports.
        fn: ``fn(view) -> CheckResult``; ``view`` is a ``SampleView`` (scope "sample") or
            ``MetaView`` ("meta").
        weight: Default weight when a profile lists the check without one.
        fields: JSON field paths the check covers (the result may narrow them).
        high_risk: Whether a failure goes into S2's checklist.
        scope: "sample" (one annotation) or "meta" (the candidate's ``data_meta.json``).
    """

    name: str
    fn: CheckFn
    weight: float = 1.0
    fields: tuple[str, ...] = ()
    high_risk: bool = False
    scope: Scope = "sample"

    @property
    def doc(self) -> str:
        """First line of the check function's docstring."""
        return (self.fn.__doc__ or "").strip().splitlines()[0] if self.fn.__doc__ else ""


checks: Registry[CheckSpec] = Registry("check", entry_point_group="medstrat.checks")
"""Every registered check by name (`check` fills it; profiles name its entries)."""


def check(
    name: str,
    *,
    weight: float = 1.0,
    fields: tuple[str, ...] = (),
    high_risk: bool = False,
    scope: Scope = "sample",
) -> Callable[[CheckFn], CheckFn]:
    """Register a check function under ``name``.

    Args:
        name: Unique check name.
        weight: Default weight in profiles that do not override it.
        fields: JSON field paths the check covers.
        high_risk: Whether failures are S2 checklist items.
        scope: "sample" or "meta".

    Returns:
        A decorator returning the function unchanged.

    Raises:
        ValueError: If another function already holds the name.
    """

    def register(fn: CheckFn) -> CheckFn:
        existing = checks.find(name)
        if existing is not None and existing.fn.__qualname__ != fn.__qualname__:
            raise ValueError(f"check {name!r} is already registered by {existing.fn.__module__}")
        # The same function defined again (a reload) replaces its entry; the specs differ as objects.
        spec = CheckSpec(name, fn, float(weight), tuple(fields), high_risk, scope)
        checks.add(name, spec, replace=existing is not None, high_risk=high_risk, scope=scope)
        return fn

    return register


def get_check(name: str) -> CheckSpec:
    """The registered check ``name``.

    Raises:
        KeyError: Naming the valid checks when ``name`` is unknown.
    """
    try:
        return checks.get(name)
    except UnknownNameError:
        raise KeyError(f"unknown check {name!r}; registered: {', '.join(checks.names())}") from None


def registered_checks() -> dict[str, CheckSpec]:
    """A copy of the registry (after importing the built-in check modules)."""
    for module in BUILTIN_MODULES:
        importlib.import_module(module)
    return {name: checks.get(name) for name in checks.names()}


@dataclass(frozen=True)
class Profile:
    """A named list of weighted checks plus options the checks read (e.g. ``ncc_threshold``).

    Attributes:
        name: The profile name.
        checks: Per-sample checks with their weights, in order.
        meta_checks: ``data_meta.json`` checks with their weights, in order.
        options: Free options passed to the checks through the view.
        fitted: For weights learned from ground truth (``medstrat validator-eval --fit``),
            how they were fitted (``fitted:`` in the YAML); None for a hand-set profile. Runs and tables
            that use a fitted profile say so.
    """

    name: str
    checks: tuple[tuple[CheckSpec, float], ...]
    meta_checks: tuple[tuple[CheckSpec, float], ...] = ()
    options: dict[str, Any] = field(default_factory=dict)
    fitted: dict[str, Any] | None = None

    @property
    def weights(self) -> dict[str, float]:
        """Per-sample check name → weight."""
        return {spec.name: w for spec, w in self.checks}


def profile_dirs() -> list[Path]:
    """Folders searched for ``<name>.yaml``: the checkout's ``conf/validator`` or the installed copy.

    The configs live at the top of the repository and ship in the wheel as ``experiments/conf``; both are
    found by path so that the validator never imports ``experiments``.
    """
    top = Path(__file__).resolve().parent.parent
    return [p for p in (top / "conf" / "validator", top / "experiments" / "conf" / "validator") if p.is_dir()]


def load_profile(name_or_path: str | Path) -> Profile:
    """Load a profile by name (``evidence``, ``mdsbench``, any ``conf/validator/<name>.yaml``) or YAML path.

    A ``defaults:`` list composes the profiles it names first (`validator.profile_files`).

    Args:
        name_or_path: A profile name or a path to a YAML file.

    Returns:
        The resolved profile.

    Raises:
        ProfileError: If the file is missing or malformed, or names an unknown check.
    """
    path = _find_profile(name_or_path)
    try:
        # The profiles it extends (``defaults: [evidence, _self_]``) composed in, as Hydra composes them.
        data = compose(path, _find_profile)
    except ProfileError:
        raise
    except ValueError as exc:
        raise ProfileError(str(exc)) from exc
    if not isinstance(data.get("profile"), str):
        raise ProfileError(f"{path}: a profile is a mapping with a string 'profile:' key")
    modules = data.get("module", data.get("modules", []))
    for module in (*BUILTIN_MODULES, *([modules] if isinstance(modules, str) else list(modules or []))):
        try:
            importlib.import_module(module)
        except ImportError as exc:
            raise ProfileError(f"{path}: cannot import check module {module!r}: {exc}") from exc
    try:
        checks = _weighted(data.get("checks") or {}, "sample")
        meta = _weighted(data.get("meta_checks") or {}, "meta")
    except KeyError as exc:
        raise ProfileError(f"{path}: {exc.args[0]}") from exc
    fitted = data.get("fitted")
    if fitted is not None and not isinstance(fitted, dict):
        raise ProfileError(f"{path}: 'fitted:' must be a mapping (how the weights were learned)")
    return Profile(str(data["profile"]), checks, meta, dict(data.get("options") or {}), fitted)


def _find_profile(name_or_path: str | Path) -> Path:
    candidate = Path(name_or_path)
    if candidate.suffix in {".yaml", ".yml"} or candidate.is_file():
        if not candidate.is_file():
            raise ProfileError(f"{candidate}: profile file not found")
        return candidate
    for folder in profile_dirs():
        path = folder / f"{name_or_path}.yaml"
        if path.is_file():
            return path
    known = sorted({p.stem for d in profile_dirs() for p in d.glob("*.yaml")})
    raise ProfileError(f"unknown validator profile {name_or_path!r}; available: {', '.join(known) or 'none'}")


def _weighted(entries: dict[str, Any] | list[Any], scope: Scope) -> tuple[tuple[CheckSpec, float], ...]:
    items = entries.items() if isinstance(entries, dict) else ((e, None) for e in entries)
    out: list[tuple[CheckSpec, float]] = []
    for name, weight in items:
        spec = get_check(str(name))
        if spec.scope != scope:
            raise KeyError(f"check {name!r} has scope {spec.scope!r} but is listed under the {scope} checks")
        out.append((spec, spec.weight if weight is None else float(weight)))
    return tuple(out)
