"""The selector leaderboard: every registered selector × validator profile on the candidates stored in
finished S3 runs, with no agent call (a judge selector asks the run's judge, through the run's request cache),
its table and its figure.

    medstrat leaderboard RUN... [--selectors a,b,c] [--validators evidence,mdsbench]
                                           [--imports my_pkg.selectors] [--out DIR]

Per (selector, validator): official and strict E2E, SCJ and CF (macro over datasets), the gap to the
oracle best-of-n bound (any stored candidate passes E2E), per-mistake-type miss rates when the candidates
carry mistake labels (``<candidate>/mistakes.json``, written by the ``simulated`` agent), and a paired test
against ``validator_max`` under the same validator with datasets as the unit; each row's calls, tokens and
dollars (the stored candidates' plus its judge's) and, for a candidate pool, each agent's win rate. Several
RUNs (shards, seeds) are pooled: each (run, dataset) is one cluster. Writes ``selectors.{md,csv,tex,png}``
into ``--out`` (default ``<first RUN>/selectors``).

Selection, assembly and scoring are the code a fresh S3 run executes (`strategies.best_of_n`,
`benchmark.score`), so ``validator_max`` × the source's validator reproduces the source's ``metrics.json``.
Each candidate is validated once per profile and each distinct assembled output scored once
(`ReportCache`, `ScoreCache`).

Model roles on the leaderboard:

- **Judge selectors** (``llm_judge``, ``hybrid``, any factory marked ``needs_judge``) re-rank the stored
  candidates with the judge the source run configured: its ``judge`` node, else its agent's config, as
  `experiments.run.roles.build_judge` builds it for a run, with the run's selector options when it ran that
  selector. The judge's request cache is the run's (``judge.cache``; ``auto`` is the user's cache file), and a
  verdict's request is built from the same candidates and validator reports, so a re-ranking of a judged run
  re-asks nothing already answered: those verdicts are cache hits.
- By default a judge selector is ranked only when every run configured a judge (a ``judge`` node, or a judge
  selector); otherwise it is skipped with one line, since ranking it would make model calls the runs never
  asked for. Named with ``--selectors``, it is ranked with the agent's model as the judge, as a run would.
  Where a judge cannot be built, or every one of its calls failed, the leaderboard says so in one line:
  skipped from the default list, refused (exit 2) when named.
- **Cost**: every row counts what its strategy would have spent: the stored candidates' calls, tokens and
  dollars plus its judge's (a cached verdict at the original call's price), so validator vs judge compare at
  equal spend. ``judge_*`` columns split the judge's part out.
- **Pools**: when the candidates come from more than one agent, ``win:<agent>`` is the share of decided
  samples whose kept candidate that agent made, under each (validator, selector).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import logging
import shutil
import sys
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
from omegaconf import OmegaConf

from agents.base import Candidate, Task, Usage
from benchmark.score.dataset import e2e_pass
from benchmark.score.evaluate import score_candidate
from core.atomic import atomic_write_text
from core.cli_errors import CliError, OneLineParser, cli_main, existing_dir
from core.registry import OptionError
from experiments.publish.stats import CI_METHOD, TEST_METHOD, bootstrap_ci, cluster_diffs, paired_cluster_test
from experiments.publish.tables import write_tables
from experiments.run.mistakes import add_counts
from experiments.run.plan import import_plugins, task_options
from experiments.run.served import served_label
from experiments.selection.reselect import ReselectError, load_source_config
from experiments.stored.run_folder import CANDIDATES, run_info
from strategies.base import DONE_MARKER, REPORTS_DIR, SampleDecision
from strategies.choice import decision_usage
from strategies.context import candidate_from_marker
from strategies.mechanics import assemble, read_meta
from strategies.selectors import ORACLE, Selector, build_selector, selectors
from testbed.perturb import MISTAKES_FILE, miss_rates, read_mistakes
from validator.report import Report
from validator.report_store import validate_stored
from validator.validate import get_profile, validate

__all__ = [
    "BASELINE",
    "COST_COLUMNS",
    "FAILED_CALL",
    "MISTAKES_FILE",
    "JudgeSource",
    "ReportCache",
    "Spend",
    "StoredDataset",
    "build_judge_selector",
    "is_judge",
    "judge_notes",
    "judge_sources",
    "leaderboard",
    "leaderboard_figure",
    "load_stored",
    "main",
    "ready_judges",
    "role_columns",
    "role_sections",
    "spend_of",
    "unavailable_judges",
    "write_leaderboard",
]

log = logging.getLogger(__name__)

BASELINE = "validator_max"
PROFILES = ("official", "strict")


FAILED_CALL = "judge call failed"
"""How `agents.model.judge.LiteLLMJudge` begins the reason of a verdict whose call failed."""

COST_COLUMNS = ("calls", "tokens", "USD", "judge_calls", "judge_tokens", "judge_USD", "judge_cache_hits")


def is_judge(name: str) -> bool:
    """Whether the registered selector ``name`` needs a judge role (`strategies.judge`)."""
    return bool(getattr(selectors.get(name), "needs_judge", False))


@dataclass(frozen=True)
class JudgeSource:
    """What a stored run says about its judge.

    Attributes:
        judge: The run's ``judge`` node (None: the agent's config judges).
        agent: The run's ``agent`` node.
        selector: The run's ``selector`` node (its options apply when it names the selector being ranked).
    """

    judge: Mapping[str, Any] | None
    agent: Mapping[str, Any]
    selector: Any = None

    @property
    def configured(self) -> bool:
        """Whether the run set up a judge: a ``judge`` node, or a judge selector of its own."""
        name = _selector_name(self.selector)
        return bool(self.judge) or (name is not None and name in selectors.names() and is_judge(name))


def _selector_name(node: Any) -> str | None:
    if isinstance(node, str):
        return node
    if isinstance(node, Mapping) and node.get("name"):
        return str(node["name"])
    return None


def judge_sources(runs: Iterable[Path]) -> dict[str, JudgeSource]:
    """Per run folder (as a string), its judge configuration from ``run.json``."""
    out = {}
    for run in map(Path, runs):  # keyed as `StoredDataset.source` spells the folder
        config = run_info(run).get("config") or {}
        out[str(run)] = JudgeSource(config.get("judge"), config.get("agent") or {}, config.get("selector"))
    return out


def build_judge_selector(name: str, source: JudgeSource) -> Selector:
    """The judge selector ``name`` with the run's judge (and the run's options for it, when it ran it).

    Raises:
        OptionError: No judge can be made from the run's config.
    """
    from experiments.run.roles import build_judge, judge_selector

    node = source.selector
    options = (
        {k: v for k, v in node.items() if k not in ("name", "_target_", "on_error")}
        if isinstance(node, Mapping) and _selector_name(node) == name
        else {}
    )
    selector: Selector = judge_selector(selectors.get(name), options, build_judge(source.judge, source.agent))
    return selector


def ready_judges(
    names: Sequence[str], sources: Mapping[str, JudgeSource], named: bool
) -> tuple[list[str], dict[str, str]]:
    """The selectors to rank, and why each judge selector left out was left out.

    Args:
        names: The candidate selector names.
        sources: Per run, its judge configuration.
        named: The user named the selectors (``--selectors``): a judge that cannot be built is an error.

    Returns:
        ``(names kept, {name: reason skipped})``.

    Raises:
        OptionError: A named judge selector whose judge cannot be built from some run.
    """
    kept: list[str] = []
    skipped: dict[str, str] = {}
    for name in names:
        if not is_judge(name):
            kept.append(name)
            continue
        reason = None
        for run, source in sources.items():
            if not named and not source.configured:
                reason = (
                    f"{run} has no judge (judge=... or a judge selector); name it with --selectors to judge "
                    "with the run's agent model"
                )
                break
            try:
                build_judge_selector(name, source)
            except OptionError as exc:
                reason = f"judge unavailable for {run}: {exc}"
                break
        if reason is None:
            kept.append(name)
        elif named:
            raise OptionError(f"selector {name}: {reason}")
        else:
            skipped[name] = reason
    return kept, skipped


@dataclass(frozen=True)
class Spend:
    """What a selector spent deciding one dataset (small: it crosses process borders).

    Attributes:
        usage: The judge's usage summed over the samples.
        asked: Samples where the judge was asked (it answered, or its answer was invalid).
        failed: Of those, the calls that failed (no answer at all: the judge is unavailable).
        why: The first failure's reason.
    """

    usage: Usage
    asked: int = 0
    failed: int = 0
    why: str = ""


def spend_of(decisions: Mapping[int, SampleDecision]) -> Spend:
    """The judge's spend recorded in a selection's decisions (nothing for a validator-only selector)."""
    asked = failed = 0
    why = ""
    for d in decisions.values():
        verdict = d.details.get("judge") or {}
        if verdict.get("status") in ("chosen", "invalid"):
            asked += 1
            answer = str(verdict.get("answer", ""))
            if verdict.get("status") == "invalid" and answer.startswith(FAILED_CALL):
                failed += 1
                why = why or answer
    return Spend(decision_usage(d.details for d in decisions.values()), asked, failed, why)


def unavailable_judges(spent: Mapping[str, Sequence[Spend]]) -> dict[str, str]:
    """The judge selectors none of whose calls got an answer, with the first failure's reason."""
    out = {}
    for name, parts in spent.items():
        asked = sum(p.asked for p in parts)
        if asked and sum(p.failed for p in parts) == asked:
            out[name] = "judge unavailable: " + next(p.why for p in parts if p.why)
    return out


def role_columns(
    cells: Sequence[tuple[Sequence[Any], Mapping[int, int | None], Spend]],
    agents: Sequence[str],
    judged: bool,
) -> dict[str, Any]:
    """The cost and per-agent columns of one leaderboard row.

    Args:
        cells: Per dataset: its stored candidates (``usage``, ``agent``), the kept candidate per sample, and
            the selector's spend there.
        agents: Every agent label of the stored candidates (a ``win:<agent>`` column each when more than one).
        judged: Some row of the leaderboard has a judge selector (the ``judge_*`` columns are written).

    Returns:
        The columns.
    """
    made = Usage()
    judge = Usage()
    wins = dict.fromkeys(agents, 0)
    decided = 0
    for candidates, chosen, spend in cells:
        made = sum((c.usage for c in candidates), made)
        judge = judge + spend.usage
        for k in chosen.values():
            if k is not None:
                decided += 1
                wins[candidates[k].agent] = wins.get(candidates[k].agent, 0) + 1
    total = made + judge
    out: dict[str, Any] = {
        "calls": total.calls,
        "tokens": total.total_tokens,
        "USD": round(total.cost_usd, 6),
    }
    if judged:
        out |= {
            "judge_calls": judge.calls,
            "judge_tokens": judge.total_tokens,
            "judge_USD": round(judge.cost_usd, 6),
            "judge_cache_hits": judge.cache_hits,
        }
    if len(agents) > 1:
        out |= {f"win:{a}": round(wins[a] / decided, 4) if decided else None for a in agents}
    return out


def role_sections(
    frame: pd.DataFrame, skipped: Mapping[str, str], runs: Sequence[str] = ()
) -> list[str | pd.DataFrame]:
    """The leaderboard's Markdown sections for cost, per-agent win rates, skipped judge selectors and the
    models the runs' servers served where the config's name does not say (`served_models`)."""
    cost = ["validator", "selector", *[c for c in COST_COLUMNS if c in frame.columns]]
    parts: list[str | pd.DataFrame] = [
        "## Cost per selector: the stored candidates' plus the judge's (cached verdicts at the original "
        "call's price), so selectors compare at equal spend",
        frame[cost],
    ]
    wins = [c for c in frame.columns if str(c).startswith("win:")]
    if wins:
        parts += [
            "## Per agent: share of decided samples whose kept candidate each agent made",
            frame[["validator", "selector", *wins]],
        ]
    parts += [f"**{name} skipped**: {why}" for name, why in skipped.items()]
    served = served_models(Path(r) for r in runs)
    if served:
        parts.append("Models: " + "; ".join(f"{run} {label}" for run, label in served.items()))
    return parts


def served_models(runs: Iterable[Path]) -> dict[str, str]:
    """Per run whose server named more than the config (``run.json`` ``models``), what it served.

    ``agent=local`` runs of two GGUFs both say ``openai/local``; their stored candidates are two models'.

    Args:
        runs: Run folders.

    Returns:
        Run folder name → ``served <identity>`` (`experiments.run.served.served_label`).
    """
    out: dict[str, str] = {}
    for run in runs:
        try:
            info = run_info(run)
        except (OSError, ValueError):
            continue
        models = info.get("models") if isinstance(info, dict) else None
        label = served_label(models if isinstance(models, list) else [])
        if label is not None:
            out[run.name] = label
    return out


def judge_notes(frame: pd.DataFrame, skipped: Mapping[str, str]) -> list[str]:
    """One line per judge selector skipped, and per row whose judge made calls the request cache did not
    answer (new spend: under a validator profile the run did not use, the judge sees other messages)."""
    lines = [f"{name} skipped: {why}" for name, why in skipped.items()]
    if "judge_calls" in frame.columns:
        for _, row in frame.iterrows():
            new = int(row["judge_calls"]) - int(row["judge_cache_hits"])
            if new > 0:
                lines.append(
                    f"{row['validator']}/{row['selector']}: {new} judge calls not in the request cache "
                    f"(${float(row['judge_USD']):.4f} for all its verdicts)"
                )
    return lines


@dataclass
class StoredDataset:
    """One dataset of a stored run: its task (seed and options of the source) and its candidates.

    Attributes:
        key: ``<run folder name>/<dataset>`` (the cluster id when runs are pooled).
        task: The task as the source run built it (``out_dir`` set per evaluation).
        candidates: The finished generations ``0..n-1``, in order.
        source: The run folder it was read from (its judge config re-ranks it with a judge selector).
        limited: Its run was cut to the first samples (``benchmark.samples``): scored on those only.
    """

    key: str
    task: Task
    candidates: list[Candidate]
    source: str = ""
    limited: bool = False

    @property
    def scored_indices(self) -> list[int] | None:
        """The samples its scores cover when its run was cut (`score_candidate`'s ``indices``), else None."""
        return [e.index for e in self.task.entries] if self.limited else None


def run_labels(runs: Sequence[str | Path]) -> list[str]:
    """A distinct label per run folder: its name, with as many parent folders as it takes to tell runs apart.

    Runs of a study named alike (``<dataset>/seed0/s3``, ``<dataset>/seed1/s3``) are distinct clusters; keyed
    by the folder name alone, the second run's per-dataset E2E and oracle replaced the first's.

    Args:
        runs: Run folders (the same folder given twice is one run: it gets one label).

    Returns:
        The labels, in the order of ``runs``.
    """
    paths = [Path(r).resolve() for r in runs]
    for depth in range(1, max((len(p.parts) for p in paths), default=1) + 1):
        labels = ["/".join(p.parts[-depth:]) for p in paths]
        owners: dict[str, set[Path]] = {}
        for label, path in zip(labels, paths, strict=True):
            owners.setdefault(label, set()).add(path)
        if all(len(folders) == 1 for folders in owners.values()):
            return labels
    return [str(p) for p in paths]


def load_stored(run_dir: Path, label: str | None = None) -> list[StoredDataset]:
    """The datasets and finished candidates of an S3/S4 run folder.

    Args:
        run_dir: A finished run folder.
        label: The run's part of each dataset's cluster key (default the folder's name; `run_labels`).

    Returns:
        One entry per dataset with at least one finished candidate.

    Raises:
        ReselectError: Not a finished run, no candidates, or a `samples_per_dataset` that is not a positive
            integer.
    """
    from benchmark.discover import discover
    from experiments.run.experiment import benchmark_root

    cfg = OmegaConf.create(load_source_config(run_dir))
    import_plugins(cfg.run.get("imports"))
    root = benchmark_root(cfg.benchmark)
    info = run_info(run_dir)
    names = list(info.get("datasets") or [])
    options = task_options(cfg.agent, int(cfg.run.seed))
    out = []
    # The run's sample limit (benchmark.samples): its candidates and scores cover only the first N entries;
    # scored against the whole manifest, a 3-sample run of a 20-sample dataset had SV 0.15 here, 1.0 there.
    limit = info.get("samples_per_dataset")
    if limit is not None and (type(limit) is not int or limit < 1):
        raise ReselectError(
            f"{run_dir / 'run.json'}: samples_per_dataset is {limit!r}, not a positive integer"
        )
    for found in discover(root, names=names or None):
        dataset = found.first(limit) if limit is not None else found
        folder = run_dir / CANDIDATES / dataset.name
        keys = (
            sorted((p for p in folder.iterdir() if p.name.isdigit()), key=lambda p: int(p.name))
            if folder.is_dir()
            else []
        )
        cands = [c for c in (candidate_from_marker(p) for p in keys) if c is not None]
        if cands:
            task = Task.from_dataset(dataset, run_dir / "selected" / dataset.name, **options)
            key = f"{label or run_dir.name}/{dataset.name}"
            out.append(StoredDataset(key, task, cands, str(run_dir), limited=limit is not None))
    if not out:
        raise ReselectError(f"{run_dir} holds no finished candidates")
    return out


class ReportCache:
    """Validator reports per (candidate folder, profile): each candidate is validated once per profile, or
    its report stored with it is read (`validator.report_store`).

    Attributes:
        validations: Reports obtained, validated or read (for the perf script and tests).
    """

    def __init__(self) -> None:
        self._reports: dict[tuple[str, str], Report] = {}
        self.validations = 0

    def get(self, candidate: Candidate, task: Task, profile: str) -> Report:
        """The report of ``candidate`` under ``profile`` (validated on first use)."""
        key = (str(candidate.output_dir), profile)
        if key not in self._reports:
            folder = Path(candidate.output_dir)
            if (folder.parent / DONE_MARKER).is_file():  # a stored candidate: its report, if still valid
                store = folder.parent / REPORTS_DIR
                self._reports[key] = validate_stored(folder, task.root, get_profile(profile), store)[0]
            else:
                self._reports[key] = validate(candidate.output_dir, task.root, profile=profile)
            self.validations += 1
        return self._reports[key]


@dataclass
class _Scored:
    metrics: dict[str, dict[str, float]]  # profile -> the eleven
    e2e: dict[int, bool]  # official per-sample E2E


@dataclass
class ScoreCache:
    """Scores of assembled outputs keyed by what the folder is made of (dataset, chosen candidates, the one
    whose meta is patched), and the oracle bound per dataset; identical outputs (selectors, and the two
    profiles' choices, often agree) are assembled and scored once."""

    work: Path
    _scores: dict[tuple[Any, ...], _Scored] = field(default_factory=dict)  # (dataset, choice, meta source)
    _oracle: dict[str, float] = field(default_factory=dict)
    _readable_meta: dict[str, list[int]] = field(default_factory=dict)
    assembled: int = 0

    def score_decisions(
        self, stored: StoredDataset, sel: Selector, profile: str, reports: Sequence[Report]
    ) -> tuple[dict[int, SampleDecision], _Scored]:
        """Choose with ``sel``, assemble (unless this choice was scored before) and score; with the selector's
        whole decisions (``fallback`` flags, a judge's verdicts and usage)."""
        from strategies.selectors import choose

        decisions = choose(sel, stored.task, stored.candidates, reports)
        chosen = {i: d.candidate for i, d in decisions.items()}
        key = (stored.key, tuple(sorted(chosen.items())), self._meta_source(stored, reports))
        if key not in self._scores:
            out = self.work / f"{len(self._scores)}"
            task = dataclasses.replace(stored.task, out_dir=out)
            assemble(task, stored.candidates, chosen, reports)  # S3's assembly of this choice
            self.assembled += 1
            metrics: dict[str, dict[str, float]] = {}
            e2e: dict[int, bool] = {}
            for p in PROFILES:
                scored = score_candidate(task.output_dir, task.root, profile=p, indices=stored.scored_indices)
                metrics[p] = dict(scored.metrics) if not scored.error else {}
                if p == "official":
                    e2e = {int(s.index): e2e_pass(s.to_dict()) for s in scored.per_sample}
            self._scores[key] = _Scored(metrics, e2e)
            shutil.rmtree(out, ignore_errors=True)
        return decisions, self._scores[key]

    def _meta_source(self, stored: StoredDataset, reports: Sequence[Report]) -> int | None:
        """Whose ``data_meta.json`` `assemble` patches: best meta total among those with one (ties: first)."""
        if stored.key not in self._readable_meta:
            self._readable_meta[stored.key] = [
                k for k, c in enumerate(stored.candidates) if read_meta(c.output_dir) is not None
            ]
        readable = self._readable_meta[stored.key]
        return min(readable, key=lambda k: (-reports[k].data_meta.total, k), default=None)

    def oracle(self, stored: StoredDataset) -> float | None:
        """The share of samples where some stored candidate passes E2E (ground truth, through the scorer)."""
        if stored.key not in self._oracle:
            best: dict[int, bool] = {}
            for cand in stored.candidates:
                scored = score_candidate(
                    cand.output_dir,
                    stored.task.root,
                    profile="official",
                    unreadable_as_missing=True,
                    indices=stored.scored_indices,
                )
                for s in scored.per_sample:
                    best[int(s.index)] = best.get(int(s.index), False) or e2e_pass(s.to_dict())
            self._oracle[stored.key] = sum(best.values()) / len(best) if best else float("nan")
        value = self._oracle[stored.key]
        return None if value != value else value


def _read_mistakes(candidate: Candidate) -> dict[int, frozenset[str]]:
    folder = Path(candidate.output_dir).parent
    try:
        return read_mistakes(folder)
    except ValueError as exc:  # one broken label file must not stop the leaderboard
        log.warning("%s", exc)
        return {}


def _selector_names(wanted: Sequence[str] | None, judges: bool = False) -> list[str]:
    names = list(wanted) if wanted else [n for n in selectors.names() if n != ORACLE]
    unique: list[str] = []
    seen: set[int] = set()
    for name in names:
        obj = selectors.get(name)  # raises UnknownNameError listing the valid names
        if getattr(obj, "needs_judge", False) and not judges:
            # A judge selector calls a model per sample; callers other than the leaderboard make no model call
            # (the judge selectors above rank judges with the run's judge and request cache).
            if wanted:
                raise ReselectError(
                    f"selector {name} calls a judge model, and this analysis calls none: rank it with "
                    f"medstrat leaderboard RUN --selectors validator_max,{name}, or in a run"
                )
            continue
        if id(obj) in seen and not wanted:
            continue  # an alias of a selector already listed
        seen.add(id(obj))
        unique.append(name)
    return unique


@dataclass
class _DatasetResult:
    """Everything the leaderboard needs from one stored dataset (small, so it crosses process borders)."""

    key: str
    oracle: float | None
    cells: dict[tuple[str, str], tuple[dict[str, dict[str, float]], dict[int, int | None], int, Spend]]
    validations: int
    assembled: int


def _evaluate(
    stored: StoredDataset,
    names: Sequence[str],
    validators: Sequence[str],
    work: str,
    on_error: str = "raise",
    judges: Mapping[str, JudgeSource] | None = None,
) -> _DatasetResult:
    """Every (validator, selector) on one dataset: each candidate validated once per profile, each distinct
    choice assembled and scored once. Runs in a worker process (datasets are independent); a judge selector is
    built there from its run's judge config (``judges``)."""
    reports = ReportCache()
    with tempfile.TemporaryDirectory(dir=work) as scratch:
        scores = ScoreCache(Path(scratch))
        oracle = scores.oracle(stored)
        cells: dict[
            tuple[str, str], tuple[dict[str, dict[str, float]], dict[int, int | None], int, Spend]
        ] = {}
        for profile in validators:
            reps = [reports.get(c, stored.task, profile) for c in stored.candidates]
            for name in names:
                sel = (
                    build_judge_selector(name, judges[stored.source])
                    if judges is not None and is_judge(name)
                    else build_selector(name, on_error=on_error)
                )
                decisions, scored = scores.score_decisions(stored, sel, profile, reps)
                chosen = {i: d.candidate for i, d in decisions.items()}
                fallbacks = sum(1 for d in decisions.values() if d.fallback)
                cells[(profile, name)] = (scored.metrics, chosen, fallbacks, spend_of(decisions))
        return _DatasetResult(stored.key, oracle, cells, reports.validations, scores.assembled)


def _evaluate_all(
    stored: Sequence[StoredDataset],
    names: Sequence[str],
    validators: Sequence[str],
    work: str,
    workers: int,
    on_error: str = "raise",
    judges: Mapping[str, JudgeSource] | None = None,
) -> list[_DatasetResult]:
    if workers <= 1 or len(stored) <= 1:
        return [_evaluate(s, names, validators, work, on_error, judges) for s in stored]
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    # fork: workers inherit the selectors registered in this process (plug-ins, run.imports, tests).
    context = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(max_workers=min(workers, len(stored)), mp_context=context) as pool:
        job = functools.partial(
            _evaluate,
            names=list(names),
            validators=list(validators),
            work=work,
            on_error=on_error,
            judges=judges,
        )
        try:
            return list(pool.map(job, stored))
        except KeyboardInterrupt:  # Ctrl-C or SIGTERM: leaving the pool would wait for every running dataset
            for worker in multiprocessing.active_children():
                worker.terminate()
            raise


def leaderboard(
    runs: Sequence[Path],
    selector_names: Sequence[str] | None = None,
    validators: Sequence[str] = ("evidence", "mdsbench"),
    *,
    workers: int | None = None,
    on_error: str = "raise",
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Evaluate selectors × validator profiles on the stored candidates of ``runs``.

    Args:
        runs: Finished S3 (or S4) run folders.
        selector_names: Registered selector names (default: every registered one but the oracle).
        validators: Validator profiles (names or YAML paths).
        workers: Processes (datasets are evaluated in parallel); default the CPU count, 1 in-process.
        on_error: ``raise`` (a selector that raises stops the leaderboard) or ``fallback`` (validator_max
            chooses there; the ``fallbacks`` column counts those samples per row).

    Returns:
        ``(frame, stats)``: one row per (validator, selector); stats count validations, assemblies, seconds,
        and hold ``per_dataset_E2E`` (``"<validator>/<selector>"`` → cluster → E2E).

    Raises:
        ReselectError: A run is not a finished run with candidates.
        UnknownNameError: An unknown selector name.
        SelectorError: A selector raised on a sample under ``on_error="raise"``.
    """
    import os

    start, started = time.perf_counter(), time.time()
    folders = list(dict.fromkeys(Path(r).resolve() for r in runs))  # a run given twice counts once
    stored = [
        s for run, label in zip(folders, run_labels(folders), strict=True) for s in load_stored(run, label)
    ]
    sources = judge_sources(folders)
    names, skipped = ready_judges(_selector_names(selector_names, judges=True), sources, bool(selector_names))
    for name in names:
        if not is_judge(name):
            build_selector(name, on_error=on_error)  # an oracle or a broken entry fails here, once
    profiles = [str(v) for v in validators]
    labels = {s.key: [_read_mistakes(c) for c in s.candidates] for s in stored}
    labelled = any(any(m) for ms in labels.values() for m in ms)
    with tempfile.TemporaryDirectory() as scratch:  # the assembled outputs
        results = _evaluate_all(
            stored, names, profiles, scratch, workers or os.cpu_count() or 1, on_error, sources
        )
    down = unavailable_judges({n: [r.cells[(p, n)][3] for r in results for p in profiles] for n in names})
    if down and selector_names:
        raise ReselectError("; ".join(f"selector {n}: {why}" for n, why in down.items()))
    skipped |= down  # one line each (main prints them), never a row of validator_max's choices under its name
    names = [n for n in names if n not in down]
    judged = any(is_judge(n) for n in names)
    agents = sorted({c.agent for s in stored for c in s.candidates})
    by_key = {s.key: s for s in stored}
    oracle = {r.key: r.oracle for r in results}
    rows: list[dict[str, Any]] = []
    by_dataset: dict[str, dict[str, float]] = {}
    for profile in profiles:
        per_dataset: dict[str, dict[str, float]] = {}
        for name in names:
            row: dict[str, Any] = {"validator": Path(profile).stem, "selector": name}
            e2e: dict[str, float] = {}
            macro: dict[str, dict[str, list[float]]] = {p: {} for p in PROFILES}
            misses: dict[str, list[int]] = {}
            row["fallbacks"] = 0
            for res in results:
                metrics, chosen, fallbacks, _ = res.cells[(profile, name)]
                row["fallbacks"] += fallbacks
                for p in PROFILES:
                    for k, v in metrics[p].items():
                        macro[p].setdefault(k, []).append(float(v))
                if metrics["official"]:
                    e2e[res.key] = float(metrics["official"]["E2E"])
                if labelled:
                    kept = {i: k for i, k in chosen.items() if k is not None}
                    add_counts(misses, miss_rates(kept, labels[res.key]))
            per_dataset[name] = e2e
            by_dataset[f"{Path(profile).stem}/{name}"] = e2e
            for p, tag in (("official", ""), ("strict", "strict_")):
                for metric in ("E2E", "SCJ", "CF"):
                    vals = macro[p].get(metric, [])
                    row[f"{tag}{metric}"] = sum(vals) / len(vals) if vals else None
            row["E2E_lo"], row["E2E_hi"] = bootstrap_ci(e2e)  # the error bar of its bar in selectors.png
            bound = [b for k in e2e if (b := oracle[k]) is not None]
            row["oracle_E2E"] = sum(bound) / len(bound) if bound else None
            row["gap_to_oracle"] = (
                row["oracle_E2E"] - row["E2E"]
                if row["oracle_E2E"] is not None and row["E2E"] is not None
                else None
            )
            for t, (m, o) in sorted(misses.items()):
                row[f"miss_{t}"] = m / o if o else None
                row[f"n_{t}"] = o
            cells = [(by_key[r.key].candidates, *r.cells[(profile, name)][1::2]) for r in results]
            row.update(role_columns(cells, agents, judged))
            rows.append(row)
        base = per_dataset.get(BASELINE)
        for row in rows:
            if row["validator"] != Path(profile).stem:
                continue
            diffs = cluster_diffs(per_dataset[row["selector"]], base) if base is not None else {}
            test: tuple[float | None, ...] = (
                paired_cluster_test(diffs) if diffs and row["selector"] != BASELINE else (None,) * 4
            )
            row["dE2E_vs_validator_max"], row["dE2E_lo"], row["dE2E_hi"], row["p_vs_validator_max"] = test
            row["n_datasets"] = len(per_dataset[row["selector"]])
    stats = {
        "runs": [str(r) for r in runs],
        "datasets": len(stored),
        "limited": sum(s.limited for s in stored),
        "candidates": sum(len(s.candidates) for s in stored),
        "validations": sum(r.validations for r in results),
        "assembled": sum(r.assembled for r in results),
        "seconds": time.perf_counter() - start,
        "started": started,
        "per_dataset_E2E": by_dataset,
        "skipped": skipped,
    }
    return pd.DataFrame(rows), stats


def _miss_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Mistake types as rows, ``validator/selector`` as columns, cells ``rate (n)``; stays legible."""
    types = sorted(c[len("miss_") :] for c in frame.columns if c.startswith("miss_"))
    table: dict[str, list[str]] = {"mistake": types}
    for _, row in frame.iterrows():
        table[f"{row['validator']}/{row['selector']}"] = [
            "n/a" if pd.isna(row.get(f"miss_{t}")) else f"{row[f'miss_{t}']:.2f} ({int(row[f'n_{t}'])})"
            for t in types
        ]
    return pd.DataFrame(table)


def leaderboard_figure(frame: pd.DataFrame, path: Path) -> Path:
    """E2E per selector, one group of bars per validator profile, each bar with its dataset-bootstrap
    95 % CI (``E2E_lo``/``E2E_hi``), the oracle bound as a line, the y-axis from 0, the CI method in the
    caption."""
    import matplotlib.pyplot as plt

    from experiments.publish.figures import WIDTH_IN, error_bars, save_figure

    validators = list(dict.fromkeys(frame["validator"]))
    names = list(dict.fromkeys(frame["selector"]))
    fig, ax = plt.subplots(figsize=(WIDTH_IN * 0.7, 4.0))
    width = 0.8 / max(1, len(validators))
    for j, v in enumerate(validators):
        part = frame[frame["validator"] == v].set_index("selector")
        shown = part.reindex(names)  # a selector this profile did not rank: no bar, no error bar
        ax.bar(
            [i + j * width for i in range(len(names))],
            [float(y) for y in shown["E2E"]],
            width,
            label=f"validator {v}",
            yerr=error_bars(shown["E2E"], shown["E2E_lo"], shown["E2E_hi"]),
            capsize=2,
            error_kw={"elinewidth": 0.8, "ecolor": "black"},
        )
    bound = frame["oracle_E2E"].dropna()
    if len(bound):
        ax.axhline(float(bound.iloc[0]), color="black", linestyle="--", linewidth=1, label="oracle best-of-n")
    ax.set_ylim(0.0, 1.05)  # bars from 0: a bar's length is its value
    ax.set_xticks(
        [i + width * (len(validators) - 1) / 2 for i in range(len(names))], names, rotation=20, ha="right"
    )
    ax.set_ylabel("E2E (macro over datasets)")
    ax.set_title("Selectors on stored candidates", fontsize="medium")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small", frameon=False)
    ax.grid(axis="y", alpha=0.3)
    fig.text(0.5, 0.01, f"Error bars: {CI_METHOD}.", ha="center", va="bottom", fontsize="x-small")
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    return save_figure(fig, path)


def write_leaderboard(frame: pd.DataFrame, stats: Mapping[str, Any], out: Path) -> list[Path]:
    """Write ``selectors.{csv,md,tex,png}`` (and ``selectors_stats.json``) into ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    head = ["validator", "selector", "E2E", "E2E_lo", "E2E_hi", "strict_E2E", "SCJ", "CF", "oracle_E2E"]
    head.append("gap_to_oracle")
    fell_back = "fallbacks" in frame and bool((frame["fallbacks"] > 0).any())
    if fell_back:
        head.append("fallbacks")
    test = [
        "validator",
        "selector",
        "dE2E_vs_validator_max",
        "dE2E_lo",
        "dE2E_hi",
        "p_vs_validator_max",
        "n_datasets",
    ]
    miss = [
        "validator",
        "selector",
        *[c for c in frame.columns if c.startswith(("miss_", "n_")) and c != "n_datasets"],
    ]
    parts: list[str | pd.DataFrame] = [
        "# Selectors on stored candidates (macro over datasets; official profile unless marked strict)",
        f"E2E_lo, E2E_hi: {CI_METHOD}.",
        *(
            [
                "**Selector fallback**: `fallbacks` counts the samples where the selector raised and "
                "validator_max chose instead (--on-error fallback); those rows are not the selector's own "
                "result."
            ]
            if fell_back
            else []
        ),
        frame[head],
        f"## Paired test vs {BASELINE} (same validator; datasets as the unit): the mean difference of "
        f"per-dataset E2E with its {CI_METHOD}; {TEST_METHOD}",
        frame[test],
    ]
    if len(miss) > 2:
        parts += [
            "## Mistake miss rates: per mistake type, on the samples where some candidate avoided it (n), "
            "the share where the kept candidate has it (one column per validator/selector)",
            _miss_table(frame),
        ]
    parts += role_sections(frame, stats.get("skipped") or {}, stats.get("runs") or ())
    parts.append(
        f"{stats['datasets']} datasets, {stats['candidates']} stored candidates, "
        f"{stats['validations']} validations, {stats['assembled']} distinct outputs scored, "
        f"{stats['seconds']:.1f} s (no agent: the candidates are read from the run folders)"
        + (
            f"; {stats['limited']} of them from runs cut by benchmark.samples, scored on those samples"
            if stats.get("limited")
            else ""
        )
    )
    written = [*write_tables(out / "selectors", frame, parts, frame[head]), out / "selectors_stats.json"]
    atomic_write_text(written[3], json.dumps(dict(stats), indent=2) + "\n")
    written.append(leaderboard_figure(frame, out / "selectors.png"))
    return written


@cli_main("medstrat leaderboard")
def main(argv: Sequence[str] | None = None) -> int:
    """CLI; returns the exit code (0 success, 2 bad input; ``docs/cli.md``)."""
    from core.registry import OptionError, UnknownNameError
    from strategies.selectors import SelectorError

    parser = OneLineParser(prog="medstrat leaderboard", description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path, help="finished S3/S4 run folders (pooled)")
    parser.add_argument(
        "--selectors", default=None, help="comma-separated names (default: every registered one)"
    )
    parser.add_argument(
        "--validators", default="evidence,mdsbench", help="comma-separated validator profiles"
    )
    parser.add_argument("--imports", default="", help="comma-separated modules registering selectors")
    parser.add_argument(
        "--out", type=Path, default=None, help="output folder (default: <first RUN>/selectors)"
    )
    parser.add_argument("--workers", type=int, default=None, help="processes (default: the CPU count)")
    parser.add_argument(
        "--on-error",
        choices=("raise", "fallback"),
        default="raise",
        help="a selector that raises: stop (raise), or validator_max chooses there, counted (fallback)",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    runs = [existing_dir("RUN", r) for r in args.runs]
    try:
        import_plugins([m for m in args.imports.split(",") if m])
        wanted = [s for s in (args.selectors or "").split(",") if s] or None
        validators = [v for v in args.validators.split(",") if v]
        frame, stats = leaderboard(runs, wanted, validators, workers=args.workers, on_error=args.on_error)
    except (ReselectError, UnknownNameError, OptionError, ImportError, ValueError, SelectorError) as exc:
        raise CliError(str(exc)) from exc
    for line in judge_notes(frame, stats["skipped"]):
        print(f"medstrat leaderboard: {line}", file=sys.stderr)
    out = args.out or runs[0] / "selectors"
    written = write_leaderboard(frame, stats, out)
    from experiments.tracking.record import record_leaderboard

    record_leaderboard(out, runs, written)  # to MLflow, beside the source runs, when they were tracked
    print((out / "selectors.md").read_text(encoding="utf-8"))
    print("wrote " + ", ".join(str(p) for p in written), file=sys.stderr)
    return 0
