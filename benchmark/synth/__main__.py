"""CLI: ``python -m benchmark.synth OUT_DIR [--size small|full] [--seed N] [--oracle RUN] [--only ...]``."""

from __future__ import annotations

import logging
import time

from benchmark.synth.catalogue import catalogue_markdown, replace_catalogue
from benchmark.synth.suite import SIZES, dataset_names, generate_suite
from medio.cli_errors import CliError, OneLineParser, cli_main, existing_path


@cli_main("python -m benchmark.synth")
def main(argv: list[str] | None = None) -> int:
    """Parse arguments, write the suite and print a one-line summary per dataset.

    Args:
        argv: Arguments (default: ``sys.argv[1:]``).

    Returns:
        The process exit code (0 ok, 2 bad input; docs/cli.md).
    """
    parser = OneLineParser(prog="python -m benchmark.synth", description=__doc__)
    parser.add_argument("out", nargs="?", help="benchmark root to write")
    parser.add_argument(
        "--size", choices=sorted(SIZES), default="small", help="10 (small) or 20 (full) samples"
    )
    parser.add_argument("--seed", type=int, default=0, help="suite seed (same seed => byte-identical files)")
    parser.add_argument("--oracle", metavar="RUN", help="also write the perfect prediction as VLM/RUN/")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="restrict to these datasets")
    parser.add_argument("--list", action="store_true", help="print the dataset names and exit")
    parser.add_argument("--catalogue", action="store_true", help="print the catalogue table and exit")
    parser.add_argument(
        "--update-doc", metavar="MD", help="rewrite the catalogue table embedded in MD and exit"
    )
    args = parser.parse_args(argv)
    if args.list:
        print("\n".join(dataset_names()))
        return 0
    if args.update_doc:
        doc = existing_path("--update-doc", args.update_doc)
        doc.write_text(replace_catalogue(doc.read_text(encoding="utf-8")), encoding="utf-8")
        return 0
    if args.catalogue:
        print(catalogue_markdown(), end="")
        return 0
    if not args.out:
        parser.error("OUT_DIR is required")
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    start = time.perf_counter()
    if args.only:
        unknown = sorted(set(args.only) - set(dataset_names()))
        if unknown:
            valid = ", ".join(dataset_names())
            raise CliError(f"--only {' '.join(unknown)}: no such dataset; valid: {valid}")
    built = generate_suite(args.out, size=args.size, seed=args.seed, oracle=args.oracle, only=args.only)
    for ds in built:
        print(f"{ds.spec.name:34s} {len(ds.samples):3d} samples  {ds.seconds:5.2f}s")
    print(f"{len(built)} datasets written to {args.out} in {time.perf_counter() - start:.1f}s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
