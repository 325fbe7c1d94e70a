"""Tests sharing an expensive fixture run on one xdist worker (`tests/conftest.py`'s scheduler).

pytest 9 silently broke ``--dist loadgroup`` (pytest-dev/pytest-xdist#1386): every group was split over the
workers and each shared fixture was built once per worker. This runs a small sample under two workers.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def test_the_users_of_a_module_fixture_run_on_one_worker_and_the_others_spread(tmp_path: Path) -> None:
    # The scheduling plugin alone, without the suite's conftests: what is checked is the scheduler.
    plugin = ["--noconftest", "-p", "xdist_scheduling", "-p", "xdist_order_probe", "-p", "no:cacheprovider"]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(TESTS), env.get("PYTHONPATH", "")])
    env["XDIST_ORDER_PROBE"] = str(tmp_path / "order.txt")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-v", "-n", "2", *plugin, "xdist_group_sample.py"],
        cwd=TESTS,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    ran = re.findall(r"\[(gw\d+)\] .*?PASSED \S*::(test_\w+)\[", done.stdout)
    assert len(ran) == 16, done.stdout[-3000:]
    sharing = {worker for worker, name in ran if name == "test_shares_the_fixture"}
    assert len(sharing) == 1, f"the group was split over {sorted(sharing)}"
    assert {worker for worker, _ in ran} == {"gw0", "gw1"}, "one worker ran everything: nothing was shown"
    # Each worker's groups were on disk before its collection reached the controller (which schedules as
    # soon as the last one arrives): the sample above can pass by luck, this cannot.
    written = sorted((tmp_path / "order.txt").read_text(encoding="utf-8").splitlines())
    assert written == ["gw0 written", "gw1 written"]
