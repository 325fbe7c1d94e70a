"""CLI: ``medstrat perturb CORRECT OUT [--dataset-dir DIR] [--seed N] [--clean P] [--mix K=W]``.

Writes ``OUT/agent1_data_organization`` (a copy of the correct folder with sampled mistakes) and
``OUT/mistakes.json`` (the labels). ``--list`` prints the catalogue.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from core.cli_errors import CliError, OneLineParser, cli_main, existing_dir
from testbed.perturb.apply import AGENT_DIR, MixConfig, perturb_folder
from testbed.perturb.mistake import MISTAKES


def _dataset_dir(correct: Path) -> Path:
    # <dataset>/VLM/<run>/agent1_data_organization: the raw data sits three levels up.
    parents = correct.resolve().parents
    if len(parents) > 2 and parents[1].name == "VLM":
        return parents[2]
    return correct


@cli_main("medstrat perturb")
def main(argv: list[str] | None = None) -> int:
    """Parse arguments, write the perturbed copy and print what was applied.

    Args:
        argv: Arguments (default: ``sys.argv[1:]``).

    Returns:
        The process exit code (0, or 2 for bad input; docs/cli.md).
    """
    parser = OneLineParser(prog="medstrat perturb", description=__doc__)
    parser.add_argument(
        "correct", nargs="?", type=Path, help="a correct agent1_data_organization (or its run)"
    )
    parser.add_argument("out", nargs="?", type=Path, help="the candidate folder to write")
    parser.add_argument("--dataset-dir", type=Path, help="the dataset root (default: inferred from CORRECT)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--key", default="", help="extra seed material (default: the dataset folder name)")
    parser.add_argument("--clean", type=float, default=0.45, help="probability that a sample stays clean")
    parser.add_argument(
        "--mix", nargs="+", default=[], metavar="NAME=WEIGHT", help="weights by type/category"
    )
    parser.add_argument("--list", action="store_true", help="print the catalogue and exit")
    args = parser.parse_args(argv)
    if args.list:
        for m in MISTAKES.values():
            evidence = "raw evidence" if m.raw_evidence else "no raw evidence"
            print(f"{m.name:24s} {m.category:20s} {evidence:16s} {m.description}")
        return 0
    if args.correct is None or args.out is None:
        parser.error("CORRECT and OUT are required")
    correct = args.correct / AGENT_DIR if (args.correct / AGENT_DIR).is_dir() else args.correct
    if not (correct / "standardized_annotations").is_dir():
        raise CliError(f"CORRECT {correct}: holds no standardized_annotations/")
    bad = [item for item in args.mix if "=" not in item]
    if bad:
        raise CliError(f"--mix takes NAME=WEIGHT pairs, got {' '.join(bad)}")
    try:
        mix = {k: float(v) for k, v in (item.split("=", 1) for item in args.mix)}
        config = MixConfig(clean=args.clean, mix=mix)
    except ValueError as exc:
        raise CliError(f"--mix/--clean: {exc}") from exc
    target = args.out / AGENT_DIR
    if target.exists() and not (args.out / "mistakes.json").is_file():
        # The copy replaces OUT/agent1_data_organization whole; only an earlier perturbation (it wrote
        # mistakes.json beside it) is ours to replace, never a run's output or CORRECT itself.
        raise CliError(
            f"OUT {args.out}: holds an {AGENT_DIR}/ this command did not write (a run's output?); pick an "
            "empty OUT"
        )
    root = existing_dir("--dataset-dir", args.dataset_dir) if args.dataset_dir else _dataset_dir(correct)
    labels = perturb_folder(correct, args.out, root, seed=args.seed, config=config, key=args.key or root.name)
    counts = Counter(a.name for applied in labels.values() for a in applied)
    dirty = sum(1 for applied in labels.values() if applied)
    summary = ", ".join(f"{k} {n}" for k, n in sorted(counts.items())) or "none"
    print(f"{args.out}: {len(labels)} samples, {dirty} with mistakes ({summary})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
