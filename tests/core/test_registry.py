"""`core.registry.Registry`: one typed registry for every kind of plug-in."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from core.registry import (
    DuplicateNameError,
    OptionError,
    Registry,
    UnknownNameError,
    call_with_options,
    flat_options,
    options_signature,
)


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


@flat_options
@dataclass(frozen=True)
class _Conn:
    host: str
    port: int = 80
    headers: tuple[str, ...] = field(default=(), metadata={"config": str | list[str]})

    def __post_init__(self) -> None:
        if self.port < 1:
            raise ValueError(f"port must be 1 or more, got {self.port}")
        given: object = self.headers
        object.__setattr__(self, "headers", (given,) if isinstance(given, str) else tuple(self.headers))


class _Client:
    def __init__(self, conn: _Conn, *, retries: int = 0) -> None:
        self.conn, self.retries = conn, retries


def test_a_flat_options_dataclass_is_given_by_its_fields_and_checks_its_values() -> None:
    made = call_with_options(_Client, {"host": "h", "port": "8", "headers": "a", "retries": 2}, "client")
    assert made.conn == _Conn("h", 8, ("a",)) and made.retries == 2
    assert list(options_signature(_Client).parameters) == ["host", "port", "headers", "retries"]
    with pytest.raises(
        OptionError, match=r"^client\.hots: unknown option of _Client; valid options: host, port"
    ):
        call_with_options(_Client, {"host": "h", "hots": "x"}, "client")
    with pytest.raises(OptionError, match=r"^client\.port='x': input should be a valid integer"):
        call_with_options(_Client, {"host": "h", "port": "x"}, "client")
    with pytest.raises(
        OptionError, match=r"^client: _Client refused its options \(port must be 1 or more, got 0\)"
    ):
        call_with_options(_Client, {"host": "h", "port": 0}, "client")
