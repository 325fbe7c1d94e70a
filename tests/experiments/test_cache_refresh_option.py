"""``agent.cache=refresh`` (issue 33 item 2): the default cache file, opened to buy every call again."""

from __future__ import annotations

from pathlib import Path

import pytest

from agents.model.cache import RequestCache
from experiments.run.request_cache import CACHE_ENV, resolve_cache


def test_refresh_opens_the_default_file_to_rebuy_and_overwrite(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "requests.sqlite"))
    cache = resolve_cache("refresh")
    assert isinstance(cache, RequestCache) and cache.refresh and cache.path == tmp_path / "requests.sqlite"
    assert resolve_cache("auto") == str(tmp_path / "requests.sqlite")


def test_refresh_with_the_default_cache_turned_off_is_no_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CACHE_ENV, "off")
    assert resolve_cache("refresh") is None
