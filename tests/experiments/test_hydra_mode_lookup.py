"""`python -m experiments` skips the config composition Hydra does only to read ``hydra.mode``
(`experiments.__main__._cheap_mode_lookup`); right only while no config of ours sets ``hydra.mode``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from experiments._config_path import config_dir


def test_no_config_file_sets_hydra_mode() -> None:
    files = sorted(config_dir().rglob("*.yaml"))
    assert len(files) > 10
    setting = []
    for path in files:
        data = yaml.safe_load(path.read_text()) or {}
        hydra_node = data.get("hydra") if isinstance(data, dict) else None
        if isinstance(hydra_node, dict) and "mode" in hydra_node:
            setting.append(path.name)
    assert not setting, f"these set hydra.mode; the cheap lookup would ignore it: {setting}"


@pytest.fixture(scope="module")
def hydra_app() -> Iterator[Any]:
    """Hydra's app object on our configs (the one `_run_hydra` asks for the mode), cleared afterwards."""
    from hydra._internal.hydra import Hydra
    from hydra._internal.utils import create_config_search_path
    from hydra.core.global_hydra import GlobalHydra

    GlobalHydra.instance().clear()
    yield Hydra.create_main_hydra2(
        task_name="t", config_search_path=create_config_search_path(str(config_dir()))
    )
    GlobalHydra.instance().clear()


@pytest.mark.parametrize(
    "overrides",
    [["strategy=s0"], ["strategy=s0,s3", "hydra/launcher=local_joblib"], ["hydra.mode=MULTIRUN"]],
    ids=["run", "sweep", "mode override"],
)
def test_the_cheap_lookup_answers_what_hydra_does(hydra_app: Any, overrides: list[str]) -> None:
    from hydra._internal.hydra import Hydra

    from experiments.__main__ import _cheap_mode_lookup

    installed = Hydra.get_mode  # an earlier in-process `cli()` of this worker may have set the cheap one
    original = getattr(installed, "_medstrat_original", installed)
    expected = original(hydra_app, "config", list(overrides))
    Hydra.get_mode = original  # type: ignore[method-assign]
    try:
        _cheap_mode_lookup()
        assert Hydra.get_mode is not original
        assert hydra_app.get_mode("config", list(overrides)) == expected
    finally:
        Hydra.get_mode = installed  # type: ignore[method-assign]
