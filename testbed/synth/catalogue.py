"""The catalogue of bundled datasets as data, and as the Markdown table kept in docs/benchmark.md."""

from __future__ import annotations

from dataclasses import dataclass

from testbed.synth import suite
from testbed.synth.spec import REGISTRY, DatasetSpec


@dataclass(frozen=True)
class CatalogueRow:
    """One dataset of the suite as the catalogue lists it."""

    name: str
    format: str
    task: str
    dimension: str
    modality: str
    layout: str
    traps: tuple[str, ...]


def _row(s: DatasetSpec) -> CatalogueRow:
    return CatalogueRow(s.name, s.fmt, s.task, s.dimension, s.modality, s.layout, s.traps)


def catalogue() -> list[CatalogueRow]:
    """Every registered dataset, in generation order."""
    return [_row(REGISTRY[n].spec) for n in suite.dataset_names()]


def catalogue_markdown(specs: list[DatasetSpec] | None = None) -> str:
    """The catalogue as a Markdown table (the block docs/benchmark.md embeds verbatim).

    Args:
        specs: The datasets to list (default: the bundled suite's; the realfiles suite passes its own).
    """
    rows = catalogue() if specs is None else [_row(s) for s in specs]
    lines = ["| dataset | format | task | dim | modality | layout | traps |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        cells = [f"`{r.name}`", r.format, r.task, r.dimension, r.modality, r.layout, "; ".join(r.traps)]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines) + "\n"


def _span(doc_text: str, marker: str) -> tuple[int, int]:
    """Where the text between ``<!-- <marker>:start -->`` and ``<!-- <marker>:end -->`` starts and ends."""
    open_mark, close_mark = f"<!-- {marker}:start -->", f"<!-- {marker}:end -->"
    try:
        start = doc_text.index(open_mark) + len(open_mark)
        return start, doc_text.index(close_mark, start)
    except ValueError as exc:
        raise ValueError(f"{marker} markers not found in the document") from exc


def embedded_catalogue(doc_text: str, marker: str = "catalogue") -> str:
    """The catalogue table embedded in a Markdown document between the catalogue markers.

    Args:
        doc_text: The document (docs/benchmark.md).
        marker: Marker name (``catalogue`` for the bundled suite, ``realfiles-catalogue`` for the other).

    Returns:
        The text between ``<!-- <marker>:start -->`` and ``<!-- <marker>:end -->`` (newlines trimmed at the
        marker lines).

    Raises:
        ValueError: When the markers are missing.
    """
    start, end = _span(doc_text, marker)
    return doc_text[start:end].lstrip("\n")


def replace_catalogue(doc_text: str, table: str | None = None, marker: str = "catalogue") -> str:
    """``doc_text`` with the table between ``marker``'s markers replaced (default: the bundled one)."""
    start, end = _span(doc_text, marker)
    return doc_text[:start] + "\n" + (catalogue_markdown() if table is None else table) + doc_text[end:]
