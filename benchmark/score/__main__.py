"""Command line: score one dataset (like the reference evaluator) or print the macro table over a root.

medstrat score --dataset-dir DIR [--ground-truth FILE] [--models M ...] [--output FILE]
                          [--profile official|strict] [--metric NAME ...] [--no-print]
medstrat score --root ROOT [--models M ...] [--profile ...] [--metric NAME ...]
                          [--format md|csv|tex]
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from benchmark.errors import BenchmarkError
from benchmark.layout import AGENT_DIR
from benchmark.score.profiles import PROFILES
from core.atomic import read_json_or_none
from core.cli_errors import CliError, OneLineParser, cli_main, existing_dir, existing_path

if TYPE_CHECKING:
    from benchmark.score.profiles import ScoringRules

# The metric modules are imported in `main`, after the arguments are parsed: `--help` and a usage error answer
# at once. The per-dataset path loads neither pandas, nor numpy, nor pydantic (docs/performance.md, Scorer).


def _parser() -> argparse.ArgumentParser:
    p = OneLineParser(prog="medstrat score", description="MDS-Bench scorer: the eleven metrics.")
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--dataset-dir", help="a dataset folder (or its VLM folder): score every model in it")
    where.add_argument(
        "--root", help="a benchmark root: score every dataset under it and print the macro table"
    )
    p.add_argument("--ground-truth", help="GT file (default: first sorted VLM/ground_truth*.json)")
    p.add_argument(
        "--models", nargs="+", help="model folders under VLM/ (default: all with agent1_data_organization)"
    )
    p.add_argument("--output", help="eval_results JSON (default: VLM/eval_results_<profile>.json)")
    p.add_argument("--profile", choices=sorted(PROFILES), default="official")
    p.add_argument(
        "--metric",
        action="append",
        default=[],
        help="a registered metric (entry point medstrat.metrics) written after the eleven; repeatable",
    )
    p.add_argument("--format", choices=["md", "csv", "tex"], default="md", help="table format for --root")
    p.add_argument(
        "--workers",
        type=_positive,
        default=None,
        help="processes (default: CPU count): datasets in parallel with --root, the models of the dataset "
        "with --dataset-dir (forks of this process); 1 = this process only",
    )
    p.add_argument("--no-print", action="store_true", help="do not print the per-model table (--dataset-dir)")
    return p


def _positive(text: str) -> int:
    """A whole number >= 1 (argparse type); anything else is one usage line and exit 2."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}")
    return value


def _check_output(path: Path) -> None:
    """Refuse an ``--output`` that names an existing file other than an earlier eval_results file.

    The file is replaced whole: a mistyped path (a ground-truth file, a run's ``metrics.json``) would be lost.
    """
    if not path.exists():
        return
    doc = read_json_or_none(path)
    if not (isinstance(doc, dict) and isinstance(doc.get("models"), dict) and "dataset" in doc):
        raise CliError(f"--output {path}: exists and is not an eval_results file; name a new file")


def _check_models(wanted: list[str] | None, available: set[str], where: str) -> None:
    """Refuse model names that exist nowhere (a typo must not print an empty table)."""
    if wanted is None:
        if not available:
            raise CliError(f"{where}: no model folders (VLM/<model>/{AGENT_DIR}) to score")
        return
    missing = [m for m in wanted if m not in available]
    if missing:
        valid = ", ".join(sorted(available)) or "none"
        raise CliError(f"--models {' '.join(missing)}: not found under {where}; available: {valid}")


def _rules(profile: str, metrics: list[str]) -> ScoringRules:
    """The scoring rules named by ``--profile``, computing the ``--metric`` ones too (one line if unknown)."""
    from benchmark.score.profiles import ScoringRules

    rules = ScoringRules.named(profile)
    if not metrics:
        return rules
    from benchmark.score.metrics import UnknownNameError, check_names

    try:
        return rules.with_metrics(check_names(metrics))
    except (UnknownNameError, ValueError) as exc:
        raise CliError(f"--metric: {exc}") from None


def _import_table() -> None:
    import benchmark.score.table  # noqa: F401 - loaded for later, when it costs no wall time


@cli_main("medstrat score", expected=(BenchmarkError,))
def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI.

    Args:
        argv: Arguments (default: ``sys.argv[1:]``).

    Returns:
        Process exit code (0 on success, 2 on bad input; see docs/cli.md).
    """
    args = _parser().parse_args(argv)
    from benchmark.score.constants import METRIC_NAMES
    from benchmark.score.evaluate import dataset_root_of, default_models, score_dataset_to_file

    rules = _rules(args.profile, args.metric)

    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    if args.dataset_dir:
        root = dataset_root_of(existing_dir("--dataset-dir", args.dataset_dir))
        if not (root / "VLM").is_dir():
            raise CliError(f"--dataset-dir {args.dataset_dir}: expected a dataset folder holding VLM/")
        if args.ground_truth:
            existing_path("--ground-truth", args.ground_truth)
        _check_models(args.models, set(default_models(root)), str(root))
        if args.output:
            _check_output(Path(args.output))
        # Atomic, not fsync'ed: a report that no rerun trusts (core.atomic says when that is enough).
        results, path = score_dataset_to_file(
            root,
            args.output or None,
            ground_truth=args.ground_truth,
            models=args.models,
            profile=rules,
            workers=args.workers,
            durable=False,
            meanwhile=_import_table,  # while the forks score their last models
        )
        from benchmark.score.table import macro_table, render

        if not args.no_print:
            print(render(macro_table({results["dataset"]: results}, args.models), args.format), end="")
            for model, res in results["models"].items():
                if res.get("error"):
                    print(f"{model}: error: {res['error']}", file=sys.stderr)
            print(f"wrote {path}", file=sys.stderr)
        return 0
    if args.ground_truth or args.output:
        raise CliError("--ground-truth and --output apply to --dataset-dir only")
    from benchmark.discover import discover
    from benchmark.score.evaluate import score_root
    from benchmark.score.table import macro_table, render

    root = existing_dir("--root", args.root)
    datasets = discover(root)
    if not datasets:
        raise CliError(f"--root {args.root}: no datasets (folders holding VLM/random.txt) under it")
    _check_models(args.models, {m for d in datasets for m in default_models(d.root)}, str(root))
    results_by_dataset = score_root(root, models=args.models, profile=rules, workers=args.workers)
    table = macro_table(results_by_dataset, args.models)
    print(render(table, args.format), end="", flush=True)
    print(
        f"{len(results_by_dataset)} datasets, profile {args.profile}; metrics: {', '.join(METRIC_NAMES)}",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
