"""S3 selectors on simulated candidates: official E2E vs. the oracle best-of-n, miss rate per mistake type.

Usage:
    python perf/simulated_selection.py SUITE_DIR [--seeds 0 1 2 3 4] [--n 5] [--clean 0.45] \
        [--selectors validator_max mdsbench random consensus] [--out .measure] [--only NAME ...] \
        [--explain SELECTOR ...]

SUITE_DIR holds datasets with their correct output under ``<dataset>/VLM/<--source>/`` (default ``oracle``:
``medstrat synth SUITE_DIR --size small --oracle oracle``). Without SUITE_DIR that suite is
generated in a temporary folder.

Per seed s and dataset, candidate k is what ``agent=simulated run.seed=<100·s>`` writes (seed 100·s + k,
``clean`` samples left clean, the default mix). Each candidate is validated under the ``evidence`` profile
(the default validator, or ``--profile``) and the ``mdsbench`` profile. Selections:

- ``validator_max``: S3's default selector on the default validator's reports;
- ``mdsbench``: ``validator_max`` on the paper's validator (the ``mdsbench`` profile);
- ``random``, ``consensus`` (and any registered selector name): on the default validator's reports;
- ``oracle``: per sample the best candidate by official E2E (the best-of-n upper bound; ground truth).

Each selection is assembled the way S3 writes it (`strategies.mechanics.assemble`) and scored with the
official profile; E2E is the macro mean over datasets. Miss rates pool (misses, opportunities) over datasets,
under three definitions: plain (`testbed.perturb.miss_rates`: a candidate without the mistake existed),
clear-cut (`dominated_miss_rates`: a candidate without it had no other mistake the kept one lacks) and
error-free available (`error_free_miss_rates`: some candidate of the sample had no mistake at all). For the
``--explain`` selectors (default ``validator_max``) every plain miss is listed in the JSON under ``missed``
with each candidate's mistakes, validator total and failed checks.
Writes ``<out>/simulated_selection.json`` and ``<out>/simulated_selection.md`` and prints the table.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agents.base import Candidate, Task
from benchmark.discover import discover
from benchmark.score.dataset import e2e_pass
from benchmark.score.evaluate import score_candidate
from strategies.mechanics import assemble
from strategies.selectors import choose, selectors, validator_max
from testbed.perturb import MISTAKES, MixConfig, miss_rates, perturb_folder, read_mistakes
from validator.validate import validate

AGENT_DIR = "agent1_data_organization"


def _e2e_by_index(pred: Path, root: Path) -> dict[int, bool]:
    scored = score_candidate(pred, root, profile="official", unreadable_as_missing=True)
    if scored.error:
        raise RuntimeError(f"{root.name}: {scored.error}")
    return {int(s.index): e2e_pass(s.to_dict()) for s in scored.per_sample}


def dominated_miss_rates(
    chosen: Mapping[int, int], labels: Sequence[Mapping[int, frozenset[str]]]
) -> dict[str, tuple[int, int]]:
    """Like `miss_rates`, counting only clear-cut cases: an opportunity is a sample where a candidate without
    the mistake has no mistake that a candidate with it lacks; a miss is the chosen one having it there."""
    out: dict[str, list[int]] = {}
    for index, k in chosen.items():
        mine = labels[k].get(index)
        if mine is None:
            continue
        sets = [lab[index] for lab in labels if index in lab]
        for kind in sorted({m for s in sets for m in s}):
            if not any(_dominated(s, kind, sets) for s in sets if kind in s):
                continue
            tally = out.setdefault(kind, [0, 0])
            tally[1] += 1
            tally[0] += int(kind in mine and _dominated(mine, kind, sets))
    return {kind: (m, n) for kind, (m, n) in sorted(out.items())}


def error_free_miss_rates(
    chosen: Mapping[int, int], labels: Sequence[Mapping[int, frozenset[str]]]
) -> dict[str, tuple[int, int]]:
    """Like `miss_rates`, counting only samples where an error-free candidate existed (issue 25, "Why").

    An opportunity for a mistake type is a sample where some candidate has it and some candidate has no
    mistake at all; a miss is the chosen one having it there. Samples whose chosen candidate carries no
    labels are left out, as in `miss_rates`.

    Args:
        chosen: Per sample index, the position of the selected candidate in ``labels``.
        labels: Per candidate (same positions), its labels as `read_mistakes` returns them.

    Returns:
        Per mistake type, ``(misses, opportunities)``.
    """
    out: dict[str, list[int]] = {}
    for index, k in chosen.items():
        mine = labels[k].get(index) if 0 <= k < len(labels) else None
        if mine is None:
            continue
        sets = [lab[index] for lab in labels if index in lab]
        if not any(not s for s in sets):
            continue  # no clean candidate: a mistake was unavoidable, whichever one
        for kind in sorted({m for s in sets for m in s}):
            tally = out.setdefault(kind, [0, 0])
            tally[1] += 1
            tally[0] += int(kind in mine)
    return {kind: (m, n) for kind, (m, n) in sorted(out.items())}


def _dominated(have: frozenset[str], kind: str, sets: Sequence[frozenset[str]]) -> bool:
    """Some candidate lacks ``kind`` and has no mistake that ``have`` lacks (besides ``kind`` itself)."""
    return any(kind not in other and other <= have - {kind} for other in sets)


def _pool(counts: Iterable[Mapping[str, Sequence[int]]]) -> dict[str, list[int]]:
    pooled: dict[str, list[int]] = {}
    for per in counts:
        for kind, (m, c) in per.items():
            tally = pooled.setdefault(kind, [0, 0])
            tally[0] += m
            tally[1] += c
    return dict(sorted(pooled.items()))


def _dataset(
    ds: Any,
    work: Path,
    seed: int,
    n: int,
    config: MixConfig,
    source: str,
    profile: str,
    names: Sequence[str],
    explain: Sequence[str] = (),
) -> dict[str, Any]:
    correct = ds.root / "VLM" / source / AGENT_DIR
    if not correct.is_dir():
        raise SystemExit(f"error: no correct output at {correct} (generate the suite with --oracle {source})")
    task = Task.from_dataset(ds, work / "selected", seed=100 * seed)
    cands: list[Candidate] = []
    for k in range(n):
        out = work / str(k)
        perturb_folder(correct, out, ds.root, seed=100 * seed + k, config=config, key=ds.name)
        cands.append(Candidate(output_dir=out / AGENT_DIR, candidate_index=k, agent="simulated"))
    labels = [read_mistakes(c.output_dir.parent) for c in cands]
    reports = {"evidence": [validate(c.output_dir, ds.root, profile=profile, use_cache=False) for c in cands]}
    reports["mdsbench"] = [
        validate(c.output_dir, ds.root, profile="mdsbench", use_cache=False) for c in cands
    ]
    per_cand = [_e2e_by_index(c.output_dir, ds.root) for c in cands]
    indices = sorted(per_cand[0])
    oracle_e2e = sum(any(p.get(i, False) for p in per_cand) for i in indices) / len(indices)
    result: dict[str, Any] = {"oracle_e2e": oracle_e2e, "selectors": {}}
    for name in names:
        sel = validator_max if name == "mdsbench" else selectors.get(name)
        reps = reports["mdsbench" if name == "mdsbench" else "evidence"]
        decisions = choose(sel, task, cands, reps)
        chosen = {i: d.candidate for i, d in decisions.items() if d.candidate is not None}
        assemble(task, cands, dict(chosen), reps)
        e2e = _e2e_by_index(task.output_dir, ds.root)
        result["selectors"][name] = {
            "e2e": sum(e2e.values()) / len(e2e) if e2e else 0.0,
            "miss": {k: list(v) for k, v in miss_rates(chosen, labels).items()},
            "dominated": {k: list(v) for k, v in dominated_miss_rates(chosen, labels).items()},
            "error_free": {k: list(v) for k, v in error_free_miss_rates(chosen, labels).items()},
        }
        if name in explain:
            result["selectors"][name]["missed"] = missed_samples(chosen, labels, reps, per_cand)
    return result


def missed_samples(
    chosen: Mapping[int, int],
    labels: Sequence[Mapping[int, frozenset[str]]],
    reports: Sequence[Any],
    e2e: Sequence[Mapping[int, bool]],
) -> list[dict[str, Any]]:
    """Every plain miss of a selection, for reading by eye: per sample the kept candidate, each candidate's
    mistakes, official E2E pass, validator total and the checks it did not fully pass (what the selection
    traded off)."""
    out: list[dict[str, Any]] = []
    for index, k in sorted(chosen.items()):
        if index not in labels[k]:
            continue
        sets = [lab.get(index) for lab in labels]
        kept = labels[k][index]
        kinds = sorted(m for m in kept if any(s is not None and m not in s for s in sets))
        if not kinds:
            continue
        cands = []
        for pos, rep in enumerate(reports):
            sample = rep.samples.get(index)
            cands.append(
                {
                    "candidate": pos,
                    "mistakes": sorted(sets[pos] or ()),
                    "e2e": e2e[pos].get(index),
                    "total": round(sample.total, 4) if sample else None,
                    "failed": {o.name: round(o.score, 4) for o in sample.failed()} if sample else {},
                }
            )
        out.append({"index": index, "kept": k, "missed": kinds, "candidates": cands})
    return out


def measure(
    suite: Path,
    seeds: Sequence[int],
    n: int,
    config: MixConfig,
    names: Sequence[str],
    work: Path,
    *,
    source: str = "oracle",
    profile: str = "evidence",
    only: Sequence[str] | None = None,
    explain: Sequence[str] = (),
) -> dict[str, Any]:
    """Run the study; returns ``{"seeds": {seed: {"datasets": ..., "macro": ...}}, "config": ...}``."""
    datasets = discover(suite, names=list(only) if only else None)
    out: dict[str, Any] = {
        "config": {
            "suite": str(suite),
            "n": n,
            "clean": config.clean,
            "profile": profile,
            "selectors": names,
        },
        "seeds": {},
    }
    for seed in seeds:
        start = time.perf_counter()
        per = {
            ds.name: _dataset(
                ds, work / f"seed{seed}" / ds.name, seed, n, config, source, profile, names, explain
            )
            for ds in datasets
        }
        oracle = sum(d["oracle_e2e"] for d in per.values()) / len(per)
        macro: dict[str, Any] = {"oracle_e2e": oracle, "selectors": {}}
        for name in names:
            e2e = sum(d["selectors"][name]["e2e"] for d in per.values()) / len(per)
            macro["selectors"][name] = {
                "e2e": e2e,
                "ratio": e2e / oracle if oracle else None,
                "miss": _pool(d["selectors"][name]["miss"] for d in per.values()),
                "dominated": _pool(d["selectors"][name]["dominated"] for d in per.values()),
                "error_free": _pool(d["selectors"][name]["error_free"] for d in per.values()),
            }
        out["seeds"][str(seed)] = {"datasets": per, "macro": macro, "seconds": time.perf_counter() - start}
        print(
            f"seed {seed}: {time.perf_counter() - start:.0f}s, oracle E2E {oracle:.4f}, "
            + ", ".join(f"{n} {macro['selectors'][n]['e2e']:.4f}" for n in names),
            file=sys.stderr,
        )
    return out


def _pooled_table(
    result: dict[str, Any], names: Sequence[str], kinds: Sequence[str], key: str, intro: str
) -> list[str]:
    """One miss-rate table (``key``: a definition's tally in the JSON), every seed pooled, after ``intro``."""
    lines = [
        "",
        intro,
        "",
        "| mistake | raw evidence | " + " | ".join(names) + " |",
        "|---" * (2 + len(names)) + "|",
    ]
    for kind in kinds:
        cells = []
        for name in names:
            m, c = _over_seeds(result, name, key, kind)
            cells.append(f"{m}/{c}" if c else "—")
        evidence = "yes" if MISTAKES[kind].raw_evidence else "no"
        lines.append(f"| {kind} | {evidence} | " + " | ".join(cells) + " |")
    return lines


def _over_seeds(result: dict[str, Any], name: str, key: str, kind: str) -> tuple[int, int]:
    """(misses, opportunities) of one selector and mistake type summed over the seeds."""
    m = c = 0
    for doc in result["seeds"].values():
        mm, cc = doc["macro"]["selectors"][name].get(key, {}).get(kind, (0, 0))
        m, c = m + mm, c + cc
    return m, c


def markdown(result: dict[str, Any]) -> str:
    """The per-seed tables: E2E and ratio to the oracle, then the miss rate per mistake type."""
    names = result["config"]["selectors"]
    lines = ["| seed | oracle best-of-n E2E | " + " | ".join(f"{n} E2E (ratio)" for n in names) + " |"]
    lines.append("|---" * (2 + len(names)) + "|")
    for seed, doc in result["seeds"].items():
        m = doc["macro"]
        cells = [f"{m['selectors'][n]['e2e']:.4f} ({m['selectors'][n]['ratio']:.3f})" for n in names]
        lines.append(f"| {seed} | {m['oracle_e2e']:.4f} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "Per seed, the mistake types with raw evidence: how many have a miss rate above 5 %, and the worst "
        "(misses/opportunities):",
        "",
        "| seed | " + " | ".join(names) + " |",
        "|---" * (1 + len(names)) + "|",
    ]
    for seed, doc in result["seeds"].items():
        cells = []
        for name in names:
            rates = [
                (m / c, k, m, c)
                for k, (m, c) in doc["macro"]["selectors"][name]["miss"].items()
                if MISTAKES[k].raw_evidence and c
            ]
            over = sum(1 for r in rates if r[0] > 0.05)
            worst = max(rates, default=None)
            cells.append(f"{over} · {worst[1]} {worst[2]}/{worst[3]}" if worst and worst[0] else f"{over}")
        lines.append(f"| {seed} | " + " | ".join(cells) + " |")
    kinds = sorted(
        {k for d in result["seeds"].values() for s in d["macro"]["selectors"].values() for k in s["miss"]}
    )
    lines += [
        "",
        "Miss rate per mistake type, all seeds pooled (misses/opportunities; per seed in the JSON):",
        "",
    ]
    lines.append("| mistake | category | raw evidence | " + " | ".join(names) + " |")
    lines.append("|---" * (3 + len(names)) + "|")
    for kind in kinds:
        cells = []
        for name in names:
            m, c = _over_seeds(result, name, "miss", kind)
            cells.append(f"{100 * m / c:.1f} % ({m}/{c})" if c else "—")
        info = MISTAKES[kind]
        lines.append(
            f"| {kind} | {info.category} | {'yes' if info.raw_evidence else 'no'} | "
            + " | ".join(cells)
            + " |"
        )
    lines += _pooled_table(
        result,
        names,
        kinds,
        "dominated",
        "Clear-cut misses only, all seeds pooled: the selection kept the mistake although a candidate "
        "without it had no other mistake the kept one lacks (misses/opportunities):",
    )
    lines += _pooled_table(
        result,
        names,
        kinds,
        "error_free",
        "Error-free candidate available, all seeds pooled: the samples where a candidate has the mistake and "
        "another candidate has no mistake at all; a miss is the selection keeping the mistake there "
        "(misses/opportunities):",
    )
    lines += ["", _definitions(result, names[0], kinds)] if names else []
    return "\n".join(lines) + "\n"


def _definitions(result: dict[str, Any], name: str, kinds: Sequence[str]) -> str:
    """One selector's three miss-rate definitions side by side, raw-evidence types only, with the verdict
    against the 5 % bar (types with fewer than 20 opportunities under a definition are not judged)."""
    keys = (("miss", "plain"), ("dominated", "clear-cut"), ("error_free", "error-free available"))
    lines = [
        f"`{name}`, raw-evidence types, the three definitions pooled over the seeds "
        "(misses/opportunities; * = above 5 % with at least 20 opportunities):",
        "",
        "| mistake | " + " | ".join(label for _, label in keys) + " |",
        "|---" * (1 + len(keys)) + "|",
    ]
    for kind in kinds:
        if not MISTAKES[kind].raw_evidence:
            continue
        cells = []
        for key, _ in keys:
            m, c = _over_seeds(result, name, key, kind)
            flag = " *" if c >= 20 and m / c > 0.05 else ""
            cells.append(f"{m}/{c}{flag}" if c else "—")
        lines.append(f"| {kind} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point: measure, write the JSON and markdown, print the markdown.

    Args:
        argv: Command-line arguments (default: ``sys.argv[1:]``).

    Returns:
        The exit code (0, or 2 for a missing suite).
    """
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("suite", nargs="?", type=Path)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--n", type=int, default=5)
    parser.add_argument("--clean", type=float, default=0.45)
    parser.add_argument(
        "--selectors", nargs="+", default=["validator_max", "mdsbench", "random", "consensus"]
    )
    parser.add_argument("--profile", default="evidence", help="the default validator's profile")
    parser.add_argument("--source", default="oracle")
    parser.add_argument("--only", nargs="+")
    parser.add_argument("--out", type=Path, default=Path(".measure"))
    parser.add_argument(
        "--explain",
        nargs="*",
        default=["validator_max"],
        help="selectors whose every plain miss is written to the JSON with each candidate's checks",
    )
    args = parser.parse_args(argv)
    names = [s for s in args.selectors if s == "mdsbench" or s in selectors]
    skipped = sorted(set(args.selectors) - set(names))
    if skipped:
        print(f"note: not registered, skipped: {', '.join(skipped)}", file=sys.stderr)
    with tempfile.TemporaryDirectory(prefix="simsel-") as tmp:
        suite = args.suite
        if suite is None:
            from testbed.synth.suite import generate_suite

            suite = Path(tmp) / "suite"
            generate_suite(suite, size="small", seed=0, oracle=args.source)
        if not suite.is_dir():
            print(f"error: no suite at {suite}", file=sys.stderr)
            return 2
        result = measure(
            suite,
            args.seeds,
            args.n,
            MixConfig(clean=args.clean),
            names,
            Path(tmp) / "work",
            source=args.source,
            profile=args.profile,
            only=args.only,
            explain=args.explain,
        )
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "simulated_selection.json").write_text(json.dumps(result, indent=1), encoding="utf-8")
    table = markdown(result)
    (args.out / "simulated_selection.md").write_text(table, encoding="utf-8")
    print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
