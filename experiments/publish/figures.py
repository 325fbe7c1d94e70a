"""The style every published figure shares: its width and resolution, error bars from interval columns, and
saving a figure to PNG (headless: sweeps run on servers and in CI)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.figure import Figure

__all__ = ["DPI", "WIDTH_IN", "error_bars", "save_figure"]

WIDTH_IN = 11.0
"""Figure width in inches; at 110 dpi it is 1210 px, so it fits a 1400 px page without scrolling."""
DPI = 110


def error_bars(values: Iterable[Any], lows: Iterable[Any], highs: Iterable[Any]) -> list[list[float]]:
    """Matplotlib's asymmetric error bars ``[below, above]`` from values and their interval bounds.

    A value whose value or bound is missing (None, NaN) gets no bar (0 on both sides), as does the part of an
    interval that lies on the wrong side of its value.
    """
    below, above = [], []
    for value, low, high in zip(values, lows, highs, strict=True):
        bad = any(x is None or pd.isna(x) for x in (value, low, high))
        below.append(0.0 if bad else max(0.0, float(value) - float(low)))
        above.append(0.0 if bad else max(0.0, float(high) - float(value)))
    return [below, above]


def save_figure(fig: Figure, path: Path) -> Path:
    """Write ``fig`` to ``path`` (PNG at `DPI`, parent folders made) and release it.

    Returns:
        ``path``.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path
