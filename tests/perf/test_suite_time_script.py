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


@pytest.mark.parametrize("cores", [0.0, -1.0, float("nan")])
def test_a_quota_that_is_not_a_positive_number_of_cores_is_one_line(script: ModuleType, cores: float) -> None:
    refusal = r"^suite_time: --cpus must be a number of cores > 0"
    with pytest.raises(SystemExit, match=refusal) as refused, script.cpu_quota(cores):
        pass
    assert "\n" not in str(refused.value)


def _our_cgroups(script: ModuleType) -> set[Path]:
    return {*script._CGROUP_V1.glob("suite_time_*"), *script._CGROUP_V2.glob("suite_time_*")}


def _quota_possible(script: ModuleType) -> bool:
    try:
        with script.cpu_quota(1.0):
            return True
    except SystemExit:
        return False


def test_a_run_under_a_quota_is_held_back_and_its_cgroup_removed(script: ModuleType, tmp_path: Path) -> None:
    if not _quota_possible(script):
        pytest.skip("no cgroup with a CPU quota can be made here (needs root or a delegated cgroup)")
    # A test that keeps one core busy for ~0.3 s: under half a core it must be held back.
    busy = (
        "import time\n\ndef test_busy():\n    end = time.process_time() + 0.3\n"
        "    while time.process_time() < end:\n        pass\n"
    )
    (tmp_path / "test_busy.py").write_text(busy, encoding="utf-8")
    before = _our_cgroups(script)
    done = script.run_suite(["-q", "-p", "no:cacheprovider", str(tmp_path / "test_busy.py")], cpus=0.5)
    assert done["summary"].startswith("1 passed") and done["cpus"] == 0.5
    assert done["throttled_periods"] > 0
    assert _our_cgroups(script) == before  # the cgroup it made is gone


def test_a_bad_quota_on_the_command_line_is_refused_before_the_probe(
    script: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    probed: list[bool] = []
    monkeypatch.setattr(script, "probe", lambda: probed.append(True) or {})  # seconds of loops otherwise
    with pytest.raises(SystemExit, match=r"^suite_time: --cpus must be a number of cores > 0, got 0.0$"):
        script.main(["--cpus", "0"])
    assert probed == []  # refused before anything was measured
