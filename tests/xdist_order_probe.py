"""A plugin for `tests/test_xdist_groups.py`: records, in each xdist worker, whether the worker's groups file
(`xdist_scheduling`) was already written when xdist sent the controller the worker's collection.

The controller schedules as soon as the last collection arrives, so a file written after that message is a
race the scheduler can lose; this makes the order visible on every run instead of on an unlucky one. It
writes one line per worker, ``gw0 written`` or ``gw0 missing``, to the file ``XDIST_ORDER_PROBE`` names.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    workerinput = getattr(config, "workerinput", None)
    if workerinput is None:
        return
    record = Path(os.environ["XDIST_ORDER_PROBE"])
    worker = str(workerinput["workerid"])
    written = Path(workerinput["medstrat_xdist_groups"]) / f"{worker}.json"
    # xdist's worker side is the plugin that sends events; it has no public name to look it up by.
    (interactor,) = [plugin for plugin in config.pluginmanager.get_plugins() if hasattr(plugin, "sendevent")]
    send = interactor.sendevent

    def sendevent(name: str, **kwargs: Any) -> None:
        if name == "collectionfinish":
            with record.open("a", encoding="utf-8") as out:
                out.write(f"{worker} {'written' if written.is_file() else 'missing'}\n")
        send(name, **kwargs)

    interactor.sendevent = sendevent
