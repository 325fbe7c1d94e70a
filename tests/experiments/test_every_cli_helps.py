"""``medstrat`` lists every command, each command answers ``--help`` itself, and exit codes pass through.

A command whose ``main`` imports, inside the function, a module that no longer exists fails only when it runs:
nothing but running each command's ``main`` (here through ``medstrat COMMAND --help``) finds that.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from experiments.cli import COMMANDS, Command, main

REPO = Path(__file__).resolve().parents[2]


def test_the_top_help_lists_every_command_with_its_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for command in COMMANDS:
        line = next((ln for ln in out.splitlines() if ln.split()[:1] == [command.name]), None)
        assert line is not None, f"{command.name} is missing from medstrat --help"
        assert command.summary.split()[0] in line, line


@pytest.mark.parametrize("name", [c.name for c in COMMANDS])
def test_each_command_answers_help_with_its_own_usage(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([name, "--help"]) == 0  # argparse's help exits: medstrat returns its status all the same
    out = capsys.readouterr().out
    assert f"medstrat {name}" in out, out  # the command's own text, under the name the user typed


def test_no_command_or_an_unknown_one_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert "reselect" in capsys.readouterr().err  # the list of commands, on stderr
    assert main(["reselct"]) == 2
    assert "invalid choice: 'reselct'" in capsys.readouterr().err


def test_a_commands_exit_code_and_arguments_pass_through(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # merge's bad input is exit 2 with its own one line; the argument order reaches it as typed.
    assert main(["merge", str(tmp_path / "nope"), "--out", str(tmp_path / "o")]) == 2
    assert capsys.readouterr().err.startswith(f"medstrat merge: error: RUNS {tmp_path / 'nope'}")
    assert main(["leaderboard", str(tmp_path), "--bogus"]) == 2  # argparse's own exit, as a status
    assert "unrecognized arguments: --bogus" in capsys.readouterr().err


@pytest.mark.heavy
def test_the_installed_console_script_runs_and_passes_the_exit_code_on(tmp_path: Path) -> None:
    script = Path(sys.executable).parent / "medstrat"
    if not script.is_file():
        pytest.skip(f"no console script beside {sys.executable}: the package is not installed")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    listed = subprocess.run([script, "--help"], capture_output=True, text=True, timeout=120, env=env)
    assert listed.returncode == 0 and all(c.name in listed.stdout for c in COMMANDS), listed.stdout
    # reselect leaves through its own fast exit (os._exit): its code must still be the process's.
    bad = subprocess.run(
        [script, "reselect", str(tmp_path / "nope")], capture_output=True, text=True, timeout=120, env=env
    )
    assert bad.returncode == 2, bad.stderr
    assert bad.stderr.startswith("medstrat reselect: error: RUN")


def test_any_exit_code_and_the_arguments_reach_the_caller_unchanged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "seven_command.py").write_text(
        '"""A command that answers 7 to exactly its expected arguments."""\n\n\n'
        "def main(argv):\n    return 7 if argv == ['verb', '--flag', 'x', '--', '-y'] else 1\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr("experiments.cli.COMMANDS", (Command("seven", "seven_command", "test", ("verb",)),))
    assert main(["seven", "--flag", "x", "--", "-y"]) == 7


def test_the_docs_show_the_command_list_as_medstrat_prints_it(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    printed = capsys.readouterr().out
    listing = printed[printed.index("commands:") : printed.index("\n\n", printed.index("commands:"))]
    assert listing in (REPO / "docs" / "cli.md").read_text(encoding="utf-8")
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert all(f"`{c.name}`" in readme for c in COMMANDS)
