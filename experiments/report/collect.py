"""Read a finished run folder into the plain records the HTML report is built from.

Everything here is read-only on the run folder. Missing or malformed pieces (a run that crashed before
``metrics.json``, a candidate that wrote nothing, a broken annotation) become empty values and notes, never
exceptions: the report of a half-finished run is exactly when a researcher needs it most.

Ground truth is read from the run's own export (``export/<dataset>/VLM/ground_truth*.json``): the report is
analysis after scoring, like the scorer itself, and nothing read here flows back into a run.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agents.base import OUTPUT_SUBDIR
from benchmark.layout import ANNOTATIONS_DIR
from experiments.stored.mechanics import banner, mechanics_agent
from experiments.stored.run_folder import CANDIDATES, METRICS, ROLES, RUN_INFO, USAGE, read_json, read_samples
from strategies.base import REPORTS_DIR

__all__ = ["CandidateView", "DatasetView", "RunView", "SampleRow", "load_run"]

log = logging.getLogger(__name__)


@dataclass
class CandidateView:
    """One candidate's output for one sample.

    Attributes:
        key: Candidate index as a string (``"0"``) or ``"selected"``.
        image: The written image (``images/<i>.png``), or None when absent.
        annotation: The parsed per-image JSON, or None when absent or unreadable.
        status: The candidate's status (``ok``/``failed``) and reason, when known.
    """

    key: str
    image: Path | None
    annotation: Any
    status: str = ""


@dataclass
class SampleRow:
    """Everything the report shows for one manifest sample.

    Attributes:
        dataset: Dataset name.
        index: Manifest index.
        task: Task type (from the selected annotation, else the ground truth).
        decision: The strategy's decision record (candidate, reason, score, ...).
        scores: ``{profile: per-sample scorer values}`` (None values when unscored).
        selected: The selected output.
        candidates: Every candidate's output, in candidate order.
        gt: The ground truth's sample entry, or None.
        checks: Validator outcomes ``[{name, score, weight, message}]`` of the selected output.
        validator_total: The validator's weighted total of the selected output.
        checks_from: Whose report ``checks`` are: ``""`` the selected output validated now, else the kept
            candidate whose stored report they come from (what the selection saw).
    """

    dataset: str
    index: int
    task: str
    decision: dict[str, Any]
    scores: dict[str, Any]
    selected: CandidateView
    candidates: list[CandidateView]
    gt: dict[str, Any] | None = None
    checks: list[dict[str, Any]] = field(default_factory=list)
    validator_total: float | None = None
    checks_from: str = ""


@dataclass
class DatasetView:
    """One dataset of the run: its metrics, usage, error and samples."""

    name: str
    metrics: dict[str, dict[str, float]]
    usage: dict[str, Any]
    error: str | None
    samples: list[SampleRow]
    root: Path | None


@dataclass
class RunView:
    """The whole run folder as the report sees it."""

    run_dir: Path
    title: str
    metrics: dict[str, dict[str, Any]]
    usage: dict[str, Any]
    datasets: list[DatasetView]
    ablation_png: Path | None
    notes: list[str] = field(default_factory=list)
    roles: dict[str, Any] | None = None


def _samples_jsonl(run_dir: Path) -> dict[tuple[str, int], dict[str, Any]]:
    rows: dict[tuple[str, int], dict[str, Any]] = {}
    for row in read_samples(run_dir, skip_torn=True):  # a torn last line must not hide the rest
        try:
            rows[(str(row["dataset"]), int(row["index"]))] = row
        except (ValueError, KeyError, TypeError):
            continue
    return rows


def _dataset_root(run_dir: Path, name: str) -> Path | None:
    """The dataset folder, found through the export's manifest symlink (the run may have moved)."""
    manifest = run_dir / "export" / name / "VLM" / "random.txt"
    if manifest.is_symlink() or manifest.is_file():
        real = Path(os.path.realpath(manifest))
        if real.is_file():
            return real.parent.parent
    return None


def _ground_truth(run_dir: Path, name: str) -> dict[str, Any]:
    vlm = run_dir / "export" / name / "VLM"
    for path in sorted(vlm.glob("ground_truth*.json")) if vlm.is_dir() else []:
        doc = read_json(path)
        if isinstance(doc, dict) and isinstance(doc.get("samples"), dict):
            return {str(k): v for k, v in doc["samples"].items()}
    return {}


def _candidate_view(key: str, folder: Path, index: int, status: str = "") -> CandidateView:
    image = folder / "images" / f"{index}.png"
    return CandidateView(
        key=key,
        image=image if image.is_file() else None,
        annotation=read_json(folder / ANNOTATIONS_DIR / f"{index}.json"),
        status=status,
    )


def _candidate_folders(run_dir: Path, name: str) -> list[tuple[str, Path, str]]:
    base = run_dir / CANDIDATES / name
    out = []
    if base.is_dir():
        numbered = [p for p in base.iterdir() if p.is_dir() and p.name.isdigit()]
        for path in sorted(numbered, key=lambda p: int(p.name)):
            meta = read_json(path / "candidate.json") or {}
            status = str(meta.get("status", "unfinished"))
            if meta.get("reason"):
                status += f": {meta['reason']}"
            out.append((path.name, path / OUTPUT_SUBDIR, status))
    return out


def _without_image_path(doc: Any) -> Any:
    if not isinstance(doc, dict) or not isinstance(doc.get("record"), dict):
        return doc
    return {**doc, "record": {k: v for k, v in doc["record"].items() if k != "image_path"}}


def _kept_candidates_checks(
    result: dict[str, Any], selected: Path, root: Path | None, profile: Any
) -> dict[int, tuple[float, list[dict[str, Any]]]] | None:
    """Each sample's checks from the stored report of the candidate it was kept from (what the selection saw),
    when every selected sample is that candidate's annotation as it stands (a best-of-n selection; only
    ``record.image_path`` is rewritten on assembly); None otherwise (a merge, a revision, no stored report),
    and the selected folder is validated instead.

    A reselection then shows its checks without validating anything again (issue 25: reused reports).
    """
    from validator.report_store import load_report
    from validator.validate import get_profile

    candidates = result.get("candidates") or []
    decisions = result.get("decisions") or {}
    if not candidates or not decisions:
        return None
    try:
        loaded = get_profile(profile)
    except Exception:
        return None
    reports: dict[int, Any] = {}
    out: dict[int, tuple[float, list[dict[str, Any]]]] = {}
    for key, decision in decisions.items():
        k = decision.get("candidate") if isinstance(decision, dict) else None
        if not str(key).isdigit() or not isinstance(k, int) or not 0 <= k < len(candidates):
            return None
        index = int(key)
        folder = Path(str(candidates[k].get("output_dir", "")))
        if k not in reports:
            reports[k] = load_report(folder.parent / REPORTS_DIR, folder, root, loaded)
        sample = reports[k].samples.get(index) if reports[k] is not None else None
        mine = read_json(selected / ANNOTATIONS_DIR / f"{index}.json")
        theirs = read_json(folder / ANNOTATIONS_DIR / f"{index}.json")
        if sample is None or mine is None or _without_image_path(mine) != _without_image_path(theirs):
            return None
        out[index] = _checks(sample)
    return out


def _checks(sample: Any) -> tuple[float, list[dict[str, Any]]]:
    """A validated sample's total and its check outcomes as the page shows them."""
    checks = [
        {"name": o.name, "score": o.score, "weight": o.weight, "message": o.result.message}
        for o in sample.checks.values()
    ]
    return sample.total, checks


def _validator_checks(
    selected: Path, root: Path | None, profile: Any, store: Path
) -> dict[int, tuple[float, list[dict[str, Any]]]]:
    """The run's validator profile on the selected folder: the report a reselection stored for a folder of
    the same bytes (``store``, `validator.report_store.validate_by_content`: S4's merged folder) when there
    is one, else validated again (a fresh run stores none)."""
    if not selected.is_dir():
        return {}
    try:
        from validator.report_store import load_by_content
        from validator.validate import get_profile, validate

        report = load_by_content(selected, root, get_profile(profile), store)
        if report is None:
            report = validate(selected, root, profile=profile)
    except Exception as exc:  # the report degrades to "no checks" rather than failing
        log.warning("report: validator failed on %s: %s", selected, exc)
        return {}
    return {index: _checks(sample) for index, sample in report.samples.items()}


def _task_of(annotation: Any, gt: dict[str, Any] | None) -> str:
    if isinstance(annotation, dict):
        media = annotation.get("media_geometry", {})
        task = media.get("media", {}).get("task_type") if isinstance(media, dict) else None
        if isinstance(task, str) and task:
            return task
    if isinstance(gt, dict):
        for name in ("classification", "segmentation", "detection"):
            if name in (gt.get("expected_tasks") or {}):
                return name
    return "unknown"


def _validator_profile(run_dir: Path) -> Any:
    folder = run_dir / ".validator"
    saved = sorted(folder.glob("*.yaml")) if folder.is_dir() else []
    return saved[0] if saved else "evidence"


def _load_dataset(
    run_dir: Path,
    name: str,
    metrics: dict[str, dict[str, Any]],
    usage: dict[str, Any],
    rows: dict[tuple[str, int], dict[str, Any]],
    profile: Any,
) -> DatasetView:
    result = read_json(run_dir / "selected" / name / "result.json") or {}
    root = _dataset_root(run_dir, name)
    gt = _ground_truth(run_dir, name)
    selected_dir = run_dir / "selected" / name / OUTPUT_SUBDIR
    folders = _candidate_folders(run_dir, name)
    checks = _kept_candidates_checks(result, selected_dir, root, profile)
    stored = checks is not None
    if checks is None:
        checks = _validator_checks(selected_dir, root, profile, run_dir / CANDIDATES / name / REPORTS_DIR)
    indices = {i for (d, i) in rows if d == name}
    indices |= {int(k) for k in result.get("decisions", {}) if str(k).isdigit()}
    samples = []
    for index in sorted(indices):
        row = rows.get((name, index), {})
        selected = _candidate_view("selected", selected_dir, index)
        total, sample_checks = checks.get(index, (None, []))
        decision = row.get("decision") or result.get("decisions", {}).get(str(index)) or {}
        samples.append(
            SampleRow(
                dataset=name,
                index=index,
                task=_task_of(selected.annotation, gt.get(str(index))),
                decision=decision,
                scores=row.get("scores") or {},
                selected=selected,
                candidates=[_candidate_view(k, f, index, s) for k, f, s in folders],
                gt=gt.get(str(index)),
                checks=sample_checks,
                validator_total=total,
                checks_from=f"candidate {decision.get('candidate')}" if stored and sample_checks else "",
            )
        )
    return DatasetView(
        name=name,
        metrics={p: (metrics.get(p) or {}).get("datasets", {}).get(name, {}) for p in metrics},
        usage=(usage.get("datasets") or {}).get(name, {}),
        error=(usage.get("errors") or {}).get(name) or result.get("error"),
        samples=samples,
        root=root,
    )


def load_run(run_dir: Path) -> RunView:
    """Read a run folder: ``metrics*.json``, ``samples.jsonl``, ``usage.json``, ``roles.json``, selected and
    candidates.

    Args:
        run_dir: The run folder written by ``python -m experiments``.

    Returns:
        The run's view; absent parts are empty.

    Raises:
        FileNotFoundError: ``run_dir`` is not a folder.
    """
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise FileNotFoundError(f"{run_dir}: not a run folder")
    metrics = {
        p: doc
        for p, doc in ((profile, read_json(run_dir / name)) for profile, name in METRICS.items())
        if isinstance(doc, dict)
    }
    usage = read_json(run_dir / USAGE) or {}
    run_info = read_json(run_dir / RUN_INFO) or {}
    rows = _samples_jsonl(run_dir)
    names = list(run_info.get("datasets") or [])
    for pool in (
        [d for d, _ in rows],
        (usage.get("datasets") or {}).keys(),
        [p.name for p in (run_dir / "selected").iterdir()] if (run_dir / "selected").is_dir() else [],
    ):
        names += [n for n in pool if n not in names]
    profile = _validator_profile(run_dir)
    datasets = [_load_dataset(run_dir, n, metrics, usage, rows, profile) for n in sorted(names)]
    ablation = next(
        (p for p in (run_dir / "ablation.png", run_dir.parent / "ablation.png") if p.is_file()), None
    )
    notes = []
    if not metrics:
        notes.append("metrics.json is missing: the run did not finish scoring.")
    if any(doc.get("incomplete") for doc in metrics.values()):
        notes.append("INCOMPLETE: the budget was hit or a dataset failed; metrics cover what finished.")
    if any(doc.get("upper_bound") for doc in metrics.values()):
        notes.append("UPPER BOUND: the oracle selector used ground truth.")
    if any(doc.get("simulation") for doc in metrics.values()):
        notes.append(
            "SIMULATION: the candidates are the oracle output with sampled mistakes (agent=simulated), "
            "not a model's work; see miss_rates in metrics.json."
        )
    mechanics = mechanics_agent((run_info.get("config") or {}).get("agent"))
    if mechanics is not None:
        notes.insert(0, banner(mechanics))
    notes += _served_notes(run_info.get("models"))
    title = f"{run_info.get('strategy', '?')} · {run_info.get('run_name', run_dir.name)} · {run_dir.name}"
    roles = read_json(run_dir / ROLES)  # written by runs with a pool, a reviser or a judge
    roles = roles if isinstance(roles, dict) else None
    return RunView(run_dir, title, metrics, usage, datasets, ablation, notes, roles)


def _served_notes(models: Any) -> list[str]:
    """``MODEL: <role> <config name> served <identity>`` per role (``run.json`` ``models``) whose server said
    more than the config's name (``agent=local`` names every model ``openai/local``)."""
    notes = []
    for entry in models if isinstance(models, list) else []:
        if not isinstance(entry, dict) or not entry.get("served"):
            continue
        name = str(entry.get("model") or "")
        if entry["served"] != f"ids={name.split('/', 1)[-1]}":
            where = entry.get("api_base")
            notes.append(f"MODEL: {entry.get('role')} {name} served {entry['served']} ({where})")
    return notes
