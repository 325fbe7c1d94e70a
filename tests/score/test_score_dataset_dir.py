"""The per-dataset CLI as users run it: the JSON it writes holds the reference's numbers, it stays light,
and its plain table prints what the pandas analyses print."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from score_builders import Builder

from benchmark.score import analysis, table
from benchmark.score._io import NotPlainJson, dumps_indented
from benchmark.score.constants import METRIC_NAMES, ROUNDED_METRICS
from benchmark.score.dataset import make_context, score_prediction
from benchmark.score.evaluate import score_dataset, write_results
from benchmark.score.profiles import resolve

CONFORMANCE_DATASETS = (
    "5002837_folder",
    "drive-digital-retinal-images-for-vessel-extraction",
    "echonet-pediatric",
    "kits23",
    "microscopy-demo",
    "rsna-pneumonia-detection-challenge",
)
# The reference's per-sample values, by the names the conformance vectors store them under.
_PER_SAMPLE = ("matched_annotation_index", "image_exists", "image_valid", "pair_valid", "source_score")
_SCORES = ("schema_valid_score", "semantic_score", "content_fidelity_score", "schema_checks")


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "benchmark.score", *args], capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize("dataset", CONFORMANCE_DATASETS)
def test_dataset_dir_writes_the_reference_numbers(
    conformance_dir: Path, tmp_path: Path, dataset: str
) -> None:
    out = tmp_path / "eval.json"
    proc = _cli("--dataset-dir", str(conformance_dir / "cases" / dataset), "--output", str(out), "--no-print")
    assert proc.returncode == 0, proc.stderr
    got = json.loads(out.read_text(encoding="utf-8"))["models"]
    want = json.loads((conformance_dir / "expected" / f"{dataset}.json").read_text(encoding="utf-8"))[
        "models"
    ]
    assert set(got) == set(want)
    for model, w in want.items():
        g = got[model]
        assert g["error"] is None, model
        for name in METRIC_NAMES:
            exact = name in ROUNDED_METRICS
            expected = w["metrics"][name] if exact else pytest.approx(w["metrics"][name], abs=1e-9)
            assert g["metrics"][name] == expected, (model, name)
        assert [s["index"] for s in g["per_sample"]] == [s["index"] for s in w["per_sample"]], model
        for gs, ws in zip(g["per_sample"], w["per_sample"], strict=True):
            for field in (*_PER_SAMPLE, *_SCORES):
                assert gs[field] == ws[field], (model, ws["index"], field)
            for field in ("completeness", "validity", "non_redundancy"):
                assert gs["information_quality_details"][field] == ws[f"information_quality_details.{field}"]


def test_dataset_dir_imports_neither_pandas_nor_numpy_nor_pydantic(build_dataset: Builder) -> None:
    root = build_dataset(n=3)
    code = (
        "import sys\n"
        "from benchmark.score.__main__ import main\n"
        f"rc = main(['--dataset-dir', {str(root)!r}, '--output', {str(root / 'out.json')!r}])\n"
        "heavy = [m for m in ('pandas', 'numpy', 'pydantic', 'pyarrow') if m in sys.modules]\n"
        "print('HEAVY=' + ','.join(heavy), 'RC=' + str(rc))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "\n| m | 1.0000 |" in proc.stdout  # the table was printed
    assert proc.stdout.strip().endswith("HEAVY= RC=0")


def _results(build_dataset: Builder) -> dict[str, Any]:
    def odd(i: int, ann: dict[str, Any]) -> None:
        if i % 2:  # a different score per model-visible sample, so the row is not all 1.0
            ann["media_geometry"]["media"]["task_type"] = "detection"

    root = build_dataset(n=3, edit=odd, model="run_a|1")
    return {"tiny": score_dataset(root)}


@pytest.mark.parametrize("fmt", table.FORMATS)
def test_plain_table_prints_what_the_pandas_frame_prints(build_dataset: Builder, fmt: str) -> None:
    results = _results(build_dataset)
    plain = table.macro_table(results)
    frame = analysis.macro_table(results)
    assert isinstance(frame, pd.DataFrame) and list(frame.columns) == list(table.MACRO_COLUMNS)
    text = table.render(plain, fmt)
    assert text == analysis.render(frame, fmt)  # pandas' own to_csv for csv
    assert 0.0 < plain.rows[0][1] < 1.0 or 0.0 < plain.rows[0][3] < 1.0  # a real, non-trivial row


def test_render_refuses_an_unknown_format(build_dataset: Builder) -> None:
    with pytest.raises(ValueError, match="unknown table format 'html'"):
        table.render(table.macro_table(_results(build_dataset)), "html")


_TRICKY: list[Any] = [
    {},
    [],
    {"a": [], "b": {}, "c": [[], [{}]], "": None},
    {"é ü 汉": 'tab\there "quoted" back\\slash \u2028 \x00', "n": [True, False, None]},
    [0, -1, 10**30, 0.1, 1e-07, 1e16, -0.0, 1.0, float("nan"), float("inf"), float("-inf")],
    {"models": {"m": {"per_sample": [{"index": "0", "reason": None, "content_blocks": {}}]}}},
    "just a string",
    3.5,
]


@pytest.mark.parametrize("value", _TRICKY, ids=range(len(_TRICKY)))
def test_fast_writer_is_byte_identical_to_json_dumps(value: Any) -> None:
    assert dumps_indented(value) == json.dumps(value, indent=2, ensure_ascii=False)


def test_write_results_falls_back_to_json_for_values_it_does_not_know(tmp_path: Path) -> None:
    for odd in ({"p": Path("a/b")}, {1: "int key"}, {"t": (1, 2)}):
        with pytest.raises(NotPlainJson):
            dumps_indented(odd)
        out = write_results(odd, tmp_path / "r.json")
        assert out.read_text(encoding="utf-8") == json.dumps(
            odd, indent=2, ensure_ascii=False, default=lambda p: p.as_posix()
        )


def test_a_context_is_refused_for_another_ground_truth(build_dataset: Builder) -> None:
    root = build_dataset(n=2)
    gt = json.loads(next((root / "VLM").glob("ground_truth*.json")).read_text(encoding="utf-8"))
    pred = root / "VLM" / "m" / "agent1_data_organization"
    ctx = make_context(gt, resolve("official"), root)
    shared = score_prediction(pred, gt, dataset_root=root, context=ctx)
    assert shared.to_dict() == score_prediction(pred, gt, dataset_root=root).to_dict()
    with pytest.raises(ValueError, match="another ground truth"):
        score_prediction(pred, dict(gt), dataset_root=root, context=ctx)
    with pytest.raises(ValueError, match="another ground truth"):
        score_prediction(pred, gt, profile="strict", dataset_root=root, context=ctx)


@pytest.mark.parametrize(
    "values",
    [
        [0.0],
        [-0.0],
        [1.0],
        [0.1],
        [2 / 3],
        [5e-324],
        [1e308],
        [float("inf")],
        [0.1, 0.2],
        [1e-3, -0.0, 1 / 3],
    ],
)
def test_the_table_mean_is_statistics_mean_bit_for_bit(values: list[float]) -> None:
    import statistics
    import struct

    from benchmark.score.aggregate import _mean

    assert struct.pack("d", _mean(values)) == struct.pack("d", statistics.mean(values))
