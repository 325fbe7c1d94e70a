"""The error policy of every command line (docs/cli.md), run as a user would: each bad input ends with a
non-zero documented exit code, exactly one line on stderr, no traceback, and nothing written anywhere.

Each case runs ``python -m MODULE ARGS`` in this process, as the interpreter's ``-m`` does (`runpy` executes
the module as ``__main__``, so its ``raise SystemExit(main())`` / ``cli()`` line and an old command name's
finder are on the path; `cli_in_process`), with file-descriptor-level capture: a fresh interpreter per case
cost ~2 CPU s each, start-up only. The policy itself lives once in `core.cli_errors.cli_main` (and, for
Hydra's path, in ``experiments.__main__.cli``); `test_a_fresh_interpreter_follows_the_same_policy` runs one
case of each in a fresh interpreter, for what only a new process shows (import-time output, the real exit
status).
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

pytestmark = pytest.mark.heavy

REPO = Path(__file__).resolve().parent.parent
FAKES = REPO / "tests" / "strategies"
sys.path.insert(0, str(REPO / "tests" / "experiments"))
from cli_in_process import MEDSTRAT, run_as_main  # noqa: E402

NIFTI = "synth-brain-mr-nifti"


@dataclass(frozen=True)
class Case:
    """One bad invocation: ``{suite}``, ``{nifti}``, ``{ds}`` in ``args`` are filled in."""

    module: str
    args: tuple[str, ...]
    code: int = 2
    mention: str = ""  # a word the one line must contain (names the thing)
    env: tuple[tuple[str, str], ...] = ()  # environment variables set for the case


GRACE = "MEDSTRAT_TERMINATION_GRACE_S"
CACHE = "MEDSTRAT_READ_CACHE_MB"
EXP = ("benchmark=dir", "benchmark.root={suite}", "run.progress=false")

CASES: dict[str, Case] = {
    "score-missing-dataset-dir": Case("benchmark.score", ("--dataset-dir", "nope"), mention="nope"),
    "score-empty-dataset-dir": Case("benchmark.score", ("--dataset-dir", "empty"), mention="empty"),
    "score-missing-root": Case("benchmark.score", ("--root", "nope"), mention="nope"),
    "score-unknown-model": Case(
        "benchmark.score", ("--root", "{suite}", "--models", "nosuchmodel"), mention="nosuchmodel"
    ),
    "score-unknown-option": Case("benchmark.score", ("--root", "{suite}", "--bogus"), mention="--bogus"),
    "validator-missing-candidate": Case("validator", ("nope", "--dataset-dir", "{ds}"), mention="nope"),
    "validator-missing-dataset": Case("validator", ("{ds}", "--dataset-dir", "nope"), mention="nope"),
    "validator-not-an-output-folder": Case(
        "validator", ("{ds}", "--dataset-dir", "{ds}"), mention="agent1_data_organization"
    ),
    "medio-inspect-missing": Case("medio", ("inspect", "missing.dcm"), mention="missing.dcm"),
    "medio-render-missing": Case("medio", ("render", "missing.nii", "out.png"), mention="missing.nii"),
    "medio-render-slice-out-of-range": Case(
        "medio", ("render", "{nifti}", "out.png", "--slice", "999"), mention="999"
    ),
    "synth-unknown-dataset": Case("testbed.synth", ("out", "--only", "nope"), mention="nope"),
    "perturb-missing-correct": Case("testbed.perturb", ("nope", "out"), mention="nope"),
    "fakeserver-missing-script": Case("testbed.fakeserver", ("--script", "nope.json"), mention="nope.json"),
    "report-missing-run": Case("experiments.report", ("nope",), mention="nope"),
    "merge-missing-run": Case(MEDSTRAT, ("merge", "nope"), mention="nope"),
    "ablation-missing-sweep": Case(MEDSTRAT, ("ablation", "nope"), mention="nope"),
    "reselect-missing-run": Case(MEDSTRAT, ("reselect", "nope", "selector=first"), mention="nope"),
    "reselect-not-a-run": Case(MEDSTRAT, ("reselect", "empty"), mention="run.json"),
    "selectors-missing-run": Case(MEDSTRAT, ("leaderboard", "nope"), mention="nope"),
    "selectors-unknown-option": Case(MEDSTRAT, ("leaderboard", "empty", "--bogus"), mention="--bogus"),
    "budget-missing-sweep": Case(MEDSTRAT, ("budget-matched", "nope"), mention="nope"),
    "budget-empty-sweep": Case(MEDSTRAT, ("budget-matched", "empty"), mention="empty"),
    "experiments-unknown-strategy": Case("experiments", (*EXP, "strategy=s9"), mention="s4"),
    "experiments-n-zero": Case("experiments", (*EXP, "strategy.n=0"), mention="strategy.n"),
    "experiments-n-not-int": Case("experiments", (*EXP, "strategy.n=abc"), mention="strategy.n"),
    "experiments-unknown-strategy-option": Case(
        "experiments", (*EXP, "+strategy.nn=8"), mention="strategy.nn"
    ),
    "experiments-unknown-agent-option": Case("experiments", (*EXP, "+agent.bogus=1"), mention="agent.bogus"),
    "experiments-unknown-selector": Case(
        "experiments", (*EXP, "selector.name=nope"), mention="validator_max"
    ),
    "experiments-missing-root": Case("experiments", (*EXP, "benchmark.root=nope"), mention="nope"),
    "experiments-bad-resume-value": Case("experiments", (*EXP, "run.resume=maybe"), mention="run.resume"),
    "experiments-bad-sigterm-grace": Case("experiments", EXP, mention=GRACE, env=((GRACE, "soon"),)),
    "reselect-bad-sigterm-grace": Case(MEDSTRAT, ("reselect", "empty"), mention=GRACE, env=((GRACE, "-3"),)),
    "experiments-bad-read-cache": Case("experiments", EXP, mention=CACHE, env=((CACHE, "lots"),)),
    "medio-inspect-bad-read-cache": Case(
        "medio", ("inspect", "{nifti}"), mention=CACHE, env=((CACHE, "-1"),)
    ),
}


def _tree(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@pytest.fixture(scope="module")
def suite_and_nifti(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A one-dataset suite (never written to: every test checks) and its first NIfTI file."""
    sys.path.insert(0, str(FAKES))
    from strategy_fakes import make_suite

    suite = make_suite(tmp_path_factory.mktemp("suite"), names=(NIFTI,))
    return suite, next((suite / NIFTI / "data").rglob("*.nii*"))


def _args(case: Case, suite: Path, nifti: Path) -> list[str]:
    return [a.format(suite=suite, nifti=nifti, ds=suite / NIFTI) for a in case.args]


def _workdir(tmp_path: Path) -> Path:
    """An empty working folder (with an empty sub-folder some cases name); nothing else may appear in it."""
    cwd = tmp_path / "cwd"
    (cwd / "empty").mkdir(parents=True)
    return cwd


def _check(name: str, code: int, stderr: str, cwd: Path) -> None:
    case = CASES[name]
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert code == case.code, stderr
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr and "error" in lines[0]
    assert case.mention in lines[0], lines[0]
    assert _tree(cwd) == ["empty"], f"{name} created {_tree(cwd)}"


@pytest.mark.parametrize("name", sorted(CASES))
def test_bad_input_gives_one_line_and_its_exit_code(
    name: str,
    suite_and_nifti: tuple[Path, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
) -> None:
    suite, nifti = suite_and_nifti
    before = _tree(suite)
    cwd = _workdir(tmp_path)
    monkeypatch.chdir(cwd)
    monkeypatch.setenv("MEDSTRAT_CACHE", str(tmp_path / "cache"))
    for key, value in CASES[name].env:
        monkeypatch.setenv(key, value)
    code = run_as_main(CASES[name].module, _args(CASES[name], suite, nifti))
    _check(name, code, capfd.readouterr().err, cwd)
    assert _tree(suite) == before, "a bad invocation wrote into the input suite"


# One `cli_main` command and Hydra's `python -m experiments`: the two ways a failure reaches the user.
FRESH = ("score-missing-root", "experiments-unknown-strategy-option")


def test_a_fresh_interpreter_follows_the_same_policy(
    suite_and_nifti: tuple[Path, Path], tmp_path: Path
) -> None:
    suite, nifti = suite_and_nifti
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), str(FAKES)])
    env["MEDSTRAT_CACHE"] = str(tmp_path / "cache")
    env.pop("HYDRA_FULL_ERROR", None)
    procs = {}
    for name in FRESH:  # concurrently: interpreter start-up is most of their cost
        cwd = _workdir(tmp_path / name)
        procs[name] = (
            cwd,
            subprocess.Popen(
                [sys.executable, "-m", CASES[name].module, *_args(CASES[name], suite, nifti)],
                cwd=cwd,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            ),
        )
    for name, (cwd, proc) in procs.items():
        _, err = proc.communicate(timeout=300)
        _check(name, proc.returncode, err, cwd)


def test_debug_shows_the_traceback(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-m", "benchmark.score", "--root", "nope", "--debug"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and "Traceback" in done.stderr
    assert done.stderr.strip().splitlines()[-1].startswith("medstrat score: error:")
