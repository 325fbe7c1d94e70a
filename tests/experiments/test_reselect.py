"""Reselect: selection over a finished run's stored candidates equals a fresh run with that selector, makes no
agent call, and writes a complete run folder that names its source."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from omegaconf import DictConfig
from rules_runs import CHEAP_DATASETS, DATASETS, N, rules_cfg

from experiments.run.experiment import run_experiment
from experiments.selection.reselect import ReselectError, reselect

pytestmark = pytest.mark.heavy

REPO = Path(__file__).resolve().parents[2]


def _cfg(root: Path, *overrides: str) -> DictConfig:
    return rules_cfg(root, *overrides, datasets=CHEAP_DATASETS)


@pytest.fixture(scope="module")
def source(rules_s3_run: tuple[Path, Path]) -> tuple[Path, Path]:
    """(suite root, a finished S3 validator_max run over it)."""
    return rules_s3_run


def _metrics(run_dir: Path) -> tuple[dict[str, object], dict[str, object]]:
    return (
        json.loads((run_dir / "metrics.json").read_text()),
        json.loads((run_dir / "metrics_strict.json").read_text()),
    )


def _chosen(run_dir: Path) -> dict[tuple[str, int], int | None]:
    rows = [json.loads(line) for line in (run_dir / "samples.jsonl").read_text().splitlines()]
    return {(r["dataset"], r["index"]): r["decision"]["candidate"] for r in rows}


@pytest.mark.parametrize(
    ("strategy", "selector"), [("s3", "first"), ("s3", "majority"), ("s3", "random"), ("s4", "validator_max")]
)
def test_reselect_equals_a_fresh_run(
    rules_s3_run_small: tuple[Path, Path], tmp_path: Path, strategy: str, selector: str
) -> None:
    """Each selector's fresh run repeats the whole generation: it runs on the two cheap datasets."""
    root, src = rules_s3_run_small
    fresh = tmp_path / "fresh"
    run_experiment(_cfg(root, f"strategy={strategy}", "strategy.n=4", f"selector={selector}"), fresh)
    out = reselect(src, [f"strategy={strategy}", f"selector={selector}"], tmp_path / "re")
    assert out.agent_calls == 0
    assert not out.incomplete
    assert _metrics(out.run_dir) == _metrics(fresh)
    assert _chosen(out.run_dir) == _chosen(fresh)
    usage = json.loads((out.run_dir / "usage.json").read_text())
    assert usage["budget"]["spent_tokens"] == 0 and usage["reselect"]["agent_calls"] == 0
    info = json.loads((out.run_dir / "run.json").read_text())
    assert info["reselect"]["source_run"] == str(src.resolve())
    assert info["reselect"]["reused_candidates"] == N * len(CHEAP_DATASETS)


def test_reselect_sees_a_different_selector(source: tuple[Path, Path], tmp_path: Path) -> None:
    """The source kept validator_max; `first` must keep different candidates somewhere on these datasets."""
    _, src = source
    out = reselect(src, ["selector=first"], tmp_path / "first")
    assert _chosen(out.run_dir) != _chosen(src)


def test_missing_candidate_is_incomplete_not_generated(source: tuple[Path, Path], tmp_path: Path) -> None:
    """Asking for more candidates than the source stored never calls the agent: the run is incomplete."""
    _, src = source
    out = reselect(src, ["strategy.n=6"], tmp_path / "more")
    assert out.agent_calls == 0 and out.incomplete
    assert not (src / "candidates" / DATASETS[0] / "5").exists()


def test_cli_writes_a_run_folder_and_exit_codes(source: tuple[Path, Path], tmp_path: Path) -> None:
    _, src = source
    out = tmp_path / "cli"
    cmd = [
        sys.executable,
        "-m",
        "experiments.cli",
        "reselect",
        str(src),
        "selector=majority",
        "run.report=true",
        f"hydra.run.dir={out}",
    ]
    # Buffered output, as by default: the CLI leaves by os._exit once everything is written, so what it
    # printed must have been flushed first (a pipe is block-buffered: a missing flush loses the table).
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    done = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr
    assert "E2E" in done.stdout and "official" in done.stdout
    assert "agent calls: 0" in done.stderr and f"run folder: {out}" in done.stderr
    for name in (
        "metrics.json",
        "metrics_strict.json",
        "samples.jsonl",
        "usage.json",
        "report.html",
        "export",
    ):
        assert (out / name).exists(), name
    assert (out / "candidates").resolve() == (src / "candidates").resolve()
    bad = subprocess.run(
        [sys.executable, "-m", "experiments.cli", "reselect", str(tmp_path / "nope")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "Traceback" not in bad.stderr
    assert bad.stderr.startswith("medstrat reselect: error: RUN")
    with pytest.raises(ReselectError, match="unknown selector 'nope'"):
        reselect(src, ["selector=nope"], tmp_path / "x")
    with pytest.raises(ReselectError, match="cannot be reselected"):
        reselect(src, ["strategy=s0"], tmp_path / "y")


def test_reselect_reuses_the_stored_reports_and_links_the_outputs(
    source: tuple[Path, Path], tmp_path: Path
) -> None:
    """The source run stored every candidate's report; a reselection reads them (a hand-edited copy of the
    source shows it: the edited score decides) and hard-links the selected files instead of copying them."""
    import shutil

    _, src = source
    copy = tmp_path / "copy"
    shutil.copytree(src, copy, symlinks=True)  # copy2 keeps mtimes: the stored reports stay valid
    from validator.report_store import store_path
    from validator.validate import get_profile

    name = store_path(Path(), get_profile("evidence")).name  # the run's profile: the evidence checks
    stores = sorted((copy / "candidates").glob(f"{DATASETS[0]}/*/reports/{name}"))
    assert len(stores) == 4  # one per candidate of the dataset, written by the source run
    kept = _chosen(src)
    index = min(i for d, i in kept if d == DATASETS[0])
    winner = kept[(DATASETS[0], index)]
    for store in stores:
        doc = json.loads(store.read_text())
        k = int(store.parent.parent.name)
        for name in doc["samples"][str(index)]:
            doc["samples"][str(index)][name]["s"] = 0.0 if k == winner else 1.0
        store.write_text(json.dumps(doc))
    out = reselect(copy, [], tmp_path / "re")
    assert _chosen(out.run_dir)[(DATASETS[0], index)] != winner  # the stored (edited) scores decided
    chosen = _chosen(out.run_dir)[(DATASETS[0], index)]
    selected = out.run_dir / "selected" / DATASETS[0] / "agent1_data_organization" / "images"
    image = next(selected.glob(f"{index}.*"))
    original = next((copy / "candidates" / DATASETS[0] / str(chosen)).glob(f"*/images/{index}.*"))
    assert os.path.samefile(image, original)  # a hard link to the candidate's file, not a copy


def test_an_s4_reselection_reads_the_merged_outputs_report_the_one_before_stored(
    rules_s3_run_small: tuple[Path, Path], tmp_path: Path
) -> None:
    """S4 validates the merged folder it writes; a reselection keeps that report beside the source's
    candidates by the folder's bytes, and the next S4 reselection reads it instead of validating the same
    folder again (an edited copy shows it: with every merged score set to 0, the base wins everywhere)."""
    import shutil

    _, src = rules_s3_run_small
    copy = tmp_path / "copy"
    shutil.copytree(src, copy, symlinks=True)
    first = reselect(copy, ["strategy=s4", "run.report=false"], tmp_path / "a")
    stores = sorted((copy / "candidates").glob("*/reports/*.json"))
    assert len(stores) == len(CHEAP_DATASETS)  # one merged folder per dataset, stored beside its candidates
    second = reselect(copy, ["strategy=s4", "run.report=false"], tmp_path / "b")
    assert _metrics(second.run_dir) == _metrics(first.run_dir)
    assert _chosen(second.run_dir) == _chosen(first.run_dir)
    assert sorted((copy / "candidates").glob("*/reports/*.json")) == stores  # the same bytes: no new file
    for store in stores:
        doc = json.loads(store.read_text())
        for checks in doc["samples"].values():
            for result in checks.values():
                result["s"] = 0.0
        store.write_text(json.dumps(doc))
    third = reselect(copy, ["strategy=s4", "run.report=false"], tmp_path / "c")
    rows = [json.loads(line) for line in (third.run_dir / "samples.jsonl").read_text().splitlines()]
    assert rows and all("kept base" in r["decision"]["reason"] for r in rows)


def test_scoring_shared_with_forks_equals_the_serial_loop(source: tuple[Path, Path], tmp_path: Path) -> None:
    """A run's (profile, dataset) scorings go to forks of the process; the result is what scoring each
    dataset in turn gives, in the same order (a reselection's metrics and samples.jsonl are built from it)."""
    from benchmark.score.evaluate import score_dataset
    from benchmark.score.forked import processes_for
    from benchmark.score.profiles import ScoringRules
    from experiments.run.results import PROFILES, score_exports

    _, src = source
    run_name = json.loads((src / "run.json").read_text())["run_name"]
    exports = {p.name: p for p in sorted((src / "export").iterdir())}
    assert len(exports) == len(DATASETS)
    if processes_for(2 * len(exports), 2) != 2:
        # This process runs threads (pytest-xdist's): forking is off here, so the comparison runs in a fresh
        # interpreter, which has none.
        code = (
            "import sys, pathlib\n"
            "from benchmark.score.forked import processes_for\n"
            "from experiments.run.results import score_exports\n"
            "exports = {p.name: p for p in sorted(pathlib.Path(sys.argv[1]).iterdir())}\n"
            "assert processes_for(2 * len(exports), 2) == 2, 'no fork in a fresh interpreter'\n"
            "forked = score_exports(exports, sys.argv[2], workers=2)\n"
            "serial = score_exports(exports, sys.argv[2], workers=1)\n"
            "assert list(forked) == list(serial) and forked == serial\n"
            "assert all(list(forked[p]) == list(serial[p]) for p in serial)\n"
            "print('forked == serial')\n"
        )
        done = subprocess.run(
            [sys.executable, "-c", code, str(src / "export"), run_name],
            capture_output=True,
            text=True,
            timeout=600,
            env={**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])},
        )
        assert done.returncode == 0 and done.stdout.strip() == "forked == serial", done.stderr[-2000:]
        return
    forked = score_exports(exports, run_name, workers=2)
    one_by_one = {
        p: {
            n: score_dataset(root, models=[run_name], profile=ScoringRules.named(p))
            for n, root in exports.items()
        }
        for p in PROFILES
    }
    assert list(forked) == list(one_by_one) == ["official", "strict"]
    for profile in one_by_one:
        assert list(forked[profile]) == list(one_by_one[profile])
    assert forked == one_by_one
    assert score_exports(exports, run_name, workers=1) == one_by_one
    assert all(r["models"][run_name]["metrics"] for r in one_by_one["strict"].values())
