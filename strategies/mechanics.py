"""Mechanics shared by the strategies: generate n candidates, validate them, assemble the selected folder.

`assemble` is the one place a selected output is written: per sample the chosen candidate's image, mask and
JSON are copied (``record.image_path`` rewritten to the copied image), and ``data_meta.json`` is the meta of
the candidate whose meta validates best, patched with the real counts of the assembled folder
(paper Appendix E, S3).

These functions read and write files and are synchronous; strategies call them through `run_cpu` (the run's
worker pool) so that the event loop keeps serving the model calls of the other datasets meanwhile.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import copy
import json
import os
import shutil
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from agents.base import Agent, Candidate, Task
from benchmark.fields import IMAGE_PATH
from benchmark.layout import ANNOTATIONS_DIR, DATA_META_NAME, IMAGE_EXTENSIONS, IMAGES_DIR, MASKS_DIR
from core.atomic import atomic_write_bytes, atomic_write_json
from strategies.base import SampleDecision, StrategyResult, Validator, run_cpu, usage_of
from strategies.context import call_agent, current
from strategies.paper.reference import patch_meta
from validator.report import Report
from validator.sample import image_facts
from validator.values import get_path, set_path

__all__ = [
    "SampleSource",
    "adopt",
    "assemble",
    "candidate_metas",
    "find_image",
    "generate_many",
    "get_path",
    "link_or_copy",
    "read_annotation",
    "read_meta",
    "set_path",
    "single_result",
    "stored_annotations",
    "validate_all",
    "write_selected",
]

StopRule = Callable[[list[Candidate]], Awaitable[bool]]


async def generate_many(
    agent: Agent, task: Task, n: int, *, stop: StopRule | None = None, batch: int | None = None
) -> list[Candidate]:
    """Generate up to ``n`` candidates with distinct candidate indices and seeds, concurrently.

    Args:
        agent: The agent.
        task: The dataset task (candidate ``k`` gets ``candidate_index=k`` and ``seed=task.seed + k``).
        n: How many candidates.
        stop: Checked after each batch; returning True stops generating (adaptive best-of-n).
        batch: Candidates started together when ``stop`` is given (default 1; without ``stop`` all n at once).

    Returns:
        The candidates in index order; fewer than n when ``stop`` fired or the budget ran out.
    """
    size = n if stop is None else max(1, batch or 1)
    out: list[Candidate] = []
    for start in range(0, n, size):
        keys = range(start, min(n, start + size))
        made = await asyncio.gather(
            *(call_agent(task, str(k), agent.generate, candidate_index=k) for k in keys)
        )
        out.extend(c for c in made if c is not None)
        if any(c is None for c in made) or (stop is not None and await stop(out)):
            break
    return out


async def validate_all(validator: Validator, candidates: Sequence[Candidate], task: Task) -> list[Report]:
    """Validate every candidate (in the validator's CPU pool), in candidate order."""
    return list(await asyncio.gather(*(run_cpu(validator, validator.validate, c, task) for c in candidates)))


def _read_text(path: Path) -> str | None:
    # An agent's output may be missing or not text; either way the strategy treats it as absent.
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, ValueError):
        return None


def _read_object(path: Path) -> dict[str, Any] | None:
    return _parsed_object(_read_text(path))


# The annotation files' text by (candidate folder, index) while `stored_annotations` is open; None outside.
_STORED: contextvars.ContextVar[dict[tuple[Path, int], str | None] | None] = contextvars.ContextVar(
    "stored_annotations", default=None
)


@contextlib.contextmanager
def stored_annotations() -> Iterator[None]:
    """Within this block, `read_annotation` reads each file from disk once (in this context).

    For finished candidates only, whose files no longer change: pass@k runs every selector on every subset
    of a dataset's candidates, which read each sample's annotation thousands of times (half its time went to
    opening the files). The text is kept, not the dict: each call still returns a new dict, so a selector
    that changes what it was given changes nothing another one reads.
    """
    token = _STORED.set({})
    try:
        yield
    finally:
        _STORED.reset(token)


def read_annotation(root: Path, index: int) -> dict[str, Any] | None:
    """The candidate's ``standardized_annotations/<index>.json`` as a dict (None if absent/not an object)."""
    stored = _STORED.get()
    if stored is None:
        return _read_object(root / ANNOTATIONS_DIR / f"{index}.json")
    key = (root, index)
    if key not in stored:
        stored[key] = _read_text(root / ANNOTATIONS_DIR / f"{index}.json")
    return _parsed_object(stored[key])


def _parsed_object(text: str | None) -> dict[str, Any] | None:
    # Malformed JSON, or JSON that is not an object, is absent too.
    if text is None:
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def read_meta(root: Path) -> dict[str, Any] | None:
    """The candidate's ``data_meta.json`` as a dict (None if absent/not an object)."""
    return _read_object(root / DATA_META_NAME)


def find_image(root: Path, index: int, annotation: Mapping[str, Any] | None = None) -> Path | None:
    """The image of ``index``: ``images/<index>.<ext>``, else what ``record.image_path`` names."""
    for ext in IMAGE_EXTENSIONS:
        path = root / IMAGES_DIR / f"{index}{ext}"
        if path.is_file():
            return path
    declared = get_path(annotation, IMAGE_PATH) if annotation else None
    if isinstance(declared, str) and declared.strip():
        path = (root / declared).resolve()
        if path.is_file() and root.resolve() in path.parents:
            return path
    return None


class SampleSource:
    """What goes into the selected folder for one index: an annotation and the files it refers to.

    Args:
        annotation: The JSON object to write (copied; ``record.image_path`` is rewritten).
        image: The image file to copy, or None.
        mask: The label-map PNG to copy to ``masks/<index>.png``, or None.
        annotation_file: The candidate's file ``annotation`` was read from; when the annotation goes into
            the selected folder unchanged, that file is linked instead of written again.
    """

    def __init__(
        self,
        annotation: dict[str, Any],
        image: Path | None,
        mask: Path | None,
        annotation_file: Path | None = None,
    ) -> None:
        self.annotation, self.image, self.mask = annotation, image, mask
        self.annotation_file = annotation_file

    @classmethod
    def of(cls, root: Path, index: int) -> SampleSource | None:
        """The sample as a candidate folder holds it, or None when it has no annotation object."""
        ann = read_annotation(root, index)
        if ann is None:
            return None
        mask = root / MASKS_DIR / f"{index}.png"
        file = root / ANNOTATIONS_DIR / f"{index}.json"
        return cls(ann, find_image(root, index, ann), mask if mask.is_file() else None, file)


def write_selected(
    out: Path,
    sources: Mapping[int, SampleSource],
    metas: Sequence[tuple[float, dict[str, Any]]],
    meta_override: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Write the selected folder from scratch and return the ``data_meta.json`` written.

    Args:
        out: The ``agent1_data_organization`` folder (emptied first, so reruns are byte-identical).
        sources: Per index, what to write.
        metas: ``(meta validator total, data_meta)`` of each candidate; the best (first on ties) is patched.
        meta_override: Write this meta instead (already patched; the ``paper`` profile's choice).

    Returns:
        The meta written.
    """
    if out.exists():
        shutil.rmtree(out)
    (out / ANNOTATIONS_DIR).mkdir(parents=True)
    folders = {out / ANNOTATIONS_DIR}

    def put(source: Path, target: Path) -> None:
        # `link_or_copy` into the folder just emptied: there is nothing to replace, and each subfolder is
        # made once instead of once per file (two system calls fewer per file).
        if target.parent not in folders:
            target.parent.mkdir(parents=True, exist_ok=True)
            folders.add(target.parent)
        try:
            os.link(source, target)
        except OSError:
            link_or_copy(source, target)

    annotations: dict[int, dict[str, Any] | None] = {}
    images_valid: dict[int, bool] = {}
    for index, src in sorted(sources.items()):
        # A shallow copy: the one change below replaces ``record`` with a copy of its own, so the source's
        # annotation is never modified (deep-copying every annotation was a quarter of this function's time).
        ann = dict(src.annotation)
        if src.image is not None:
            ext = src.image.suffix.lower() if src.image.suffix.lower() in IMAGE_EXTENSIONS else ".png"
            target = out / IMAGES_DIR / f"{index}{ext}"
            put(src.image, target)
            record = ann.get("record")
            if isinstance(record, dict):
                ann["record"] = {**record, "image_path": f"{IMAGES_DIR}/{index}{ext}"}
            facts = image_facts(src.image)  # the same bytes: the candidate's file may already be verified
            images_valid[index] = bool(facts and facts.valid)
        else:
            images_valid[index] = False
        if src.mask is not None:
            put(src.mask, out / MASKS_DIR / f"{index}.png")
        if src.annotation_file is not None and ann == src.annotation:
            put(src.annotation_file, out / ANNOTATIONS_DIR / f"{index}.json")  # parses to ``ann``
        else:
            atomic_write_json(out / ANNOTATIONS_DIR / f"{index}.json", ann, durable=False)
        annotations[index] = ann
    if meta_override is not None:
        meta = meta_override
    else:
        ranked = sorted(enumerate(metas), key=lambda kv: (-kv[1][0], kv[0]))
        base = (
            copy.deepcopy(ranked[0][1][1]) if ranked else {"dataset_name": "NA", "modality_primary": ["NA"]}
        )
        meta = patch_meta(base, annotations, images_valid)
    atomic_write_json(out / DATA_META_NAME, meta)
    return meta


def link_or_copy(source: Path, target: Path) -> None:
    """Put ``source``'s bytes at ``target``: a hard link when the file system allows one, else a copy.

    A selected image or mask is a candidate's file unchanged, so a link costs no read and no write. Nothing
    in a run rewrites a file in place (every write replaces the file, `core.atomic`), so the candidate
    and the selected folder never see each other's later writes. The copy (another file system, a file
    system without hard links) skips fsync like every bulk file of the selected folder, which is rebuilt
    from the candidates on every run.

    Args:
        source: The candidate's file.
        target: Where the selected folder holds it (its folder is created; an existing file is replaced).
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileNotFoundError):
        target.unlink()
    try:
        os.link(source, target)
    except OSError:
        atomic_write_bytes(target, source.read_bytes(), durable=False)


def candidate_metas(
    candidates: Sequence[Candidate], reports: Sequence[Report]
) -> list[tuple[float, dict[str, Any]]]:
    """``(meta total, meta)`` for every candidate holding a readable ``data_meta.json``."""
    out = []
    for cand, rep in zip(candidates, reports, strict=True):
        meta = read_meta(cand.output_dir)
        if meta is not None:
            out.append((rep.data_meta.total, meta))
    return out


def assemble(
    task: Task, candidates: Sequence[Candidate], chosen: Mapping[int, int | None], reports: Sequence[Report]
) -> dict[str, Any]:
    """Write ``task.output_dir`` from one complete candidate per sample.

    Args:
        task: The dataset task.
        candidates: The candidates.
        chosen: Per manifest index, the position of the candidate to copy (None: the sample stays missing).
        reports: The candidates' validator reports (their meta totals pick the meta).

    Returns:
        The ``data_meta.json`` written.
    """
    sources: dict[int, SampleSource] = {}
    for index, k in chosen.items():
        src = SampleSource.of(candidates[k].output_dir, index) if k is not None else None
        if src is not None:
            sources[index] = src
    return write_selected(task.output_dir, sources, candidate_metas(candidates, reports))


def adopt(task: Task, candidate: Candidate) -> None:
    """Make ``task.output_dir`` an exact copy of one candidate folder (S0-S2 keep it as is)."""
    out = task.output_dir
    if out.exists():
        shutil.rmtree(out)
    if candidate.output_dir.is_dir():
        shutil.copytree(candidate.output_dir, out)
    else:
        out.mkdir(parents=True)


def single_result(
    name: str,
    task: Task,
    candidates: list[Candidate],
    chosen: int | None,
    report: Report | None,
    reason: str,
    notes: list[str] | None = None,
) -> StrategyResult:
    """The result of a strategy whose output is one whole candidate (S0, S1, S2).

    Args:
        name: The strategy name.
        task: The dataset task.
        candidates: Every candidate made.
        chosen: The position of the kept candidate; None when the budget stopped the strategy before any.
        report: The kept output's report (for the per-sample scores).
        reason: The decision reason written for every sample.
        notes: Log lines.

    Returns:
        The result (``incomplete`` when nothing was kept).
    """
    decisions: dict[int, SampleDecision] = {}
    for index in task.indices:
        present = chosen is not None and read_annotation(task.output_dir, index) is not None
        decisions[index] = SampleDecision(
            index,
            chosen if present else None,
            reason if present else no_output_reason(candidates, index),
            report.sample_total(index) if report is not None else 0.0,
        )
    return StrategyResult(
        name,
        task.output_dir,
        candidates,
        decisions,
        usage_of(candidates),
        incomplete=chosen is None,
        notes=list(notes or []),
    )


def no_output_reason(
    candidates: Sequence[Candidate], index: int, text: str = "no output for this sample"
) -> str:
    """The decision reason of a sample nobody wrote, with the agent's one-line why when it gave one.

    Args:
        candidates: The candidates of the dataset.
        index: The manifest index.
        text: The start of the reason.

    Returns:
        ``text``, or ``"<text>: <why>"`` with the first candidate's reason for skipping the sample.
    """
    why = next((c.skipped[index] for c in candidates if index in c.skipped), None)
    return f"{text}: {why}" if why else text


def generation_notes(candidates: Sequence[Candidate], n: int) -> list[str]:
    """Notes for a strategy result: failed candidates, and how many of ``n`` were generated."""
    notes = [f"candidate {c.candidate_index} failed: {c.reason}" for c in candidates if not c.ok]
    if len(candidates) < n:
        notes.append(f"{len(candidates)} of {n} candidates generated")
    return notes


def budget_hit() -> bool:
    """Whether the run's budget stopped new calls (the result is then incomplete and redone on resume)."""
    budget = current().budget
    return budget is not None and budget.hit
