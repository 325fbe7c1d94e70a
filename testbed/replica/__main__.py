"""CLI: ``medstrat replica OUT_DIR [--source DIR] [--only NAME ...] [--scale F] [--seed N]``."""

from __future__ import annotations

from core.cli_errors import CliError, OneLineParser, cli_main
from testbed.replica.build import build_replica
from testbed.replica.source import ReplicaSourceError


@cli_main("medstrat replica")
def main(argv: list[str] | None = None) -> int:
    """Build the replica suite into OUT_DIR and print a one-line summary.

    Args:
        argv: Arguments (default: ``sys.argv[1:]``).

    Returns:
        The exit code (0 ok, 2 missing or malformed material; docs/cli.md).
    """
    parser = OneLineParser(prog="medstrat replica", description=__doc__)
    parser.add_argument("out", help="suite root to write")
    parser.add_argument(
        "--source",
        help="the replica material (default: $MEDSTRAT_SHARED/mdsbench/replica "
        "or ../shared/mdsbench/replica beside the checkout)",
    )
    parser.add_argument("--only", nargs="+", metavar="NAME", help="build only these dataset folders")
    parser.add_argument("--scale", type=float, default=1.0, help="linear pixel scale (tests shrink with it)")
    parser.add_argument("--seed", type=int, default=0, help="content seed (same seed => same bytes)")
    args = parser.parse_args(argv)
    if not 0 < args.scale <= 1:
        raise CliError(f"--scale must be in (0, 1], got {args.scale}")
    try:
        built = build_replica(args.out, args.source, only=args.only, scale=args.scale, seed=args.seed)
    except ReplicaSourceError as exc:
        raise CliError(str(exc)) from None
    print(built.summary())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
