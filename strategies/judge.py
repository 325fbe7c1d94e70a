"""Judge selectors: an LLM judge picks each sample's candidate instead of (or among the top of) the validator

``llm_judge`` shows the judge every candidate holding the sample; ``hybrid`` only the validator's top-k. Per
sample the judge sees the fields whose values differ across those candidates, each candidate's failed
validator checks with their messages, and one composite image of the candidates' images side by side
(numbered, within ``max_image_px``), and answers with a candidate number through a tool call (`agents.judge`).

Where the judge is not asked (one candidate, or candidates identical in every field and image: a tie) or its
answer is invalid (no tool call, a number out of range, a failed call), ``validator_max`` chooses and the
decision says so (``fallback`` for invalid answers; ``details["judge"]["status"]`` for each case), so the
tables count them. Once the run's budget is spent the judge is not asked (status ``budget``, a fallback).
Every verdict's usage is kept in the decision and added to the strategy's cost.
"""

from __future__ import annotations

import asyncio
import hashlib
import io
import json
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from PIL import Image, ImageDraw

from agents.base import Candidate, Task
from agents.judge import Judge, JudgeAnswer, JudgeRequest
from benchmark.fields import IMAGE_PATH
from strategies.choice import Choice
from strategies.mechanics import find_image, read_annotation
from validator.report import Report

__all__ = ["JudgeSelector", "composite_image", "differing_fields", "hybrid", "llm_judge"]

MISSING = "<absent>"


def _leaves(obj: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(obj, Mapping) and obj:
        out: dict[str, Any] = {}
        for key, value in obj.items():
            out.update(_leaves(value, f"{prefix}.{key}" if prefix else str(key)))
        return out
    return {prefix: obj}


def differing_fields(
    annotations: Sequence[Mapping[str, Any]], ignore: Sequence[str] = ()
) -> dict[str, list[str]]:
    """The leaf field paths whose values differ across annotations, each with every annotation's value.

    Args:
        annotations: One annotation per candidate, in the judge's order.
        ignore: Path prefixes left out (``record.image_path`` differs by construction).

    Returns:
        ``{path: [value of candidate 1, value of candidate 2, ...]}`` (JSON text, truncated), sorted by path.
    """
    flat = [_leaves(a) for a in annotations]
    paths = sorted(set().union(*flat)) if flat else []
    out: dict[str, list[str]] = {}
    for path in paths:
        if any(path == p or path.startswith(p + ".") for p in ignore):
            continue
        values = [
            json.dumps(f[path], sort_keys=True, default=str)[:120] if path in f else MISSING for f in flat
        ]
        if len(set(values)) > 1:
            out[path] = values
    return out


def composite_image(images: Sequence[bytes | None], max_px: int = 1024, tile_px: int = 320) -> bytes | None:
    """The candidates' images side by side, numbered from 1, as one PNG at most ``max_px`` wide.

    Args:
        images: Each candidate's image file bytes (None: it has none; an empty tile keeps the numbering).
        max_px: The composite's largest width (tiles shrink to fit).
        tile_px: The largest side of one tile.

    Returns:
        The PNG bytes, or None when no candidate has a readable image.
    """
    tiles: list[Image.Image | None] = []
    for data in images:
        try:
            tile = Image.open(io.BytesIO(data)).convert("RGB") if data is not None else None
        except (OSError, ValueError):  # an unreadable image shows as an empty tile
            tile = None
        tiles.append(tile)
    if not any(t is not None for t in tiles):
        return None
    side = max(16, min(tile_px, max_px // max(1, len(tiles))))
    label_h = 14
    canvas = Image.new("RGB", (side * len(tiles), side + label_h), "black")
    draw = ImageDraw.Draw(canvas)
    for k, tile in enumerate(tiles):
        if tile is not None:
            tile.thumbnail((side, side))
            canvas.paste(tile, (k * side + (side - tile.width) // 2, label_h + (side - tile.height) // 2))
        draw.text((k * side + 3, 1), str(k + 1), fill="white")
    out = io.BytesIO()
    # Sent once and never kept: zlib level 1 takes ~0.013 s where `optimize` took 0.25-0.38 s for two to four
    # CT slices, for 30-40 % more bytes (perf/judge_composite.py); providers price an image by its pixels.
    canvas.save(out, format="PNG", compress_level=1)
    return out.getvalue()


def _failed_lines(report: Report, index: int, limit: int = 6) -> list[str]:
    sample = report.samples.get(index)
    if sample is None:
        return ["(no validator report)"]
    failed = sorted(sample.failed(), key=lambda o: o.score)[:limit]
    return [f"{o.name} ({o.score:.2f}): {o.result.message[:160]}" for o in failed] or ["all checks pass"]


class JudgeSelector:
    """A selector that asks a judge per sample (see the module docstring).

    Args:
        judge: The judge role.
        top_k: Show the judge only the validator's top-k candidates (``hybrid``); None: every candidate.
        max_image_px: Largest width of the composite image.
        max_fields: Most differing fields listed (the rest are counted).
    """

    def __init__(
        self, judge: Judge, top_k: int | None = None, max_image_px: int = 1024, max_fields: int = 40
    ) -> None:
        if top_k is not None and top_k < 1:
            raise ValueError(f"selector.top_k must be 1 or more, got {top_k}")
        self.judge = judge
        self.top_k = top_k
        self.max_image_px = max_image_px
        self.max_fields = max_fields
        self.__name__ = "hybrid" if top_k is not None else "llm_judge"
        # Verdicts asked ahead for a dataset (`prefetch`), taken by `__call__`: keyed by the dataset, the
        # candidates list of that selection (one object per `choose` call) and the sample.
        self._ready: dict[tuple[str, int, int], tuple[list[int], JudgeRequest, JudgeAnswer]] = {}
        self._lock = threading.Lock()

    def bind_loop(self, loop: asyncio.AbstractEventLoop) -> None:
        """Hand the run's event loop to a judge that can use it (`agents.model.judge.LiteLLMJudge`)."""
        bind = getattr(self.judge, "bind_loop", None)
        if callable(bind):
            bind(loop)

    def prefetch(self, candidates: Sequence[Candidate], reports: Sequence[Report], task: Task) -> None:
        """Ask every verdict of a dataset at once when the judge can (``judge_many``, ``judge.concurrency``
        in flight) instead of one after the other; `__call__` then takes each sample's ranking, request and
        answer from here.

        `strategies.selectors.choose` calls it before its per-sample loop, with the same arguments.
        """
        many = getattr(self.judge, "judge_many", None)
        if not callable(many):
            return
        asks: list[tuple[list[int], JudgeRequest]] = []
        for index in task.indices:
            shown = self._ranked(index, candidates, reports)
            if len(shown) > 1:
                req = self.request(index, candidates, reports, task, shown)
                if req is not None:
                    asks.append((shown, req))
        if not asks:
            return
        answers = many([req for _, req in asks])
        with self._lock:
            # What an interrupted selection of this dataset left is dropped: a later candidates list could
            # reuse its id. A concurrent one losing its entries only asks those samples one by one.
            for stale in [key for key in self._ready if key[0] == task.name]:
                del self._ready[stale]
            for (shown, req), answer in zip(asks, answers, strict=True):
                self._ready[(task.name, id(candidates), req.index)] = (shown, req, answer)

    def _prefetched(
        self, index: int, candidates: Sequence[Candidate], task: Task
    ) -> tuple[list[int], JudgeRequest, JudgeAnswer] | None:
        with self._lock:
            return self._ready.pop((task.name, id(candidates), index), None)

    def _ranked(self, index: int, candidates: Sequence[Candidate], reports: Sequence[Report]) -> list[int]:
        # validator_max's order (total, then the image check, then the lower index): its head is the fallback,
        # and the hybrid keeps the top k.
        def key(k: int) -> tuple[float, float, int]:
            report = reports[k]
            return (-round(report.sample_total(index), 6), -report.check_score(index, "image_path"), k)

        held = [k for k, c in enumerate(candidates) if read_annotation(c.output_dir, index) is not None]
        ranked = sorted(held, key=key)
        return ranked[: self.top_k] if self.top_k is not None else ranked

    def request(
        self,
        index: int,
        candidates: Sequence[Candidate],
        reports: Sequence[Report],
        task: Task,
        shown: list[int],
    ) -> JudgeRequest | None:
        """The judge's view of the ``shown`` candidates of one sample; None when they all agree (a tie)."""
        docs = [read_annotation(candidates[k].output_dir, index) or {} for k in shown]
        images: list[bytes | None] = []
        for k, doc in zip(shown, docs, strict=True):
            image_path = find_image(candidates[k].output_dir, index, doc)
            images.append(image_path.read_bytes() if image_path is not None else None)
        fields = differing_fields(docs, ignore=(IMAGE_PATH,))
        if not fields and len({hashlib.sha256(i or b"").hexdigest() for i in images}) == 1:
            return None
        lines = [
            f"Dataset {task.name}, sample {index}: {len(shown)} candidates. The composite image shows their "
            "images left to right, numbered like the candidates.",
            "",
            "Fields that differ (candidate 1, 2, ...):" if fields else "No annotation field differs.",
        ]
        for path, values in list(fields.items())[: self.max_fields]:
            lines.append(f"- {path}: " + " | ".join(f"{n + 1}={v}" for n, v in enumerate(values)))
        if len(fields) > self.max_fields:
            lines.append(f"- ... and {len(fields) - self.max_fields} more fields")
        lines.append("")
        lines.append("Validator (ground-truth-free) messages per candidate:")
        for n, k in enumerate(shown):
            lines.append(f"candidate {n + 1} (validator total {reports[k].sample_total(index):.3f}):")
            lines += [f"  - {line}" for line in _failed_lines(reports[k], index)]
        text = "\n".join(lines)
        image = composite_image(images, self.max_image_px)
        key = hashlib.sha256(text.encode() + (image or b"")).hexdigest()
        return JudgeRequest(task.name, index, len(shown), text, image, key, seed=task.seed)

    def __call__(
        self, index: int, candidates: Sequence[Candidate], reports: Sequence[Report], task: Task
    ) -> Choice:
        """Ask the judge for sample ``index``; fall back to the validator's best where it cannot decide."""
        ready = self._prefetched(index, candidates, task)  # asked ahead: its ranking and request are kept
        shown = ready[0] if ready is not None else self._ranked(index, candidates, reports)
        best = shown[0] if shown else 0
        if len(shown) <= 1:
            return Choice(best, f"one candidate to judge; candidate {best}", details={"status": "single"})
        req = ready[1] if ready is not None else self.request(index, candidates, reports, task, shown)
        if req is None:
            return Choice(
                best, f"tie (candidates agree); validator_max chose {best}", details={"status": "tie"}
            )
        answer = ready[2] if ready is not None else self.judge.judge(req)
        details: dict[str, Any] = {"shown": shown, "judge": self.judge.name}
        if answer.stopped:
            return Choice(
                best,
                f"run budget spent ({answer.reason}); validator_max chose {best}",
                fallback=True,
                details={**details, "status": "budget", "answer": answer.reason},
            )
        if answer.choice is None:
            return Choice(
                best,
                f"invalid judge answer ({answer.reason}); validator_max chose {best}",
                fallback=True,
                usage=answer.usage,
                charged=answer.charged,
                details={**details, "status": "invalid", "answer": answer.reason},
            )
        k = shown[answer.choice - 1]
        return Choice(
            k,
            f"judge chose {answer.choice} of {len(shown)}: candidate {k}"
            + (f" ({answer.reason})" if answer.reason else ""),
            usage=answer.usage,
            charged=answer.charged,
            details={**details, "status": "chosen", "answer": answer.choice},
        )


def llm_judge(judge: Judge, max_image_px: int = 1024, max_fields: int = 40) -> JudgeSelector:
    """The judge picks among every candidate holding the sample.

    Args:
        judge: The judge role (``judge=litellm judge.model=...``; default: the agent's config).
        max_image_px: Largest width of the composite image.
        max_fields: Most differing fields listed.

    Returns:
        The selector.
    """
    return JudgeSelector(judge, None, max_image_px, max_fields)


def hybrid(judge: Judge, top_k: int = 2, max_image_px: int = 1024, max_fields: int = 40) -> JudgeSelector:
    """The judge picks among the validator's top-k candidates of the sample.

    Args:
        judge: The judge role.
        top_k: How many of the validator's best candidates the judge sees.
        max_image_px: Largest width of the composite image.
        max_fields: Most differing fields listed.

    Returns:
        The selector.
    """
    return JudgeSelector(judge, top_k, max_image_px, max_fields)


# The plan reads this to know the factory wants the judge role (not a selector to call as is).
llm_judge.needs_judge = True  # type: ignore[attr-defined]
hybrid.needs_judge = True  # type: ignore[attr-defined]
