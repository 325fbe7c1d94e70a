"""A test that starts a Python other than its own fails, on every machine (issue 33 item 4): the guard
`interpreter_guard` that ``tests/conftest.py`` installs for the whole run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from interpreter_guard import EscapedInterpreter, pythons_started


def _foreign_python(folder: Path) -> Path:
    """A ``python`` that answers like an interpreter installed elsewhere (another ``sys.prefix``)."""
    folder.mkdir()
    fake = folder / "python"
    fake.write_text("#!/bin/sh\necho /opt/another-python\n")
    fake.chmod(0o755)
    return folder


def _path_first(folder: Path) -> dict[str, str]:
    return {**os.environ, "PATH": os.pathsep.join([str(folder), os.environ.get("PATH", "")])}


def test_python_from_a_path_that_finds_another_interpreter_fails_the_test(tmp_path: Path) -> None:
    env = _path_first(_foreign_python(tmp_path / "bin"))
    with pytest.raises(EscapedInterpreter, match=r"runs .*/bin/python \(sys.prefix /opt/another-python\)"):
        subprocess.run(["bash", "-c", "python -m experiments --help"], env=env, check=False)
    with pytest.raises(EscapedInterpreter):
        subprocess.run("cd /tmp && python -c pass", shell=True, env=env, check=False)
    with pytest.raises(EscapedInterpreter):
        subprocess.run(["timeout", "5", "python", "-c", "pass"], env=env, check=False)


def test_the_tests_own_interpreter_first_on_path_passes(tmp_path: Path) -> None:
    foreign = _path_first(_foreign_python(tmp_path / "bin"))["PATH"]
    env = {**os.environ, "PATH": os.pathsep.join([str(Path(sys.executable).parent), foreign])}
    done = subprocess.run(
        ["bash", "-c", "python -c 'import sys; print(sys.prefix)'"], env=env, capture_output=True, text=True
    )
    assert done.stdout.strip() == sys.prefix
    assert subprocess.run([sys.executable, "-c", "pass"], check=False).returncode == 0


@pytest.mark.skipif(sys.prefix == sys.base_prefix, reason="the tests run outside a virtual environment")
def test_a_symlink_to_the_venv_python_placed_outside_the_venv_fails_the_test(tmp_path: Path) -> None:
    # Started through the link, Python does not find the venv's pyvenv.cfg: it runs as the base interpreter
    # (the README recipe tests did this; they passed only where the base interpreter had the packages).
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "python").symlink_to(sys.executable)
    with pytest.raises(EscapedInterpreter, match="not the tests' interpreter"):
        subprocess.run(["bash", "-c", "python -c pass"], env=_path_first(tmp_path / "bin"), check=False)


def test_the_pythons_of_a_command_are_told_from_its_words() -> None:
    assert pythons_started(["bash", "-c", "python -m a && /usr/bin/python3.11 b.py | (python3 -V)"]) == [
        "python",
        "/usr/bin/python3.11",
        "python3",
    ]
    assert pythons_started("nohup python -m a &", shell=True) == ["python"]
    assert pythons_started(["env", "FOO=1", "python3", "-m", "a"]) == ["python3"]
    assert pythons_started(["git", "status"]) == []
    assert pythons_started(["bash", "-c", "ls python-docs/ mypython"]) == []
