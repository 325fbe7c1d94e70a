"""Command line: score one dataset (like the reference evaluator) or print the macro table over a root.

python -m benchmark.score --dataset-dir DIR [--ground-truth FILE] [--models M ...] [--output FILE]
                          [--profile official|strict] [--no-print]
python -m benchmark.score --root ROOT [--models M ...] [--profile ...] [--format md|csv|tex]
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence

from benchmark.score.analysis import macro_table, render
from benchmark.score.constants import METRIC_NAMES
from benchmark.score.evaluate import default_output, score_dataset, score_root, write_results
from benchmark.score.profiles import PROFILES


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m benchmark.score", description="MDS-Bench scorer: the eleven metrics."
    )
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
    p.add_argument("--format", choices=["md", "csv", "tex"], default="md", help="table format for --root")
    p.add_argument("--workers", type=int, default=None, help="processes for --root (default: CPU count)")
    p.add_argument("--no-print", action="store_true", help="do not print the per-model table (--dataset-dir)")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI.

    Args:
        argv: Arguments (default: ``sys.argv[1:]``).

    Returns:
        Process exit code (0 on success, 2 on a usage error).
    """
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    if args.dataset_dir:
        results = score_dataset(
            args.dataset_dir, ground_truth=args.ground_truth, models=args.models, profile=args.profile
        )
        path = write_results(results, args.output or default_output(args.dataset_dir, args.profile))
        if not args.no_print:
            print(render(macro_table({results["dataset"]: results}, args.models), args.format), end="")
            for model, res in results["models"].items():
                if res.get("error"):
                    print(f"{model}: error: {res['error']}", file=sys.stderr)
            print(f"wrote {path}", file=sys.stderr)
        return 0
    if args.ground_truth or args.output:
        print("--ground-truth and --output apply to --dataset-dir only", file=sys.stderr)
        return 2
    results_by_dataset = score_root(args.root, models=args.models, profile=args.profile, workers=args.workers)
    if not results_by_dataset:
        print(f"no datasets (folders with VLM/random.txt) under {args.root}", file=sys.stderr)
        return 2
    table = macro_table(results_by_dataset, args.models)
    print(render(table, args.format), end="", flush=True)
    print(
        f"{len(results_by_dataset)} datasets, profile {args.profile}; metrics: {', '.join(METRIC_NAMES)}",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    try:
        raise SystemExit(main())
    except BrokenPipeError:  # the reader went away (`... | head`): stop quietly, as Unix tools do
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        raise SystemExit(1) from None
