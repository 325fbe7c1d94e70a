"""The selector leaderboard's figure: E2E per selector and validator profile, with confidence intervals."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from experiments.publish.stats import CI_METHOD

__all__ = ["leaderboard_figure"]


def leaderboard_figure(frame: pd.DataFrame, path: Path) -> Path:
    """E2E per selector, one group of bars per validator profile, each bar with its dataset-bootstrap
    95 % CI (``E2E_lo``/``E2E_hi``), the oracle bound as a line, the y-axis from 0, the CI method in the
    caption."""
    import matplotlib.pyplot as plt

    from experiments.publish.figures import WIDTH_IN, error_bars, save_figure

    validators = list(dict.fromkeys(frame["validator"]))
    names = list(dict.fromkeys(frame["selector"]))
    fig, ax = plt.subplots(figsize=(WIDTH_IN * 0.7, 4.0))
    width = 0.8 / max(1, len(validators))
    for j, v in enumerate(validators):
        part = frame[frame["validator"] == v].set_index("selector")
        shown = part.reindex(names)  # a selector this profile did not rank: no bar, no error bar
        ax.bar(
            [i + j * width for i in range(len(names))],
            [float(y) for y in shown["E2E"]],
            width,
            label=f"validator {v}",
            yerr=error_bars(shown["E2E"], shown["E2E_lo"], shown["E2E_hi"]),
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
    return save_figure(fig, path)
