"""perf/suite_time.py: the timed pytest run reports its summary line, and a failing run is one line, never
a time (no timing is asserted: the numbers are the machine's)."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest
from perf_script import load_perf_script


@pytest.fixture(scope="module")
def script() -> ModuleType:
    """perf/suite_time.py imported as a module (perf/ is a folder of scripts, not a package)."""
    return load_perf_script("suite_time")


def test_a_passing_run_gives_its_summary_and_a_failing_one_exits_with_one_line(
    script: ModuleType, tmp_path: Path
) -> None:
    # Outside the repository: no project conftest or addopts, so each nested run is one small process.
    (tmp_path / "test_ok.py").write_text("def test_ok():\n    assert 1 + 1 == 2\n", encoding="utf-8")
    (tmp_path / "test_bad.py").write_text("def test_bad():\n    assert 1 + 1 == 3\n", encoding="utf-8")
    done = script.run_suite(["-q", "-p", "no:cacheprovider", str(tmp_path / "test_ok.py")])
    assert done["summary"].startswith("1 passed") and done["wall_s"] > 0 and done["cpu_s"] > 0
    with pytest.raises(SystemExit, match=r"^suite_time: pytest exited 1: ") as failed:
        script.run_suite(["-q", "-p", "no:cacheprovider", str(tmp_path / "test_bad.py")])
    assert "\n" not in str(failed.value)
