"""`core.registry.Registry`: one typed registry for every kind of plug-in."""

from __future__ import annotations

import pytest

from core.registry import DuplicateNameError, OptionError, Registry, UnknownNameError


def test_a_second_plugin_under_a_taken_name_is_refused_naming_both() -> None:
    reg: Registry[object] = Registry("widget")

    @reg.register("w")
    def first() -> int:
        return 1

    def second() -> int:
        return 2

    with pytest.raises(DuplicateNameError, match=r"widget 'w' is already registered by .*first"):
        reg.add("w", second)
    reg.add("w", first)  # the same object again is not a duplicate
    assert reg.get("w") is first


def test_a_lazy_entry_is_imported_on_first_use_and_a_typo_lists_the_names() -> None:
    reg: Registry[object] = Registry("widget", lazy={"dumps": "json:dumps"})
    import json

    assert reg.get("dumps") is json.dumps
    with pytest.raises(UnknownNameError, match=r"unknown widget 'dump'; valid widgets: dumps"):
        reg.get("dump")


def test_metadata_is_kept_per_entry_and_selects_names() -> None:
    reg: Registry[object] = Registry("strategy")
    reg.add("a", len, candidates=True, reselectable=True)
    reg.add("b", abs, candidates=False)
    assert reg.meta("a") == {"candidates": True, "reselectable": True}
    assert reg.meta("b") == {"candidates": False}
    assert reg.names_where(reselectable=True) == ["a"]


def test_create_resolves_a_nested_plugin_and_checks_the_options() -> None:
    inner: Registry[object] = Registry("selector")
    inner.add("first", min)
    outer: Registry[object] = Registry("strategy", nested={"selector": lambda spec: inner.get(str(spec))})

    def factory(n: int = 1, selector: object = None) -> tuple[int, object]:
        return n, selector

    outer.add("s", factory)
    assert outer.create("s", {"n": "3", "selector": "first"}) == (3, min)
    with pytest.raises(OptionError, match=r"strategy\.m: unknown option .*valid options: n, selector"):
        outer.create("s", {"m": 1, "selector": "first"})
