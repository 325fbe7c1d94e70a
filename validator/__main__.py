"""Command line: validate a candidate folder, or export the schema.

Usage:
    python -m validator CANDIDATE_DIR --dataset-dir DIR [--profile evidence|mdsbench|path.yaml] [--json]
    python -m validator schema            # JSON Schema {"annotation": ..., "data_meta": ...}
    python -m validator docs              # the Markdown of docs/schema.md
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence

from validator.registry import ProfileError


def _table(data: dict[str, object]) -> str:
    samples = data["samples"]
    assert isinstance(samples, dict)
    names: list[str] = []
    for s in samples.values():
        names += [n for n in s["checks"] if n not in names]
    short = [n[:12] for n in names]
    lines = [
        f"profile: {data['profile']}   candidate: {data['candidate_dir']}",
        "index  total   " + " ".join(f"{n:>12}" for n in short),
    ]
    for index, s in samples.items():
        lines.append(
            f"{index:>5}  {s['total']:.4f}  "
            + " ".join(f"{s['checks'].get(n, float('nan')):>12.3f}" for n in names)
        )
    meta = data["data_meta"]
    assert isinstance(meta, dict)
    lines.append(
        f"data_meta total {meta['total']:.4f}: "
        + ", ".join(f"{k}={v:.2f}" for k, v in meta["checks"].items())
    )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the process exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["schema"]:
        from validator.schema import json_schema

        print(json.dumps(json_schema(), indent=2))
        return 0
    if args[:1] == ["docs"]:
        from validator.docs import schema_markdown

        sys.stdout.write(schema_markdown())
        return 0
    parser = argparse.ArgumentParser(
        prog="python -m validator", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("candidate_dir", help="an agent1_data_organization folder (or its parent)")
    parser.add_argument(
        "--dataset-dir", required=True, help="the dataset folder (holds data/ and VLM/random.txt)"
    )
    parser.add_argument("--profile", default="evidence", help="evidence (default), mdsbench, or a YAML path")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--checklist", action="store_true", help="also list failed high-risk checks")
    ns = parser.parse_args(args)
    from validator.checklist import checklist
    from validator.validate import validate

    try:
        report = validate(ns.candidate_dir, ns.dataset_dir, profile=ns.profile)
    except ProfileError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    data = report.to_json()
    print(json.dumps(data, indent=2) if ns.json else _table(data))
    if ns.checklist:
        for item in checklist(report):
            where = f"index {item.index}" if item.index is not None else "data_meta"
            print(f"- [{where}] {item.check}: {item.message}  (fields: {', '.join(item.editable_fields)})")
    return 0


if __name__ == "__main__":
    try:
        raise SystemExit(main())
    except BrokenPipeError:  # the reader went away (`... | head`): stop quietly, as Unix tools do
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        raise SystemExit(1) from None
