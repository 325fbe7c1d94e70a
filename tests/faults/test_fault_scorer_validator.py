"""Scorer and validator on malformed outputs: non-object JSON, truncated PNG, a PNG header claiming
100000 × 100000 pixels."""

from __future__ import annotations

import struct
import tracemalloc
import zlib
from pathlib import Path

import pytest

from benchmark.score.evaluate import score_dataset
from testbed.synth.suite import generate_suite
from validator.validate import validate

DATASET = "synth-histology-png"


def huge_png_header(width: int = 100_000, height: int = 100_000) -> bytes:
    """A syntactically valid PNG whose IHDR claims ``width × height`` 8-bit grey pixels (data: 1 row)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data))
            + kind
            + data
            + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
        )

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", ihdr)
        + chunk(b"IDAT", zlib.compress(b"\x00" * 64))
        + chunk(b"IEND", b"")
    )


@pytest.fixture(scope="module")
def corrupted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The histology dataset with a perfect (oracle) run whose samples 0-2 are then corrupted."""
    root = tmp_path_factory.mktemp("suite")
    generate_suite(root, only=[DATASET], oracle="oracle")
    out = root / DATASET / "VLM" / "oracle" / "agent1_data_organization"
    (out / "standardized_annotations" / "0.json").write_text("[1, 2, 3]", encoding="utf-8")
    png = out / "images" / "1.png"
    png.write_bytes(png.read_bytes()[:60])
    (out / "images" / "2.png").write_bytes(huge_png_header())
    return root / DATASET


def test_validator_scores_malformed_outputs_as_invalid_without_a_huge_allocation(corrupted: Path) -> None:
    """Expect: samples 0-2 get totals well below the untouched samples' 1.0 with messages naming the
    problem; no exception; peak traced allocation stays under 64 MB (the 10-gigapixel header is never
    decoded)."""
    out = corrupted / "VLM" / "oracle" / "agent1_data_organization"
    tracemalloc.start()
    try:
        report = validate(out, corrupted, use_cache=False)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 64 * 2**20
    good = report.samples[5].total
    for index in (0, 1, 2):
        sample = report.samples[index]
        assert sample.total < good - 0.05, (index, sample.total)
        assert any(o.result.message for o in sample.failed())
    assert "object" in report.samples[0].checks["valid_json_object"].result.message.lower()


def _score(corrupted: Path, profile: str) -> dict:
    tracemalloc.start()
    try:
        result = score_dataset(corrupted, models=["oracle"], profile=profile)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 64 * 2**20
    return dict(result["models"]["oracle"])


def test_official_scorer_records_a_non_object_annotation_as_the_models_error_like_the_reference(
    corrupted: Path,
) -> None:
    """Expect (reference quirk, docs/scoring.md): no exception; the model gets an ``error`` naming the
    file and the reason, and is skipped in the macro mean."""
    model = _score(corrupted, "official")
    assert model["error"] == "standardized_annotations/0.json top level is a JSON list, not an object"


def test_strict_scorer_marks_malformed_outputs_invalid_per_sample_and_scores_the_rest(
    corrupted: Path,
) -> None:
    """Expect: no exception, no model error; the non-object JSON is an invalid sample, the truncated PNG
    fails the pair check; the untouched samples keep full marks."""
    model = _score(corrupted, "strict")
    assert not model.get("error")
    per = {int(p["index"]): p for p in model["per_sample"]}
    assert per[0]["schema_valid_score"] == 0.0 and not per[0]["pair_valid"]
    assert not per[1]["pair_valid"]
    assert per[5]["schema_valid_score"] == 1.0 and per[5]["pair_valid"]


def test_strict_scorer_rejects_a_png_whose_header_claims_ten_gigapixels(corrupted: Path) -> None:
    """Expect: the image of sample 2 (IHDR 100000 × 100000, one row of data) is not a valid pair under
    strict, and scoring it allocates nothing large."""
    model = _score(corrupted, "strict")
    per = {int(p["index"]): p for p in model["per_sample"]}
    assert not per[2]["pair_valid"]
