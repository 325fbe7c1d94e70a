"""Where a classification dataset keeps its labels, and its class table.

Label sources the baseline considers (a dataset-level decision point, ``label_source``):

- ``table``: a CSV/TSV/JSON/parquet table joined to the sample by an id column; the label column is ranked by
  `agents.rules.labels.label_column_hypotheses`; numeric codes are named through a README code map;
- ``own_row``: the sample's own file is a table row (parquet) with a label column;
- ``folder``: the parent folder is the class (class-per-folder layouts), or a folder higher up when the parent
  names the subject (``<class>/<subject>/<file>``);
- ``filename``: a word of the file name is the class (``cell_040_mitotic.tif``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import pandas as pd

from agents.rules.context import DatasetContext
from agents.rules.decisions import Decider, Hypothesis
from agents.rules.labels import class_order_hypotheses, label_column_hypotheses
from agents.rules.source import stem
from agents.rules.tables import Join, join, load_table, sample_ids
from agents.rules.vocab import tokens

__all__ = ["LabelPlan", "plan_labels", "sample_label", "table_subject"]


@dataclass
class LabelPlan:
    """The dataset-level answer: where labels come from and the class table.

    Attributes:
        kind: ``table`` | ``own_row`` | ``folder`` | ``filename`` | ``none``.
        table: The label table (``table`` kind).
        column: The label column (``table``/``own_row``).
        code_map: ``code → name`` for numeric label columns.
        classes: Class names; the id is the position.
        level: ``folder`` kind: which ancestor folder is the class (1 = the parent).
    """

    kind: str
    table: object = None
    column: str = ""
    code_map: Mapping[int, str] | None = None
    classes: tuple[str, ...] = ()
    level: int = 1


def _code_map_for(ctx: DatasetContext, column: str, frame: pd.DataFrame) -> dict[int, str] | None:
    words = [w.rstrip("s") for w in tokens(column)]
    for key, mapping in ctx.code_maps.items():
        if not key or any(p.rstrip("s") in words for p in key.split("_")):
            return dict(mapping)
    name_col = next(
        (
            c
            for c in frame.columns
            if str(c).lower() in (f"{column.lower()}_name", "label_name", "class_name")
        ),
        None,
    )
    if name_col is not None and name_col != column:
        pairs = {}
        for code, name in zip(frame[column], frame[name_col], strict=False):
            try:
                pairs[int(float(code))] = str(name)
            except (TypeError, ValueError):
                return None
        return pairs
    return None


def _filename_word(ctx: DatasetContext, rel: str) -> tuple[int, str] | None:
    """The position (from the end) and value of the file-name word that varies with a small vocabulary."""
    folder = rel.rsplit("/", 1)[0]
    names = [stem(f.rsplit("/", 1)[-1]) for f in ctx.files.files if f.rsplit("/", 1)[0] == folder]
    words = tokens(stem(rel.rsplit("/", 1)[-1]))
    for pos in (-1, 0):
        vocab = {tokens(n)[pos] for n in names if tokens(n)}
        if 2 <= len(vocab) <= max(2, len(names) // 2) and all(v.isalpha() for v in vocab) and words:
            return pos, words[pos]
    return None


def plan_labels(ctx: DatasetContext, decider: Decider) -> LabelPlan:
    """Decide the label source of a classification dataset (decision points ``label_source``,
    ``label_column``, ``class_order``) and build its class table; ``kind="none"`` when nothing on disk looks
    like a label.
    """
    first = ctx.sources[0]
    hyps: list[Hypothesis[LabelPlan]] = []
    # The first samples that a table joins decide it (one row missing from a table must not hide it).
    probes = [sample_ids(rel, header=ctx.header_ids(rel)) for rel in ctx.sources[:3]]
    readme = ctx.readme.lower()
    for table in ctx.tables:
        found = next((f for f in (join(table, ids) for ids in probes) if f is not None), None)
        if found is None:
            continue
        # A table the README names ("labels in qa/outcomes.csv") is the documented label source.
        named = 1.0 if table.relpath.rsplit("/", 1)[-1].lower() in readme else 0.0
        for col_h in label_column_hypotheses(table.frame, found.column, ctx.code_maps)[:3]:
            plan = LabelPlan("table", table, col_h.value)
            hyps.append(
                Hypothesis(
                    plan,
                    2.0 + col_h.score + 0.3 * found.strength + named,
                    f"{table.relpath}:{col_h.value}",
                    f"table:{table.relpath}:{col_h.value}",
                )
            )
    if first.lower().endswith(".parquet"):
        owns = [t.frame for t in (load_table(ctx.root / s, s) for s in ctx.sources[:200]) if t is not None]
        if owns:
            for col_h in label_column_hypotheses(pd.concat(owns), "", ctx.code_maps)[:2]:
                hyps.append(
                    Hypothesis(
                        LabelPlan("own_row", None, col_h.value),
                        3.0 + col_h.score,
                        f"own row column {col_h.value}",
                        f"own_row:{col_h.value}",
                    )
                )
    parents = {s.rsplit("/", 2)[-2] for s in ctx.sources if s.count("/") >= 2}
    if len(parents) >= 2 and all(not any(ch.isdigit() for ch in p) for p in parents):
        hyps.append(Hypothesis(LabelPlan("folder"), 3.0, "class-per-folder layout", "folder"))
    elif len(parents) >= 2:
        hyps.append(Hypothesis(LabelPlan("folder"), 0.2, "folders vary", "folder"))
        # The parent names the subject (<class>/<subject>/<file>): a higher folder level whose few, repeating,
        # digit-free names vary across samples may be the class. Ranked below a joined label table, because
        # site or scanner folders look the same.
        for level in (2, 3):
            above = [_ancestor(s, level) for s in ctx.sources]
            distinct = set(above)
            if None in distinct:
                break
            if 2 <= len(distinct) < len(above) and all(
                not any(c.isdigit() for c in str(v)) for v in distinct
            ):
                hyps.append(
                    Hypothesis(
                        LabelPlan("folder", level=level),
                        1.5,
                        f"class folders {level} levels up",
                        f"folder:{level}",
                    )
                )
                break
    if _filename_word(ctx, first) is not None:
        hyps.append(
            Hypothesis(LabelPlan("filename"), 3.2, "a small vocabulary of words in file names", "filename")
        )
    if not hyps:
        return LabelPlan("none", classes=("unknown",))
    plan = decider.choose("label_source", hyps)
    values, first_seen = _all_labels(ctx, plan)
    if plan.code_map:
        classes = tuple(plan.code_map[k] for k in sorted(plan.code_map))
        plan.classes = classes
        return plan
    order = decider.choose("class_order", class_order_hypotheses(values, first_seen))
    plan.classes = tuple(order)
    return plan


def _all_labels(ctx: DatasetContext, plan: LabelPlan) -> tuple[list[str], list[str]]:
    """Every class value the source holds (dataset-wide), named through the code map when numeric."""
    raw: list[str] = []
    if plan.kind == "table" and plan.table is not None:
        frame = plan.table.frame  # type: ignore[attr-defined]
        plan.code_map = _code_map_for(ctx, plan.column, frame)
        raw = [str(v).strip() for v in frame[plan.column]]
    elif plan.kind == "own_row":
        for src in ctx.sources:
            own = load_table(ctx.root / src, src)
            if own is not None and plan.column in own.frame.columns:
                raw += [str(v).strip() for v in own.frame[plan.column]]
                if plan.code_map is None:
                    plan.code_map = _code_map_for(ctx, plan.column, own.frame)
                elif (more := _code_map_for(ctx, plan.column, own.frame)) is not None:
                    plan.code_map = {**plan.code_map, **more}
    elif plan.kind == "folder":
        depth = ctx.sources[0].count("/") - plan.level
        raw = [f.split("/")[depth] for f in ctx.files.files if f.count("/") > depth]
        raw = [r for r in raw if r in {s.split("/")[depth] for s in ctx.sources}] or raw
    elif plan.kind == "filename":
        for src in ctx.sources:
            hit = _filename_word(ctx, src)
            if hit:
                folder = src.rsplit("/", 1)[0]
                raw += [
                    tokens(stem(f.rsplit("/", 1)[-1]))[hit[0]]
                    for f in ctx.files.files
                    if f.rsplit("/", 1)[0] == folder and tokens(stem(f.rsplit("/", 1)[-1]))
                ]
                break
    if plan.code_map is not None and raw and all(_is_int(r) for r in raw):
        raw = [plan.code_map.get(int(float(r)), r) for r in raw]
    return list(dict.fromkeys(raw)), raw


def _ancestor(rel: str, level: int) -> str | None:
    """The folder ``level`` steps above the file ``rel`` (``data/`` itself excluded), or None."""
    parts = rel.split("/")
    return parts[-1 - level] if len(parts) - 1 - level >= 1 else None


def _is_int(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


_SUBJECT_COLUMNS = (
    "participant_id",
    "participant",
    "subject_id",
    "subject",
    "patient_id",
    "patientid",
    "patient",
)


def table_subject(found: Join | None, occurrence: int = 0) -> str | None:
    """The participant/subject/patient column of a joined row (another column than the join key)."""
    if found is None:
        return None
    lower = {str(c).strip().lower().replace(" ", "_"): str(c) for c in found.rows.columns}
    for name in _SUBJECT_COLUMNS:
        col = lower.get(name)
        if col is not None:
            value = str(found.rows.iloc[min(occurrence, len(found.rows) - 1)][col]).strip()
            return value or None
    return None


def sample_label(
    ctx: DatasetContext,
    plan: LabelPlan,
    rel: str,
    *,
    patient_id: str | None,
    occurrence: int,
    header: Mapping[str, object] | None = None,
) -> tuple[str | None, Join | None, str | None]:
    """One sample's class name under the dataset's label plan: ``(class name or None, the table join or None,
    the file-name class word or None)``.

    ``occurrence`` is how many earlier manifest lines name the same file (it picks the row of a shared file);
    ``patient_id`` the DICOM PatientID and ``header`` the sample's header facts (UIDs that may key the table).
    """
    value: str | None = None
    found: Join | None = None
    word: str | None = None
    if plan.kind == "table" and plan.table is not None:
        found = join(plan.table, sample_ids(rel, patient_id, header))  # type: ignore[arg-type]
        if found is not None and plan.column in found.rows.columns:
            rows = found.rows
            value = str(rows.iloc[min(occurrence, len(rows) - 1)][plan.column]).strip()
    elif plan.kind == "own_row":
        own = load_table(ctx.root / rel, rel)
        if own is not None and plan.column in own.frame.columns and len(own.frame):
            value = str(own.frame.iloc[min(occurrence, len(own.frame) - 1)][plan.column]).strip()
    elif plan.kind == "folder":
        value = _ancestor(rel, plan.level)
    elif plan.kind == "filename":
        hit = _filename_word(ctx, rel)
        if hit is not None:
            value = word = hit[1]
    if value is not None and plan.code_map is not None and _is_int(value):
        value = plan.code_map.get(int(float(value)), value)
    return value, found, word
