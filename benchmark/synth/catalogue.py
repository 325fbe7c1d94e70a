"""The catalogue of bundled datasets as data, and as the Markdown table kept in docs/benchmark.md."""

from __future__ import annotations

from dataclasses import dataclass

from benchmark.synth import suite
from benchmark.synth.spec import REGISTRY


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


def catalogue() -> list[CatalogueRow]:
    """Every registered dataset, in generation order."""
    return [
        CatalogueRow(
            n,
            REGISTRY[n].spec.fmt,
            REGISTRY[n].spec.task,
            REGISTRY[n].spec.dimension,
            REGISTRY[n].spec.modality,
            REGISTRY[n].spec.layout,
            REGISTRY[n].spec.traps,
        )
        for n in suite.dataset_names()
    ]


def catalogue_markdown() -> str:
    """The catalogue as a Markdown table (the block docs/benchmark.md embeds verbatim)."""
    lines = ["| dataset | format | task | dim | modality | layout | traps |", "|---|---|---|---|---|---|---|"]
    for r in catalogue():
        cells = [f"`{r.name}`", r.format, r.task, r.dimension, r.modality, r.layout, "; ".join(r.traps)]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines) + "\n"


CATALOGUE_START = "<!-- catalogue:start -->"
CATALOGUE_END = "<!-- catalogue:end -->"


def embedded_catalogue(doc_text: str) -> str:
    """The catalogue table embedded in a Markdown document between the catalogue markers.

    Args:
        doc_text: The document (docs/benchmark.md).

    Returns:
        The text between ``<!-- catalogue:start -->`` and ``<!-- catalogue:end -->`` (newlines trimmed at the
        marker lines).

    Raises:
        ValueError: When the markers are missing.
    """
    try:
        start = doc_text.index(CATALOGUE_START) + len(CATALOGUE_START)
        end = doc_text.index(CATALOGUE_END, start)
    except ValueError as exc:
        raise ValueError("catalogue markers not found in the document") from exc
    return doc_text[start:end].lstrip("\n")


def replace_catalogue(doc_text: str) -> str:
    """``doc_text`` with its embedded catalogue replaced by :func:`catalogue_markdown`."""
    start = doc_text.index(CATALOGUE_START) + len(CATALOGUE_START)
    end = doc_text.index(CATALOGUE_END, start)
    return doc_text[:start] + "\n" + catalogue_markdown() + doc_text[end:]
