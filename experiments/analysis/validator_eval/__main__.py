"""``medstrat validator-eval RUN [RUN ...]``: the validator against the truth, per profile."""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from core.atomic import atomic_write_text
from core.cli_errors import CliError, OneLineParser, cli_main, existing_dir
from experiments.analysis.validator_eval.collect import collect
from experiments.analysis.validator_eval.fit import leave_one_dataset_out, write_fitted
from experiments.analysis.validator_eval.tables import check_frame, figure, fit_frame, total_frame
from experiments.publish.tables import markdown_page, write_csv
from experiments.selection.reselect import ReselectError
from validator.registry import ProfileError

if TYPE_CHECKING:
    import pandas as pd

PROG = "medstrat validator-eval"


def _slug(label: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in label).strip("_")


@cli_main(PROG)
def main(argv: Sequence[str] | None = None) -> int:
    """CLI; returns the exit code (0 success, 2 bad input; ``docs/cli.md``)."""
    parser = OneLineParser(prog=PROG, description="The validator against the ground truth, check by check.")
    parser.add_argument("runs", nargs="+", type=Path, help="finished S3/S4 run folders (pooled)")
    parser.add_argument(
        "--validators", default="evidence,mdsbench", help="comma-separated profiles or YAML paths"
    )
    parser.add_argument(
        "--fit",
        nargs="?",
        const="",
        default=None,
        metavar="BASE",
        help="learn non-negative weights for BASE's checks (default: the first --validators profile)",
    )
    parser.add_argument(
        "--out", type=Path, default=None, help="output folder (default: <first RUN>/validator_eval)"
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    runs = [existing_dir("RUN", r) for r in args.runs]
    validators = [v for v in args.validators.split(",") if v]
    if not validators:
        raise CliError("--validators names no profile")
    start = time.perf_counter()
    try:
        evidence = collect(runs, validators)
    except (ReselectError, ProfileError, ImportError, ValueError) as exc:
        raise CliError(str(exc)) from exc
    if not evidence.rows:
        raise CliError("the runs hold no sample to evaluate")
    out = args.out or runs[0] / "validator_eval"
    out.mkdir(parents=True, exist_ok=True)
    labels = list(evidence.profiles)
    totals = total_frame(evidence)
    written = [out / "totals.csv"]
    write_csv(written[0], totals)
    positives = sum(r.e2e for r in evidence.rows)
    parts: list[str | pd.DataFrame] = [
        "# The validator against the ground truth (stored candidates; official E2E, strict content score)",
        f"{len(evidence.rows)} candidate samples of {len(evidence.stored)} stored datasets, {positives} pass "
        f"official E2E; {evidence.validations} validations run (the rest read from stored reports).",
        "## Total score per profile (AUROC for E2E pass; ECE of the total read as a pass probability, "
        "10 bins; Spearman rho with the strict content score)",
        totals,
    ]
    for label in labels:
        checks = check_frame(evidence, label)
        slug = _slug(label)
        write_csv(out / f"checks_{slug}.csv", checks)
        written += [out / f"checks_{slug}.csv", figure(evidence, label, checks, out / f"checks_{slug}.png")]
        parts += [
            f"## Checks of {label} (AUROC of the check's score for E2E pass; precision/recall of its "
            "failures for E2E failures; coverage = share of samples where it did not abstain)",
            checks,
        ]
    if args.fit is not None:
        base = args.fit or labels[0]
        match = [lab for lab in labels if lab == base or lab.split(" ")[0] == Path(base).stem]
        if not match:
            raise CliError(f"--fit {base}: not among --validators ({', '.join(labels)})")
        result = leave_one_dataset_out(evidence, match[0])
        fitted = write_fitted(result, evidence.profiles[match[0]], runs, out)
        table = fit_frame(result)
        write_csv(out / "fit.csv", table)
        written += [out / "fit.csv", fitted]
        parts += [
            f"## Fitted weights for {match[0]}: held-out selection E2E (validator_max; "
            "leave-one-dataset-out, macro over datasets) beside the hand-set profiles on the same candidates",
            table,
            f"Fitted on every dataset ({result.pairs} within-sample pass/fail pairs): `{fitted}` "
            f"(use `validator={fitted}`).",
        ]
    parts.append(f"{time.perf_counter() - start:.1f} s.")
    atomic_write_text(out / "validator_eval.md", markdown_page(parts))
    written.insert(0, out / "validator_eval.md")
    print((out / "validator_eval.md").read_text(encoding="utf-8"))
    print("wrote " + ", ".join(str(p) for p in written), file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
