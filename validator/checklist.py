"""Turn a report's failed high-risk checks into the checklist S2 feeds back to the agent."""

from __future__ import annotations

from dataclasses import dataclass

from validator.report import Report


@dataclass(frozen=True)
class ChecklistItem:
    """One thing the agent must fix.

    Attributes:
        index: The sample index, or None for ``data_meta.json``.
        check: The failed check's name.
        score: Its score.
        message: What is wrong and how to fix it.
        editable_fields: The JSON field paths the agent may change to fix it (``data_meta.*`` for the meta).
    """

    index: int | None
    check: str
    score: float
    message: str
    editable_fields: tuple[str, ...]


def checklist(report: Report, *, include_low_risk: bool = False) -> list[ChecklistItem]:
    """The failed high-risk checks of a report, sample by sample, then data_meta.

    Args:
        report: A validator report.
        include_low_risk: Also list failed checks that are not marked high-risk.

    Returns:
        The items in index order, then the data_meta items.
    """
    items: list[ChecklistItem] = []
    for index, sample in sorted(report.samples.items()):
        for outcome in sample.failed(high_risk_only=not include_low_risk):
            fields = tuple(f for f in outcome.result.fields if f) or ("",)
            items.append(ChecklistItem(index, outcome.name, outcome.score, outcome.result.message, fields))
    for outcome in report.data_meta.failed(high_risk_only=not include_low_risk):
        items.append(
            ChecklistItem(
                None, outcome.name, outcome.score, outcome.result.message, tuple(outcome.result.fields)
            )
        )
    return items
