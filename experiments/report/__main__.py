"""``medstrat report RUN_DIR [--out DIR]``: write ``report.html`` for a run folder, or for a
sweep folder (``multirun/...``: the ablation, figures, links to each job's report, samples side by side)."""

from __future__ import annotations

import logging
from pathlib import Path

from core.cli_errors import CliError, OneLineParser, cli_main, existing_dir
from experiments.report.build import build_report


@cli_main("medstrat report")
def main(argv: list[str] | None = None) -> int:
    """Parse arguments, build the report and print its path.

    Args:
        argv: Command-line arguments (default: ``sys.argv[1:]``).

    Returns:
        The exit code: 0 on success, 2 when the run folder does not exist.
    """
    parser = OneLineParser(prog="medstrat report", description=__doc__)
    parser.add_argument("run_dir", help="a run folder written by python -m experiments")
    parser.add_argument(
        "--out", default=None, help="write report.html and assets/ here (default: the run folder)"
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    from experiments.analysis.sweep_report import build_sweep_report, is_sweep

    run_dir = existing_dir("RUN_DIR", args.run_dir)
    if is_sweep(run_dir):
        if args.out is not None:
            raise CliError("--out is for run folders; a sweep report is written into the sweep folder")
        path = build_sweep_report(args.run_dir)
    else:
        from experiments.run.folder import held_run

        out = Path(args.out) if args.out is not None else None
        if out is not None and out.resolve() != run_dir.resolve() and held_run(out) is not None:
            # Its own report.html and assets/ would be replaced by another run's.
            raise CliError(f"--out {out} is another run's folder; pick a folder of its own")
        path = build_report(args.run_dir, args.out)
    print(path.resolve().as_uri())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
