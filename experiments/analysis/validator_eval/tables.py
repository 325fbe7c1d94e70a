"""The validator meta-evaluation as tables and figures: per check and for the total score, per profile."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from experiments.analysis.validator_eval.collect import Evidence
from experiments.analysis.validator_eval.fit import FitResult
from experiments.analysis.validator_eval.measures import (
    auroc,
    calibration,
    failure_precision_recall,
    spearman,
)

__all__ = ["check_frame", "figure", "fit_frame", "total_frame"]

_PASSED = 1.0 - 1e-9  # CheckResult.passed's tolerance


def check_frame(evidence: Evidence, label: str) -> pd.DataFrame:
    """One row per check of ``label``: AUROC of its score for official E2E pass, precision/recall of its
    failures for E2E failures, coverage (share of samples where it did not abstain), weight.

    Args:
        evidence: The collected evidence.
        label: The profile label.

    Returns:
        The frame, sorted by AUROC (best first; NaN last).
    """
    rows = [r for r in evidence.rows if label in r.scores]
    weights = {spec.name: w for spec, w in evidence.profiles[label].checks}
    truth = [r.e2e for r in rows]
    out: list[dict[str, Any]] = []
    for name, weight in weights.items():
        scores = [r.scores[label].get(name, 1.0) for r in rows]
        abstain = [name in r.abstain[label] for r in rows]
        failed = [s < _PASSED and not a for s, a in zip(scores, abstain, strict=True)]
        precision, recall, fails = failure_precision_recall(failed, [not t for t in truth])
        out.append(
            {
                "check": name,
                "weight": weight,
                "AUROC": auroc(scores, truth),
                "fail_precision": precision,
                "fail_recall": recall,
                "failures": fails,
                "coverage": 1.0 - sum(abstain) / len(abstain) if abstain else float("nan"),
            }
        )
    frame = pd.DataFrame(out)
    return frame.sort_values("AUROC", ascending=False, na_position="last").reset_index(drop=True)


def total_frame(evidence: Evidence) -> pd.DataFrame:
    """Per profile, the total score: AUROC for E2E pass, ECE, Spearman rho with the strict content score,
    and the samples and E2E-passing share they cover."""
    out = []
    for label in evidence.profiles:
        rows = [r for r in evidence.rows if label in r.totals]
        totals = [r.totals[label] for r in rows]
        truth = [r.e2e for r in rows]
        cal = calibration(totals, truth)
        out.append(
            {
                "validator": label,
                "samples": len(rows),
                "E2E_pass_share": sum(truth) / len(truth) if truth else float("nan"),
                "AUROC": auroc(totals, truth),
                "ECE": cal.ece,
                "spearman_strict_content": spearman(totals, [r.content for r in rows]),
            }
        )
    return pd.DataFrame(out)


def _macro(values: dict[str, float]) -> float:
    return sum(values.values()) / len(values) if values else float("nan")


def fit_frame(result: FitResult) -> pd.DataFrame:
    """Selection E2E (macro over datasets): the fitted weights held out per dataset, beside the hand-set
    profiles on the same candidates."""
    rows = [
        {
            "validator": f"{result.base} fitted (leave-one-dataset-out)",
            "selection_E2E": _macro(result.held_out),
            "datasets": len(result.held_out),
        }
    ]
    rows += [
        {"validator": f"{label} (hand-set)", "selection_E2E": _macro(v), "datasets": len(v)}
        for label, v in result.hand_set.items()
    ]
    return pd.DataFrame(rows)


def figure(evidence: Evidence, label: str, checks: pd.DataFrame, path: Path) -> Path:
    """Two panels: per-check AUROC (coverage as the bar colour) and the total's reliability curve."""
    import matplotlib.pyplot as plt

    from experiments.publish.figures import WIDTH_IN, save_figure

    rows = [r for r in evidence.rows if label in r.totals]
    cal = calibration([r.totals[label] for r in rows], [r.e2e for r in rows])
    fig, (left, right) = plt.subplots(
        1, 2, figsize=(WIDTH_IN, max(3.2, 0.18 * len(checks) + 1.2)), gridspec_kw={"width_ratios": [3, 2]}
    )
    shown = checks.iloc[::-1]
    colours = plt.get_cmap("viridis")([float(c) if c == c else 0.0 for c in shown["coverage"]])
    left.barh(shown["check"], shown["AUROC"].fillna(0.5), color=colours)
    left.axvline(0.5, color="black", linewidth=0.8, linestyle=":")
    left.set_xlim(0.0, 1.0)
    left.set_xlabel("AUROC for official E2E pass (colour: coverage, yellow = never abstains)")
    left.tick_params(axis="y", labelsize="x-small")
    centres = [(a + b) / 2 for a, b in zip(cal.edges[:-1], cal.edges[1:], strict=True)]
    right.plot([0, 1], [0, 1], color="grey", linewidth=0.8, linestyle="--")
    xs = [m if m == m else c for m, c in zip(cal.mean_score, centres, strict=True)]
    keep = [i for i, n in enumerate(cal.counts) if n]
    right.plot([xs[i] for i in keep], [cal.pass_rate[i] for i in keep], marker="o")
    for i in keep:
        right.annotate(
            str(cal.counts[i]),
            (xs[i], cal.pass_rate[i]),
            fontsize="xx-small",
            xytext=(2, -8),
            textcoords="offset points",
        )
    right.set_xlim(0, 1)
    right.set_ylim(-0.02, 1.02)
    right.set_xlabel("validator total")
    right.set_ylabel("E2E pass rate (n per bin)")
    right.set_title(f"calibration, ECE {cal.ece:.3f}", fontsize="small")
    fig.suptitle(f"Validator {label} against the ground truth", fontsize="medium")
    fig.tight_layout()
    return save_figure(fig, path)
