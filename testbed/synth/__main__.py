"""CLI: ``medstrat synth OUT_DIR [--suite bundled|realfiles|foreign|independent]
[--size small|full] [--seed N] [--samples N] [--oracle RUN] [--only ...]``, or
``medstrat synth OUT_DIR --files N [--samples K]`` for one four-level DICOM tree of N files."""

from __future__ import annotations

import argparse
import importlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from core.cli_errors import CliError, OneLineParser, cli_main, existing_path
from testbed.synth.catalogue import catalogue_markdown, replace_catalogue
from testbed.synth.spec import select_names
from testbed.synth.suite import MAX_SAMPLES, SIZES, dataset_names, generate_suite


@cli_main("medstrat synth")
def main(argv: list[str] | None = None) -> int:
    """Parse arguments, write the suite and print a one-line summary per dataset.

    Args:
        argv: Arguments (default: ``sys.argv[1:]``).

    Returns:
        The process exit code (0 ok, 2 bad input; docs/cli.md).
    """
    parser = OneLineParser(prog="medstrat synth", description=__doc__)
    parser.add_argument("out", nargs="?", help="benchmark root to write")
    parser.add_argument(
        "--suite",
        choices=("bundled", "realfiles", "foreign", "independent"),
        default="bundled",
        help="bundled: synthetic datasets with every trap; realfiles: pydicom's and nibabel's test files; "
        "foreign: scikit-image's and matplotlib's sample pixels in community layouts (nnU-Net, BIDS, DICOM); "
        "independent: nilearn's and scikit-learn's shipped pixels in layouts not tuned on",
    )
    parser.add_argument(
        "--size", choices=sorted(SIZES), default="small", help="10 (small) or 20 (full) samples"
    )
    parser.add_argument(
        "--samples",
        type=int,
        metavar="N",
        help=f"samples per dataset, 1 to {MAX_SAMPLES} (overrides --size; bundled suite only)",
    )
    parser.add_argument("--seed", type=int, default=0, help="suite seed (same seed => byte-identical files)")
    parser.add_argument(
        "--files",
        type=int,
        metavar="N",
        help="instead of a suite, write synth-big-dicom-tree: N small DICOM files in a patient/study/"
        "series/instance tree (--samples manifest lines, default 24; testbed.synth.big_tree)",
    )
    parser.add_argument("--oracle", metavar="RUN", help="also write the perfect prediction as VLM/RUN/")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="restrict to these datasets")
    parser.add_argument("--list", action="store_true", help="print the dataset names and exit")
    parser.add_argument("--catalogue", action="store_true", help="print the catalogue table and exit")
    parser.add_argument(
        "--update-doc", metavar="MD", help="rewrite the catalogue table embedded in MD and exit"
    )
    args = parser.parse_args(argv)
    if args.files is not None:
        return _big_tree(parser, args)
    suite = _bundled_suite(args) if args.suite == "bundled" else _real_suite(args)
    if args.list:
        print("\n".join(suite.names()))
        return 0
    if args.update_doc:
        doc = existing_path("--update-doc", args.update_doc)
        text = doc.read_text(encoding="utf-8")
        doc.write_text(replace_catalogue(text, suite.catalogue(), suite.marker), encoding="utf-8")
        return 0
    if args.catalogue:
        print(suite.catalogue(), end="")
        return 0
    if not args.out:
        parser.error("OUT_DIR is required")
    if args.samples is not None and not 1 <= args.samples <= MAX_SAMPLES:
        raise CliError(f"--samples must be between 1 and {MAX_SAMPLES}, got {args.samples}")
    if args.samples is not None and args.suite != "bundled":
        raise CliError("--samples applies to the bundled suite only (realfiles has fixed files)")
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    start = time.perf_counter()
    try:  # before anything is written: an unknown --only name must not leave an empty OUT behind
        names = select_names(suite.names(), args.only, "dataset")
    except KeyError as exc:
        raise CliError(f"--only: {exc.args[0]}") from None
    kept = results_in_the_way(Path(args.out), names, args.oracle)
    if kept:
        shown = ", ".join(str(p) for p in kept[:3]) + (f" and {len(kept) - 3} more" if len(kept) > 3 else "")
        raise CliError(
            f"{args.out} holds results a regenerated dataset would delete ({shown}); move them out of the "
            "dataset folders or write the suite to another folder"
        )
    lines = suite.build()
    print("\n".join(lines))
    print(f"{len(lines)} datasets written to {args.out} in {time.perf_counter() - start:.1f}s")
    return 0


def results_in_the_way(out: Path, names: list[str], oracle: str | None) -> list[Path]:
    """What a user put into the dataset folders that rebuilding them (a fresh folder each) would delete.

    A dataset is rebuilt from scratch so its bytes stay reproducible; its ``VLM/`` may meanwhile hold runs
    written in the benchmark layout (``VLM/<run>/agent1_data_organization``) and the scorer's
    ``eval_results*.json``. The ``--oracle`` run is the generator's own.

    Args:
        out: The suite root.
        names: The datasets about to be built.
        oracle: The ``--oracle`` run name, if any.

    Returns:
        The runs and score files found, sorted.
    """
    found: list[Path] = []
    for name in names:
        vlm = out / name / "VLM"
        if not vlm.is_dir():
            continue
        for entry in sorted(vlm.iterdir()):
            is_run = entry.name != oracle and (entry / "agent1_data_organization").is_dir()
            if is_run or entry.name.startswith("eval_results"):
                found.append(entry)
    return found


def _big_tree(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    """``--files N``: one dataset of real size (a suite's options do not apply)."""
    from testbed.synth.big_tree import BIG_TREE, DEFAULT_SAMPLES, build_big_tree

    if args.suite != "bundled" or args.only or args.oracle or args.list or args.catalogue or args.update_doc:
        raise CliError("--files writes one dataset; it takes only OUT_DIR, --samples and --seed")
    if not args.out:
        parser.error("OUT_DIR is required")
    samples = DEFAULT_SAMPLES if args.samples is None else args.samples
    try:
        built = build_big_tree(args.out, files=args.files, samples=samples, seed=args.seed)
    except ValueError as exc:
        raise CliError(str(exc)) from None
    print(
        f"{BIG_TREE.name}: {args.files} DICOM files, {len(built.samples)} samples in {built.root} "
        f"({built.seconds:.1f}s)"
    )
    return 0


@dataclass(frozen=True)
class _Suite:
    """What the CLI needs from a suite: names, catalogue table (and its doc marker), and a build that returns
    one summary line per dataset."""

    names: Callable[[], list[str]]
    catalogue: Callable[[], str]
    marker: str
    build: Callable[[], list[str]]


def _bundled_suite(args: argparse.Namespace) -> _Suite:
    def build() -> list[str]:
        built = generate_suite(
            args.out, size=args.size, seed=args.seed, oracle=args.oracle, only=args.only, samples=args.samples
        )
        return [f"{ds.spec.name:34s} {len(ds.samples):3d} samples  {ds.seconds:5.2f}s" for ds in built]

    return _Suite(dataset_names, catalogue_markdown, "catalogue", build)


# ``--suite`` -> the module of a suite of real files, the suite in it and its catalogue marker.
_REAL_SUITES = {
    "realfiles": ("testbed.realfiles.suite", "REALFILES", "REALFILES_MARKER"),
    "foreign": ("testbed.foreign.suite", "FOREIGN", "FOREIGN_MARKER"),
    "independent": ("testbed.independent.suite", "INDEPENDENT", "INDEPENDENT_MARKER"),
}


def _real_suite(args: argparse.Namespace) -> _Suite:
    """``--suite realfiles|foreign|independent`` (``--size``/``--seed`` do not apply)."""
    module_name, suite_name, marker_name = _REAL_SUITES[args.suite]
    module = importlib.import_module(module_name)
    suite = getattr(module, suite_name)

    def build() -> list[str]:
        built = suite.build(args.out, only=args.only, oracle=args.oracle)
        return [
            f"{ds.spec.name:34s} {len(ds.samples):3d} samples  "
            + (f"{len(ds.failures):2d} expected failures  " if suite.expects_failures else "")
            + f"{ds.seconds:5.2f}s"
            for ds in built
        ]

    return _Suite(suite.names, suite.catalogue, getattr(module, marker_name), build)


if __name__ == "__main__":
    raise SystemExit(main())
