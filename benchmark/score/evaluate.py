"""Scoring whole datasets and benchmark roots: the eval_results dict, its JSON file, and parallel scoring."""

from __future__ import annotations

import json
import logging
import os
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

from benchmark.errors import BenchmarkError
from benchmark.groundtruth import ground_truth_path, load_ground_truth_dict
from benchmark.layout import AGENT_DIR
from benchmark.score._io import NotPlainJson, RawJson, dumps_indented
from benchmark.score.dataset import DatasetScore, make_context, score_prediction
from benchmark.score.forked import map_forked, processes_for
from benchmark.score.images import needs_pil
from benchmark.score.profiles import Profile, resolve
from benchmark.score.subset import cut_ground_truth
from core.atomic import atomic_write_json, atomic_write_text, read_json_or_none
from medio.sniff import split_suffix

log = logging.getLogger(__name__)

_R = TypeVar("_R")


def dataset_root_of(path: str | Path) -> Path:
    """Accept a dataset root or its ``VLM`` folder (the reference CLI takes either)."""
    p = Path(path)
    return p.parent if p.name == "VLM" and not (p / "VLM").is_dir() else p


def default_models(dataset_root: Path) -> list[str]:
    """``VLM`` sub-folders holding an ``agent1_data_organization`` folder, sorted."""
    vlm = dataset_root / "VLM"
    return sorted(p.name for p in vlm.iterdir() if (p / AGENT_DIR).is_dir()) if vlm.is_dir() else []


def score_candidate(
    pred_dir: str | Path,
    dataset_root: str | Path,
    *,
    profile: str | Profile = "official",
    unreadable_as_missing: bool = False,
    indices: Iterable[int] | None = None,
) -> DatasetScore:
    """Score one output folder against its dataset's own ground truth (found and loaded here).

    The one way analysis code outside the scorer (the oracle selector, the oracle best-of-n bound) reaches
    ground truth: it never opens the file itself.

    Args:
        pred_dir: An ``agent1_data_organization`` folder.
        dataset_root: The dataset root holding ``VLM/ground_truth*.json``.
        profile: ``official``, ``strict`` or a :class:`Profile`.
        unreadable_as_missing: When the folder fails as a whole because some per-image JSON is not an object
            (the reference scorer crashes on it, SPEC §6 bug 12), score it again with those samples missing.
            For per-candidate analysis (a best-of-n bound), never for a run's own result.
        indices: Score only these samples (a run cut to its first samples, ``benchmark.samples``), against
            the ground truth cut to them as the run's export is (`benchmark.score.subset`).

    Returns:
        The score; ``error`` is set when the ground truth is missing or unreadable. Never raises.
    """
    try:
        gt = load_ground_truth_dict(ground_truth_path(Path(dataset_root)))
    except BenchmarkError as exc:
        return DatasetScore(error=str(exc))
    if indices is not None:
        gt = cut_ground_truth(gt, set(indices))
    scored = score_prediction(pred_dir, gt, profile=profile, dataset_root=dataset_root)
    if scored.error and unreadable_as_missing:
        import tempfile

        with tempfile.TemporaryDirectory(prefix="score-objects-") as tmp:
            view = _objects_only(Path(pred_dir), Path(tmp) / AGENT_DIR)
            if view is not None:
                scored = score_prediction(view, gt, profile=profile, dataset_root=dataset_root)
    return scored


def _objects_only(pred_dir: Path, view: Path) -> Path | None:
    """Link ``pred_dir`` into ``view`` without the per-image JSON files that are not objects; None if none."""
    dropped = False
    for path in sorted(p for p in pred_dir.rglob("*") if p.is_file()):
        rel = path.relative_to(pred_dir)
        json_file = rel.parts[0] == "standardized_annotations" and path.suffix == ".json"
        if json_file and not isinstance(read_json_or_none(path), dict):
            dropped = True
            continue
        (view / rel).parent.mkdir(parents=True, exist_ok=True)
        os.symlink(path.resolve(), view / rel)
    return view if dropped else None


def score_dataset(
    dataset_root: str | Path,
    *,
    ground_truth: str | Path | dict[str, Any] | None = None,
    models: Iterable[str] | None = None,
    profile: str | Profile = "official",
    workers: int | None = 1,
) -> dict[str, Any]:
    """Score every model (run) of one dataset, like the reference ``evaluate_source_gate.py``.

    Args:
        dataset_root: The dataset folder (or its ``VLM`` folder).
        ground_truth: A GT file or an already-loaded GT dict (default: first sorted
            ``VLM/ground_truth*.json``).
        models: Model folder names under ``VLM`` (default: those holding ``agent1_data_organization``).
        profile: ``official``, ``strict`` or a :class:`Profile`.
        workers: Processes sharing the models (this one and forks of it, `benchmark.score.forked`); None =
            the CPU count; 1 = this process only. The result is the same whatever the number.

    Returns:
        ``{"dataset", "dataset_dir", "ground_truth_file", "profile", "models": {model: {"metrics",
        "per_sample", "dimensions", "breakdown", "error"}}}``. Problems (unreadable GT, missing model folder)
        become per-model errors; nothing raises for bad input.
    """
    job = _DatasetJob(dataset_root, ground_truth, models, profile)
    done = _map_models(job.score_model, job, workers)
    return job.results(dict(zip(job.names, done, strict=True)))


def score_dataset_to_file(
    dataset_root: str | Path,
    output: str | Path | None = None,
    *,
    ground_truth: str | Path | None = None,
    models: Iterable[str] | None = None,
    profile: str | Profile = "official",
    workers: int | None = 1,
    durable: bool = True,
    meanwhile: Callable[[], object] | None = None,
) -> tuple[dict[str, Any], Path]:
    """`score_dataset` then `write_results`, with each model's JSON encoded by the process that scored it.

    The per-dataset CLI's path: the file holds the same bytes as ``write_results(score_dataset(...))``, but
    the forks encode their own models (the encoding is ~10 % of the work) and send only that text and the
    metrics back, instead of pickling every per-sample record for this process to encode alone.

    Args:
        dataset_root: The dataset folder (or its ``VLM`` folder).
        output: The eval_results file (default: `default_output`).
        ground_truth: A GT file (default: first sorted ``VLM/ground_truth*.json``).
        models: Model folder names under ``VLM`` (default: those holding ``agent1_data_organization``).
        profile: ``official``, ``strict`` or a :class:`Profile`.
        workers: As for `score_dataset`.
        durable: As for `write_results`.
        meanwhile: Called once, when this process has scored its share of the models and before it waits
            for the forks (the CLI imports its table writer there).

    Returns:
        ``(summary, path written)``: the summary is the `score_dataset` dict with only ``model``, ``metrics``
        and ``error`` per model (what the macro table and the CLI's messages read).
    """
    job = _DatasetJob(dataset_root, ground_truth, models, profile)
    done = _map_models(job.score_encoded, job, workers, meanwhile)
    summary = job.results({m: brief for m, (brief, _) in zip(job.names, done, strict=True)})
    path = Path(output) if output is not None else default_output(job.root, job.prof)
    texts = [text for _, text in done]
    if all(isinstance(text, str) for text in texts):
        tree = dict(summary, models={m: RawJson(t) for m, t in zip(job.names, texts, strict=True)})
        return summary, atomic_write_text(path, dumps_indented(tree), durable=durable)
    # Some model holds a value the fast encoder leaves to json.dumps: all of them go that way.
    full = {m: t if isinstance(t, dict) else json.loads(t) for m, t in zip(job.names, texts, strict=True)}
    return summary, atomic_write_json(path, dict(summary, models=full), durable=durable)


def _map_models(
    score: Callable[[str], _R],
    job: _DatasetJob,
    workers: int | None,
    meanwhile: Callable[[], object] | None = None,
) -> list[_R]:
    def also() -> None:  # the dataset's info, and the caller's own work, while the forks finish
        job.info()
        if meanwhile is not None:
            meanwhile()

    processes = processes_for(len(job.names), workers) if workers != 1 else 1
    return map_forked(score, job.names, processes, needs_setup=job.needs_pil, meanwhile=also)


class _DatasetJob:
    """One dataset's inputs, resolved once in this process (so forks inherit them) and its models' scoring.

    Args:
        dataset_root: The dataset folder (or its ``VLM`` folder).
        ground_truth: A GT file, a loaded GT dict, or None for the default file.
        models: Model folder names, or None for `default_models`.
        profile: Scoring profile.
    """

    def __init__(
        self,
        dataset_root: str | Path,
        ground_truth: str | Path | dict[str, Any] | None,
        models: Iterable[str] | None,
        profile: str | Profile,
    ) -> None:
        self.prof = resolve(profile)
        self.root = root = dataset_root_of(dataset_root)
        self.names = list(models) if models is not None else default_models(root)
        self.gt: dict[str, Any] | None = None
        self.gt_file: str | None = None
        self.gt_error: str | None = None
        try:
            if isinstance(ground_truth, dict):
                self.gt = ground_truth
            else:
                path = Path(ground_truth) if ground_truth is not None else ground_truth_path(root)
                self.gt_file = str(path)
                self.gt = load_ground_truth_dict(path)
        except BenchmarkError as exc:
            self.gt_error = str(exc)
        # One context for all models: the GT is parsed once, and annotation files that several models share
        # (byte-identical) are parsed and scored once (once per process when several processes score them).
        self.ctx = make_context(self.gt, self.prof, root) if isinstance(self.gt, dict) else None
        self._info: dict[str, Any] | None = None

    def needs_pil(self, model: str) -> bool:
        """Whether scoring ``model`` loads Pillow (a hint for who scores it, `images.needs_pil`)."""
        return needs_pil(self.root / "VLM" / model / AGENT_DIR / "images")

    def score_model(self, model: str) -> dict[str, Any]:
        """One model's eval_results entry (``{"model", "metrics", ..., "per_sample"}``)."""
        pred = self.root / "VLM" / model / AGENT_DIR
        if self.gt is not None and pred.is_dir():
            res = score_prediction(
                pred, self.gt, profile=self.prof, dataset_root=self.root, context=self.ctx
            ).to_dict()
        else:
            error = self.gt_error if self.gt is None else f"no folder {pred}"
            res = {"metrics": {}, "per_sample": [], "dimensions": {}, "breakdown": {}, "error": error}
        return {"model": model, **res}

    def score_encoded(self, model: str) -> tuple[dict[str, Any], str | dict[str, Any]]:
        """``(model, metrics, error)`` and the entry's JSON text at its depth in the file (or the entry itself
        when it is not plain JSON)."""
        res = self.score_model(model)
        brief = {"model": model, "metrics": res["metrics"], "error": res["error"]}
        try:
            return brief, dumps_indented(res, depth=_MODEL_DEPTH)
        except NotPlainJson:
            return brief, res

    def info(self) -> dict[str, Any]:
        """`dataset_info` of this dataset, computed once."""
        if self._info is None:
            self._info = dataset_info(self.root, self.gt or {})
        return self._info

    def results(self, out_models: dict[str, Any]) -> dict[str, Any]:
        """The eval_results dict around the models' entries."""
        return {
            "dataset": self.root.name,
            "dataset_dir": str(self.root),
            "ground_truth_file": self.gt_file,
            "profile": self.prof.name,
            "info": self.info(),
            "models": out_models,
        }


_MODEL_DEPTH = 2
"""Where a model's entry sits in the eval_results tree: ``{"models": {name: entry}}``."""


def _extension(path: str) -> str:
    return split_suffix(path)[1].lower() or "(folder)"


def dataset_info(root: Path, gt: dict[str, Any]) -> dict[str, Any]:
    """Attributes for the breakdown tables: task, dimension, modality and the manifest's main source format.

    Args:
        root: The dataset folder.
        gt: Its raw GT dict ({} when unreadable).

    Returns:
        ``{"task_type", "dimension", "modality", "source_format"}`` (None where unknown).
    """
    from benchmark.manifest import parse_manifest
    from benchmark.score.dataset import gt_samples
    from benchmark.score.semantic import expected_task

    expected = expected_task(gt, gt_samples(gt)) if gt else None
    fmt: str | None = None
    try:
        exts = Counter(_extension(e.raw) for e in parse_manifest(root / "VLM" / "random.txt", root))
        fmt = exts.most_common(1)[0][0] if exts else None
    except (BenchmarkError, OSError) as exc:
        log.debug("no manifest format for %s: %s", root, exc)
    modality = gt.get("modality_primary")
    return {
        "task_type": expected.task if expected else None,
        "dimension": expected.dim if expected else None,
        "modality": modality if isinstance(modality, str) else None,
        "source_format": fmt,
    }


def default_output(dataset_root: str | Path, profile: str | Profile) -> Path:
    """``VLM/eval_results_<profile>.json`` (never the reference's own ``eval_results_v2.json``)."""
    return dataset_root_of(dataset_root) / "VLM" / f"eval_results_{resolve(profile).name}.json"


def write_results(results: dict[str, Any], path: str | Path, *, durable: bool = True) -> Path:
    """Write an eval_results dict as UTF-8 JSON (atomic replace), as `atomic_write_json` writes it.

    Args:
        results: A :func:`score_dataset` result.
        path: Target file.
        durable: Fsync the file and its folder (see `core.atomic`); the CLI's report, which no rerun
            reads back and any rerun rewrites, skips it (~12 ms of wall time per dataset on this machine).

    Returns:
        The path written.
    """
    try:
        text = dumps_indented(results)  # the same text as atomic_write_json's, in half the time
    except NotPlainJson:
        return atomic_write_json(path, results, durable=durable)
    return atomic_write_text(path, text, durable=durable)


def _score_one(args: tuple[str, list[str] | None, Profile]) -> dict[str, Any]:
    root, models, prof = args
    return score_dataset(root, models=models, profile=prof)


def score_root(
    root: str | Path,
    *,
    models: Iterable[str] | None = None,
    profile: str | Profile = "official",
    workers: int | None = None,
) -> dict[str, dict[str, Any]]:
    """Score every dataset under a benchmark root, datasets in parallel processes.

    Args:
        root: A benchmark root (any folder whose sub-folders, at any depth, hold ``VLM/random.txt``), or one
            dataset.
        models: Restrict to these models; a dataset lacking one records it as an error (skipped in the macro).
        profile: Scoring profile.
        workers: Worker processes (default: CPU count, capped by the number of datasets; 1 = in-process).

    Returns:
        ``{dataset name: score_dataset(...) result}`` in discovery order.
    """
    from benchmark.discover import discover

    prof = resolve(profile)
    roots = [str(d.root) for d in discover(root)]
    wanted = list(models) if models is not None else None
    jobs = [(r, _present(Path(r), wanted), prof) for r in roots]
    n = min(len(jobs), workers or os.cpu_count() or 1)
    if n <= 1:
        done = [_score_one(j) for j in jobs]
    else:
        # Imported here: the per-dataset CLI never starts a pool (docs/performance.md, Scorer).
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(max_workers=n) as pool:
            done = list(pool.map(_score_one, jobs))
    return {res["dataset"]: res for res in done}


def _present(root: Path, wanted: list[str] | None) -> list[str] | None:
    # A model asked for but absent from a dataset is skipped there (not an error), like the reference table.
    if wanted is None:
        return None
    have = set(default_models(root))
    return [m for m in wanted if m in have]
