"""Command line: validate a candidate folder, or export the schema.

Usage:
    medstrat validate CANDIDATE_DIR --dataset-dir DIR [--profile evidence|mdsbench|path.yaml] [--json]
    medstrat validate schema            # JSON Schema {"annotation": ..., "data_meta": ...}
    medstrat validate docs              # the Markdown of docs/schema.md

The terminal output fits 120 columns: one line per sample (its total and the checks it fails); ``--json``
prints every check's score. Exit codes: docs/cli.md (0 ok, 2 bad input).
"""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from collections.abc import Sequence
from typing import Any

from benchmark.errors import BenchmarkError
from benchmark.layout import OutputLayout
from core.cli_errors import CliError, OneLineParser, cli_main, existing_dir
from validator.registry import ProfileError

WIDTH = 120
"""Terminal output width the table keeps to."""


def _failed_line(head: str, checks: dict[str, float]) -> list[str]:
    failed = [f"{name}={score:.2f}" for name, score in checks.items() if score < 1.0]
    text = head + ("failed: " + ", ".join(failed) if failed else "all checks pass")
    indent = " " * len(head)
    return textwrap.wrap(text, WIDTH, subsequent_indent=indent, break_on_hyphens=False)


def _table(data: dict[str, Any]) -> str:
    """Per-sample totals and the failed checks (score below 1), wrapped at `WIDTH` columns."""
    samples: dict[str, Any] = data["samples"]
    lines = textwrap.wrap(f"profile: {data['profile']}   candidate: {data['candidate_dir']}", WIDTH)
    lines.append("index  total   (check=score for each check below 1.00; every score with --json)")
    for index, s in samples.items():
        lines += _failed_line(f"{index:>5}  {s['total']:.4f}  ", s["checks"])
    meta = data["data_meta"]
    lines += _failed_line(f"data_meta {meta['total']:.4f}  ", meta["checks"])
    if samples:
        mean = sum(s["total"] for s in samples.values()) / len(samples)
        lines.append(f"{len(samples)} samples, mean total {mean:.4f}")
    return "\n".join(lines)


def _parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="medstrat validate", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("candidate_dir", help="an agent1_data_organization folder (or its parent)")
    parser.add_argument(
        "--dataset-dir", required=True, help="the dataset folder (holds data/ and VLM/random.txt)"
    )
    parser.add_argument("--profile", default="evidence", help="evidence (default), mdsbench, or a YAML path")
    parser.add_argument("--json", action="store_true", help="print the report as JSON (every check)")
    parser.add_argument("--checklist", action="store_true", help="also list failed high-risk checks")
    return parser


@cli_main("medstrat validate", expected=(ProfileError, BenchmarkError))
def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the process exit code (0 ok, 2 bad input; docs/cli.md)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["schema"]:
        from validator.schema import json_schema

        print(json.dumps(json_schema(), indent=2))
        return 0
    if args[:1] == ["docs"]:
        from validator.docs import schema_markdown

        sys.stdout.write(schema_markdown())
        return 0
    ns = _parser().parse_args(args)
    dataset = existing_dir("--dataset-dir", ns.dataset_dir)
    if not (dataset / "VLM" / "random.txt").is_file():
        raise CliError(f"--dataset-dir {ns.dataset_dir}: expected a dataset folder holding VLM/random.txt")
    existing_dir("CANDIDATE_DIR", ns.candidate_dir)
    OutputLayout.resolve(ns.candidate_dir)  # a wrong folder is an error, not a table of zeros
    from validator.checklist import checklist
    from validator.validate import validate

    report = validate(ns.candidate_dir, dataset, profile=ns.profile)
    if not report.samples:
        raise CliError(f"--dataset-dir {ns.dataset_dir}: its manifest lists no samples")
    data = report.to_json()
    print(json.dumps(data, indent=2) if ns.json else _table(data))
    if ns.checklist:
        for item in checklist(report):
            where = f"index {item.index}" if item.index is not None else "data_meta"
            line = f"- [{where}] {item.check}: {item.message}  (fields: {', '.join(item.editable_fields)})"
            print("\n".join(textwrap.wrap(line, WIDTH, subsequent_indent="  ", break_on_hyphens=False)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
