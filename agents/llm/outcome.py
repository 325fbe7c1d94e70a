"""How a candidate's conversations add up: the revision split over them, the candidate's status and reason."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from agents.base import Feedback, ManifestEntry
from agents.llm import prompts
from agents.llm.conversation import ConversationState
from agents.tools.required_parts import NO_ANNOTATION
from agents.tools.review_tools import feedback_with_values

__all__ = ["Revision", "candidate_outcome", "short_list", "unwritten_reasons"]


@dataclass(frozen=True)
class Revision:
    """What a revision is told, split by the conversations that do it.

    Attributes:
        feedback: The strategy's feedback.
        editable: Field paths the revision may change.
        output_dir: The copy being revised (current values in the prompt are read from it).
        plan: The plan of the candidate being revised, if it has one.
    """

    feedback: Feedback | str
    editable: list[str]
    output_dir: Path
    plan: dict[str, Any] | None

    @property
    def _items(self) -> tuple[tuple[int | None, str, str], ...]:
        return self.feedback.items if isinstance(self.feedback, Feedback) else ()

    @property
    def touches_meta(self) -> bool:
        """Whether data_meta.json is revised: its items exist, or the feedback names no item at all."""
        items = self._items
        return not items or any(i is None or p.startswith("data_meta") for i, p, _m in items)

    def digest(self) -> str:
        """A digest of the JSON outputs being revised (annotations and data_meta.json).

        Part of the revision's seed: S1's rounds open with the same prompt, and a round that revises another
        output must be a sample of its own, not the previous round's answer replayed by the cache.
        """
        digest = hashlib.sha256()
        files = sorted((self.output_dir / "standardized_annotations").glob("*.json"))
        for path in [*files, self.output_dir / "data_meta.json"]:
            if path.is_file():
                digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
        return digest.hexdigest()

    def entries(self, entries: Sequence[ManifestEntry]) -> list[ManifestEntry]:
        """The samples to revisit: those the items name, or every sample for item-less feedback."""
        named = {i for i, p, _m in self._items if i is not None and not p.startswith("data_meta")}
        if not self._items:
            return list(entries)
        return [e for e in entries if e.index in named]

    def prompt(self, indices: list[int] | None, meta_only: bool = False) -> str:
        """The revise prompt of one conversation: the general feedback and the items about its part."""
        feedback = self.feedback
        if isinstance(feedback, Feedback) and (indices is not None or meta_only):
            keep = [
                it
                for it in feedback.items
                if (meta_only and (it[0] is None or it[1].startswith("data_meta")))
                or (indices is not None and it[0] in indices and not it[1].startswith("data_meta"))
            ]
            feedback = Feedback(feedback.message, tuple(keep))
        text = feedback_with_values(feedback, self.output_dir)
        revise = prompts.REVISE_PROMPT.format(editable=", ".join(self.editable) or "(none)", feedback=text)
        if indices is not None:
            revise += "\n\n" + prompts.REVISE_BATCH_NOTE.format(indices=short_list(indices))
        return revise


def short_list(indices: Sequence[int], limit: int = 50) -> str:
    """Indices as ``[1, 2, ...]``, the first ``limit`` of them."""
    shown = ", ".join(str(i) for i in indices[:limit])
    return f"[{shown}{', ...' if len(indices) > limit else ''}]"


def unwritten_reasons(gaps: Mapping[int, str], failures: Mapping[int, str]) -> dict[int, str]:
    """A candidate's ``skipped``: per unwritten sample of ``gaps`` (`agents.llm.phases.unfinished`), the error
    of the step that failed it (a read, a mask render) where one did, else the missing part of an annotated
    sample; a sample with no annotation and no failed step has nothing more to say and is left out.
    """
    return {i: failures.get(i) or why for i, why in gaps.items() if i in failures or why != NO_ANNOTATION}


def candidate_outcome(
    states: Mapping[str, ConversationState],
    written: list[int],
    gaps: Mapping[int, str],
    meta_written: bool,
) -> tuple[Literal["ok", "incomplete", "failed"], str | None]:
    """Status and reason of a candidate from how its conversations ended and what it wrote.

    Args:
        states: Every conversation, by label.
        written: Indices written whole (annotation and required parts).
        gaps: The indices not written, each with what it lacks (`agents.llm.phases.unfinished`): no
            annotation, or an annotation without a required part (mask, boxes, image).
        meta_written: Whether data_meta.json exists.

    Returns:
        ``failed`` (nothing written, or a conversation failed), ``incomplete`` (samples or the dataset JSON
        missing), else ``ok``; and the reason.
    """
    notes = [s.note for s in states.values() if s.note]
    failures = [
        f"{label}: {s.failed}" if len(states) > 1 else s.failed for label, s in states.items() if s.failed
    ]
    stops = [
        f"{label}: {s.stop_reason}" if len(states) > 1 else s.stop_reason
        for label, s in states.items()
        if s.stop_reason
    ]
    missing, total = list(gaps), len(written) + len(gaps)
    partial = {i: why for i, why in gaps.items() if why != NO_ANNOTATION}
    parts = []
    if missing:
        parts.append(f"{len(missing)} of {total} samples missing: {short_list(missing)}")
    if partial:
        first = min(partial)
        parts.append(f"{len(partial)} of them annotated without a required part (#{first}: {partial[first]})")
    if not meta_written:
        parts.append("no data_meta.json")
    if not written:
        nothing = "no annotation was written"
        if partial:
            first = min(partial)
            nothing = (
                f"no sample was written whole ({len(partial)} annotated without a required part, #{first}: "
            )
            nothing += f"{partial[first]})"
        return "failed", "; ".join([*notes, *(failures or stops or ["finished"]), nothing])
    if failures:
        return "failed", "; ".join([*notes, *failures, *parts])
    if parts:
        return "incomplete", "; ".join([*notes, *(stops or ["finished"]), *parts])
    return "ok", "; ".join([*notes, *(str(s) for s in stops)]) or None
