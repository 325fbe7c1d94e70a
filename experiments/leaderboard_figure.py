"""The selector leaderboard's figure: E2E per selector and validator profile, with confidence intervals."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from experiments.stats import CI_METHOD

__all__ = ["leaderboard_figure"]


def leaderboard_figure(frame: pd.DataFrame, path: Path) -> Path:
    """E2E per selector, one group of bars per validator profile, each bar with its dataset-bootstrap
    95 % CI (``E2E_lo``/``E2E_hi``), the oracle bound as a line, the y-axis from 0, the CI method in the
    caption."""
    import matplotlib.pyplot as plt

    from experiments.figure import DPI, WIDTH_IN

    validators = list(dict.fromkeys(frame["validator"]))
    names = list(dict.fromkeys(frame["selector"]))
    fig, ax = plt.subplots(figsize=(WIDTH_IN * 0.7, 4.0))
    width = 0.8 / max(1, len(validators))
    for j, v in enumerate(validators):
        part = frame[frame["validator"] == v].set_index("selector")
        ys, below, above = [], [], []
        for n in names:
            if n not in part.index:
                ys.append(float("nan"))
                below.append(0.0)
                above.append(0.0)
                continue
            y, lo, hi = (part.loc[n, c] for c in ("E2E", "E2E_lo", "E2E_hi"))
            ys.append(float(y))
            known = not any(pd.isna(x) for x in (y, lo, hi))
            below.append(max(0.0, float(y) - float(lo)) if known else 0.0)
            above.append(max(0.0, float(hi) - float(y)) if known else 0.0)
        ax.bar(
            [i + j * width for i in range(len(names))],
            ys,
            width,
            label=f"validator {v}",
            yerr=[below, above],
            capsize=2,
            error_kw={"elinewidth": 0.8, "ecolor": "black"},
        )
    bound = frame["oracle_E2E"].dropna()
    if len(bound):
        ax.axhline(float(bound.iloc[0]), color="black", linestyle="--", linewidth=1, label="oracle best-of-n")
    ax.set_ylim(0.0, 1.05)  # bars from 0: a bar's length is its value
    ax.set_xticks(
        [i + width * (len(validators) - 1) / 2 for i in range(len(names))], names, rotation=20, ha="right"
    )
    ax.set_ylabel("E2E (macro over datasets)")
    ax.set_title("Selectors on stored candidates", fontsize="medium")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small", frameon=False)
    ax.grid(axis="y", alpha=0.3)
    fig.text(0.5, 0.01, f"Error bars: {CI_METHOD}.", ha="center", va="bottom", fontsize="x-small")
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path
