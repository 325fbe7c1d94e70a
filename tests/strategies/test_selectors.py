"""The selector registry: names, typos, decorator plug-ins, `_target_` plug-ins, and the oracle guard."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from core.registry import Registry, UnknownNameError
from strategies.selectors import OracleNotAllowed, build_selector, selector, selectors, validator_max


def test_a_typo_lists_every_valid_selector_name() -> None:
    with pytest.raises(UnknownNameError) as err:
        build_selector("validator_mx")
    message = str(err.value)
    for name in ("validator_max", "majority", "random", "first", "oracle"):
        assert name in message


def test_a_decorator_registered_selector_is_found_by_name() -> None:
    @selector("always_last_test")
    def always_last(index, candidates, reports, task):
        return len(candidates) - 1

    assert build_selector("always_last_test") is always_last
    assert build_selector({"name": "always_last_test"}) is always_last


def test_target_names_a_function_in_a_module_the_user_wrote(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "my_pkg_sel.py").write_text(
        textwrap.dedent("""
        def my_selector(index, candidates, reports, task):
            return 0

        class Threshold:
            def __init__(self, at):
                self.at = at

            def __call__(self, index, candidates, reports, task):
                return 1
    """)
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("my_pkg_sel", None)
    plain = build_selector({"_target_": "my_pkg_sel.my_selector"})
    assert plain.__name__ == "my_selector"
    built = build_selector({"_target_": "my_pkg_sel.Threshold", "at": 0.9})
    assert type(built).__name__ == "Threshold" and built.at == 0.9  # type: ignore[attr-defined]


def test_the_oracle_needs_analysis_oracle_true() -> None:
    with pytest.raises(OracleNotAllowed, match=r"analysis\.oracle=true"):
        build_selector("oracle")
    assert build_selector("oracle", allow_oracle=True) is selectors.get("oracle")


def test_no_selector_means_validator_max() -> None:
    assert build_selector(None) is validator_max


def test_lazy_entries_import_on_first_use_and_bad_paths_say_what_failed() -> None:
    reg: Registry[object] = Registry("widget", lazy={"path": "pathlib:Path", "broken": "pathlib:Nope"})
    assert reg.get("path") is Path
    with pytest.raises(ImportError, match="Nope"):
        reg.get("broken")
    assert reg.names() == ["broken", "path"]
