"""Ground truth (`VLM/ground_truth_*.json`, schema "1.1"): the only module that reads it.

Only `benchmark.score` may call the loaders here (DESIGN §2: the validator, agents and strategies never see
ground truth). Two views are offered:

- `load_ground_truth` → `GroundTruth`, typed pydantic models that keep every unknown key (``metrics``,
  ``evaluation_protocol``, our ``geometry`` extension, ...) so ``model_dump(by_alias=True)`` gives back what
  the file holds;
- `load_ground_truth_dict` → the raw JSON object, for the official scorer, which must see each value exactly
  as written (``"NA"`` vs ``null``, ``"4"`` vs ``4``; SPEC §3.4).

Field meanings are in SPEC §1; ``samples`` may also be spelled ``source_to_truth``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchmark.errors import GroundTruthError, load_json
from benchmark.fields import GT_SAMPLE_KEYS
from benchmark.manifest import VLM_DIR
from core.atomic import atomic_write_json

if TYPE_CHECKING:
    from benchmark._gt_models import GroundTruth, GTGeometry, GTSample

__all__ = [
    "GTGeometry",
    "GTSample",
    "GroundTruth",
    "ground_truth_path",
    "load_dataset_ground_truth",
    "load_ground_truth",
    "load_ground_truth_dict",
    "write_ground_truth",
]

# The typed models load on first use (PEP 562): the scorer reads the raw dict only and must not pay for
# pydantic (docs/performance.md, Scorer).
_MODELS = ("GTGeometry", "GTSample", "GroundTruth")


def __getattr__(name: str) -> Any:
    """Import the typed models on first access."""
    if name not in _MODELS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from benchmark import _gt_models

    value = getattr(_gt_models, name)
    globals()[name] = value
    return value


def ground_truth_path(dataset_root: str | Path) -> Path:
    """The dataset's ground-truth file: the first of ``VLM/ground_truth*.json`` in sorted order (SPEC §3.8).

    Args:
        dataset_root: The dataset folder.

    Returns:
        The path.

    Raises:
        GroundTruthError: No such file exists.
    """
    vlm = Path(dataset_root) / VLM_DIR
    found = sorted(p for p in vlm.glob("ground_truth*.json") if p.is_file())
    if not found:
        raise GroundTruthError(vlm, "no ground_truth*.json in this folder")
    return found[0]


def load_ground_truth_dict(path: str | Path) -> dict[str, Any]:
    """Read a ground-truth file as raw JSON, values exactly as written.

    Args:
        path: A ``ground_truth*.json`` file.

    Returns:
        The top-level JSON object.

    Raises:
        GroundTruthError: The file is missing or malformed (with line and column), its top level is not an
            object, or it has neither ``samples`` nor ``source_to_truth`` (or that map is not an object).
    """
    gt_path = Path(path)
    data = load_json(gt_path, GroundTruthError, what="ground truth")
    if not isinstance(data, dict):
        raise GroundTruthError(
            gt_path, f"top level must be a JSON object, not {_json_type(data)}", line=_first_line(gt_path)
        )
    key = next((k for k in GT_SAMPLE_KEYS if k in data), None)
    if key is None:
        raise GroundTruthError(
            gt_path, "ground truth has neither 'samples' nor 'source_to_truth'", line=_first_line(gt_path)
        )
    if not isinstance(data[key], dict):
        raise GroundTruthError(
            gt_path, f"'{key}' must be an object of index → sample, not {_json_type(data[key])}"
        )
    return data


def load_ground_truth(path: str | Path) -> GroundTruth:
    """Read a ground-truth file into typed models that keep unknown keys.

    Args:
        path: A ``ground_truth*.json`` file.

    Returns:
        The ground truth.

    Raises:
        GroundTruthError: As `load_ground_truth_dict`, or a field has the wrong type (the message gives its
            JSON path, e.g. ``samples.3.expected_extra``).
    """
    from pydantic import ValidationError

    from benchmark._gt_models import GroundTruth

    gt_path = Path(path)
    data = load_ground_truth_dict(gt_path)
    try:
        return GroundTruth.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '<top level>'}: {err['msg']}"
            for err in exc.errors()[:5]
        )
        more = f" (and {exc.error_count() - 5} more)" if exc.error_count() > 5 else ""
        raise GroundTruthError(gt_path, f"invalid ground truth: {problems}{more}") from None


def load_dataset_ground_truth(dataset_root: str | Path) -> GroundTruth:
    """`load_ground_truth` of `ground_truth_path` (dataset_root).

    Args:
        dataset_root: The dataset folder.

    Returns:
        The ground truth.

    Raises:
        GroundTruthError: No ground-truth file, or it is malformed.
    """
    return load_ground_truth(ground_truth_path(dataset_root))


def write_ground_truth(path: str | Path, ground_truth: GroundTruth | dict[str, Any]) -> Path:
    """Write a ground-truth file atomically, as the benchmark does (``indent=2``, ``ensure_ascii=False``).

    Args:
        path: Destination (``<dataset>/VLM/ground_truth_<name>.json``).
        ground_truth: A `GroundTruth` (dumped by alias: ``class``, ``samples``) or a plain dict.

    Returns:
        The written path.
    """
    data: Any = ground_truth
    if not isinstance(ground_truth, dict):
        from benchmark._gt_models import GroundTruth

        if isinstance(ground_truth, GroundTruth):
            data = ground_truth.model_dump(mode="json", by_alias=True)
    return atomic_write_json(path, data)


def _json_type(value: Any) -> str:
    names = {list: "an array", str: "a string", bool: "a boolean", int: "a number", float: "a number"}
    return "null" if value is None else names.get(type(value), type(value).__name__)


def _first_line(path: Path) -> int:
    """The line where the top-level value starts (the object that lacks a key), 1 when unknown."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError):
        return 1
    stripped = text.lstrip()
    return text[: len(text) - len(stripped)].count("\n") + 1
