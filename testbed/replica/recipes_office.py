"""Replica recipes for the office files of the real trees: Excel sheets, a Word README, AppleDouble stubs.

Their real content is not in the material (only sizes), so it is invented in the shape such files have: a
clinical sheet with one row per case of the tree (some cells empty, as clinical sheets have them), an image
quantification sheet with one row per slide, a README that describes the imaging without naming any label.
"""

from __future__ import annotations

import re
from typing import Any

from testbed.replica.containers import write_appledouble, write_docx, write_xlsx
from testbed.replica.context import RecipeContext
from testbed.replica.source import ReplicaFile

__all__ = ["write_office"]

_CASE_RE = re.compile(r"(MGHNICU_\d+)-VISIT_\d+-ADC_ss\.mha$")
_CLINICAL_HEADER = (
    "Patient ID",
    "Sex",
    "Gestational age (weeks)",
    "Birth weight (g)",
    "Postnatal age at MRI (days)",
    "Apgar 5 min",
    "Therapeutic hypothermia",
    "2-year outcome",
)


def _clinical_rows(ctx: RecipeContext, split: str) -> list[list[Any]]:
    rng = ctx.rng(f"clinical/{split}")
    cases = sorted(
        {
            m.group(1)
            for f in ctx.dataset.files
            if f"/{split}/" in f"/{f.relpath}" and (m := _CASE_RE.search(f.relpath))
        }
    )
    rows: list[list[Any]] = []
    for case in cases:
        row: list[Any] = [
            case,
            str(rng.choice(["M", "F"])),
            round(float(rng.uniform(36.0, 41.5)), 1),
            int(rng.integers(2200, 4300)),
            int(rng.integers(1, 8)),
            int(rng.integers(1, 9)),
            str(rng.choice(["Yes", "No"], p=[0.8, 0.2])),
            str(rng.choice(["normal", "adverse"], p=[0.65, 0.35])),
        ]
        for column in rng.choice(len(row) - 1, size=int(rng.integers(0, 2)), replace=False):
            row[int(column) + 1] = None  # a missing measurement: an empty cell
        rows.append(row)
    return rows


def _quantification_rows(ctx: RecipeContext) -> list[list[Any]]:
    rng = ctx.rng("quantification")
    rows: list[list[Any]] = []
    for file in ctx.dataset.files:
        if file.relpath.lower().endswith(".czi"):
            stain = file.relpath.split("/")[-2]
            group = "HFD" if "HFD" in file.relpath else "ND"
            area = round(float(rng.uniform(0.5, 12.0)), 2)
            rows.append([file.relpath.rsplit("/", 1)[-1].removesuffix(".czi"), stain, group, area])
    return rows


def write_office(ctx: RecipeContext, file: ReplicaFile) -> str:
    """An ``.xlsx`` sheet, a ``.docx`` README or an AppleDouble ``._*`` stub."""
    target = ctx.target(file)
    name = target.name
    if name.startswith("._"):
        quarantine = b"0083;64b7a2c1;Archive Utility;"
        write_appledouble(target, {"com.apple.quarantine": quarantine}, size=file.real_size)
        return "AppleDouble stub (Finder info + com.apple.quarantine)"
    if name.lower().endswith(".docx"):
        write_docx(
            target,
            [
                "Retinal arteriovenous malformation: case study images.",
                "The folder holds colour, infrared and angiography fundus photographs (TIF), macular OCT "
                "scans and ocular B-scan ultrasonography (PNG) of one patient, before and after surgery.",
                "change.py converts the TIF photographs to PNG.",
            ],
        )
        return "Word document (README)"
    if "clinicaldata" in name:
        split = "BONBID2023_Train" if "train" in name else "BONBID2023_Test"
        rows = _clinical_rows(ctx, split)
        write_xlsx(target, {"Sheet1": (_CLINICAL_HEADER, rows)})
        return f"Excel clinical sheet ({len(rows)} cases)"
    rows = _quantification_rows(ctx)
    write_xlsx(target, {"Quantification": (("Image", "Stain", "Group", "Positive area (%)"), rows)})
    return f"Excel quantification sheet ({len(rows)} slides)"
