"""Digest of what a checkout computes: a fixed-seed ablation, a reselect and the conformance scoring.

A structural refactor must not change a single output byte. This script runs, on the checkout it is given,
a small fixed-seed ablation sweep (S0, S3, S4 and the paper's S3/S4 procedure with the `rules` agent on a few
bundled datasets), a reselect of the S3 run with another selector, and the scorer on the shared conformance
vectors; it then hashes every output file after removing what legitimately differs between two runs
(timestamps, wall times, absolute paths, Hydra's own bookkeeping). Run it on two checkouts and compare the
digests:

    python perf/structure_identity.py /tmp/base --out /tmp/id-base
    python perf/structure_identity.py /work/wt/s5-structure --out /tmp/id-branch

It prints one line per output group and a final ``digest <sha256>``; ``--list`` prints the per-file hashes.

A candidate's stored validator reports (``candidates/*/reports/<code fingerprint>.json``) are compared by
their check results: their name, ``fingerprint`` and ``candidate`` (file sizes and mtimes) are stamps that
change with every edit of the validator's code and every rerun.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

# A few datasets covering the three task types and several formats: enough to exercise every strategy path,
# small enough to run in a minute or two.
DATASETS = "[synth-dermoscopy-jpg,synth-chest-xray-dicom,synth-brain-mr-nifti,synth-polyp-coco-png]"
SWEEP = "s0,s3,s4"
# The paper's procedure: a flag of S3/S4 before issue 22, strategies of their own after (the name
# pinned to the old label so that only the procedure is compared).
NEW_PAPER_RUNS = {
    "s3_paper": ["strategy=s3_paper", "strategy.name=s3"],
    "s4_paper": ["strategy=s4_paper", "strategy.name=s4"],
}
OLD_PAPER_RUNS = {
    "s3_paper": ["strategy=s3", "strategy.profile=paper"],
    "s4_paper": ["strategy=s4", "strategy.profile=paper"],
}
# Keys whose values are wall-clock facts or machine paths, not results.
VOLATILE_KEY = re.compile(
    r"(time|_s$|seconds|elapsed|duration|wall|started|finished|timestamp|date|host|pid|cwd|dir$|path$|root$"
    r"|python|version|cpu|rss|memory|processes|workers|^config$|^t$)",
    re.I,
)
# Files that record the run itself (logs, Hydra's copy of the command line, the HTML page) or echo its input
# (the composed config, the validator profile written from it), not results.
SKIPPED = re.compile(
    r"(\.log$|/\.hydra/|report\.html$|\.png$|progress|multirun\.yaml$|\.lock$|\.sqlite|/config\.json$|/\.validator/)"
)


# A candidate's stored validator report (validator/report_store.py) is named by a hash of the check code and
# records the candidate folder's signature (file sizes and modification times): both change with any edit of
# the validator's source or any rerun, whatever the results. Its checks' results are compared, not those keys.
REPORT_STORE = re.compile(r"/reports/[0-9a-f]+\.json$")
REPORT_STAMPS = ("fingerprint", "candidate")


def _scrub(value: Any, roots: list[str]) -> Any:
    if isinstance(value, dict):
        return {
            k: ("<volatile>" if VOLATILE_KEY.search(str(k)) else _scrub(v, roots)) for k, v in value.items()
        }
    if isinstance(value, list):
        return [_scrub(v, roots) for v in value]
    if isinstance(value, str):
        for root in roots:
            value = value.replace(root, "<root>")
        return value
    return value


def _blank_wall_columns(text: str) -> str:
    """Tables (csv, md, tex) with their wall-clock column blanked: the one column that is a timing."""
    out: list[str] = []
    wall: dict[str, int] = {}
    for line in text.splitlines():
        if not line.strip():
            wall.clear()  # a blank line ends a table
        for sep in (",", "|", "&"):
            cells = line.split(sep)
            names = [c.strip().replace("\\_", "_") for c in cells]
            if "wall_s" in names:
                wall[sep] = names.index("wall_s")
            elif sep in wall and len(cells) > wall[sep] and line.count(sep) >= wall[sep]:
                cells[wall[sep]] = "<wall>"
                line = sep.join(cells)
        out.append(line)
    return "\n".join(out)


def _normalised(path: Path, roots: list[str]) -> bytes:
    data = path.read_bytes()
    if path.suffix == ".json":
        try:
            doc = json.loads(data)
        except ValueError:
            doc = None
        if doc is not None:
            if REPORT_STORE.search(path.as_posix()) and isinstance(doc, dict):
                doc = {k: ("<stamp>" if k in REPORT_STAMPS else v) for k, v in doc.items()}
            return json.dumps(_scrub(doc, roots), sort_keys=True).encode()
    if path.suffix == ".jsonl":
        lines = [
            json.dumps(_scrub(json.loads(x), roots), sort_keys=True) for x in data.decode().splitlines() if x
        ]
        return "\n".join(lines).encode()
    text = data.decode("utf-8", "replace")
    for root in roots:
        text = text.replace(root, "<root>")
    # Durations and dates printed in tables and notes.
    text = re.sub(r"\d{4}-\d{2}-\d{2}[T _]\d{2}[:-]\d{2}[:-]\d{2}(\.\d+)?", "<date>", text)
    text = re.sub(r"\b\d+(\.\d+)?\s?(ms|s)\b", "<dur>", text)
    if path.suffix in {".csv", ".md", ".tex"}:
        text = _blank_wall_columns(text)
    return text.encode()


def _digest_tree(tree: Path, roots: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for path in sorted(p for p in tree.rglob("*") if p.is_file()):
        rel = path.relative_to(tree).as_posix()
        if SKIPPED.search("/" + rel):
            continue
        if path.suffix == ".png":
            continue
        out[REPORT_STORE.sub("/reports/<fingerprint>.json", rel)] = hashlib.sha256(
            _normalised(path, roots)
        ).hexdigest()
    return out


def _run(checkout: Path, args: list[str]) -> None:
    env = {**os.environ, "PYTHONPATH": str(checkout), "HYDRA_FULL_ERROR": "1"}
    proc = subprocess.run([sys.executable, *args], cwd=checkout, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(
            f"structure_identity: {' '.join(args[:3])} failed ({proc.returncode}): {proc.stderr[-2000:]}"
        )


def _conformance(checkout: Path, out: Path) -> None:
    shared = Path(os.environ.get("MEDSTRAT_SHARED", "/work/shared"))
    code = (
        "import json,sys\n"
        "from benchmark.score.evaluate import score_root\n"
        "res={p: score_root(sys.argv[1], profile=p) for p in ('official','strict')}\n"
        "open(sys.argv[2],'w').write(json.dumps(res, sort_keys=True, default=str))\n"
    )
    _run(checkout, ["-c", code, str(shared / "mdsbench/conformance/cases"), str(out / "conformance.json")])


def main(argv: list[str] | None = None) -> int:
    """Run the fixed-seed outputs on ``checkout`` and print their digest."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkout", type=Path)
    parser.add_argument("--out", type=Path, required=True, help="scratch folder (replaced)")
    parser.add_argument("--list", action="store_true", help="print every file's hash")
    args = parser.parse_args(argv)
    checkout, out = args.checkout.resolve(), args.out.resolve()
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    common = [f"benchmark.datasets={DATASETS}", "run.seed=0", "run.processes=1", "run.progress=false"]
    sweep = out / "sweep"
    _run(checkout, ["-m", "experiments", "-m", f"strategy={SWEEP}", *common, f"hydra.sweep.dir={sweep}"])
    paper_runs = NEW_PAPER_RUNS if (checkout / "conf/strategy/s3_paper.yaml").is_file() else OLD_PAPER_RUNS
    for name, overrides in paper_runs.items():
        _run(
            checkout,
            ["-m", "experiments", *overrides, *common, f"run.name={name}", f"hydra.run.dir={out / name}"],
        )
    s3 = next(p for p in sweep.iterdir() if p.name.endswith("_s3"))
    _run(
        checkout,
        [
            "-m",
            "experiments.cli",
            "reselect",
            str(s3),
            "selector=majority",
            f"hydra.run.dir={out / 'reselect'}",
        ],
    )
    _conformance(checkout, out)
    roots = [str(out), str(checkout), os.path.expanduser("~")]
    groups = {
        "ablation": _digest_tree(sweep, roots),
        **{name: _digest_tree(out / name, roots) for name in paper_runs},
        "reselect": _digest_tree(out / "reselect", roots),
        "conformance": {
            "conformance.json": hashlib.sha256(_normalised(out / "conformance.json", roots)).hexdigest()
        },
    }
    total = hashlib.sha256()
    for group, files in groups.items():
        blob = json.dumps(files, sort_keys=True).encode()
        total.update(blob)
        print(f"{group:12s} {len(files):4d} files  {hashlib.sha256(blob).hexdigest()[:16]}")
        if args.list:
            for rel, digest in files.items():
                print(f"    {digest[:16]}  {rel}")
    print(f"digest {total.hexdigest()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
