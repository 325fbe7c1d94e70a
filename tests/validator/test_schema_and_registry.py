"""JSON Schema export, generated docs, profiles and the registry, the checklist, the CLI."""

from __future__ import annotations

import copy
import functools
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from validator.checklist import checklist
from validator.docs import schema_markdown
from validator.registry import ProfileError, load_profile
from validator.schema import json_schema
from validator.validate import validate

REPO = Path(__file__).resolve().parents[2]


@functools.cache
def _validator(kind: str) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(json_schema()[kind])


def test_exported_schema_declares_draft_2020_12_for_both_documents() -> None:
    schema = json_schema()
    for kind in ("annotation", "data_meta"):
        assert schema[kind]["$schema"] == "https://json-schema.org/draft/2020-12/schema"
        jsonschema.Draft202012Validator.check_schema(schema[kind])


def _oracle_annotations(suite: Path) -> list[dict[str, Any]]:
    return [
        json.loads(p.read_text())
        for p in sorted(suite.glob("*/VLM/oracle/*/standardized_annotations/*.json"))
    ]


def test_schema_accepts_every_suite_oracle_annotation_and_data_meta(suite: Path) -> None:
    docs = _oracle_annotations(suite)
    assert docs
    for doc in docs:
        _validator("annotation").validate(doc)
    for meta in suite.glob("*/VLM/oracle/*/data_meta.json"):
        _validator("data_meta").validate(json.loads(meta.read_text()))


def test_schema_accepts_the_conformance_oracles(conformance_dir: Path) -> None:
    paths = sorted(
        conformance_dir.glob("cases/*/VLM/oracle/agent1_data_organization/standardized_annotations/*.json")
    )
    assert paths
    for p in paths:
        _validator("annotation").validate(json.loads(p.read_text()))


def _fault(doc: dict[str, Any], name: str) -> dict[str, Any]:
    d = copy.deepcopy(doc)
    sample, spatial = d["context"]["sample"], d["media_geometry"]["spatial"]
    if name == "two_spatial":
        spatial["three_d" if spatial["common"] else "common"] = {"pixel_size_px": [8, 8]}
    elif name == "all_tasks":
        d["tasks"] = {
            "classification": {"schema_variant": "multiclass", "label": 0},
            "segmentation": {"schema_variant": "2d_coco"},
            "detection": {"schema_variant": "2d"},
        }
    elif name == "three_D_key":
        spatial["three_D"] = spatial.pop("three_d")
    elif name == "null_sex":
        sample["sex"] = None
    elif name == "missing_tasks":
        del d["tasks"]
    elif name == "missing_record":
        del d["record"]
    return d


@pytest.mark.parametrize(
    "name", ["two_spatial", "all_tasks", "three_D_key", "null_sex", "missing_tasks", "missing_record"]
)
def test_schema_rejects_structural_faults(suite: Path, name: str) -> None:
    doc = _oracle_annotations(suite)[0]
    assert not _validator("annotation").is_valid(_fault(doc, name))


def test_docs_schema_md_is_generated_from_the_models() -> None:
    assert (REPO / "docs" / "schema.md").read_text() == schema_markdown()


def test_profiles_list_their_checks_with_weights() -> None:
    mds = load_profile("mdsbench")
    assert mds.weights == pytest.approx(
        {
            "top_level_blocks": 0.06,
            "record": 0.08,
            "image_path": 0.10,
            "media": 0.08,
            "spatial": 0.06,
            "task_payload": 0.16,
            "context_sample": 0.06,
            "source_trace": 0.08,
            "no_desc_options": 0.02,
            "critical_nonempty_ratio": 0.02,
            "extra_completeness": 0.18,
            "annotation_type_consistency": 0.10,
        }
    )
    ev = load_profile("evidence")
    assert "annotation_type_consistency" not in ev.weights
    assert {"source_in_dataset", "source_renders_like_image", "mask_matches_image"} <= set(ev.weights)


def test_user_profile_adds_a_check_from_its_own_module(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, oracle_copy: Any
) -> None:
    (tmp_path / "my_checks.py").write_text(
        "from validator.registry import check\nfrom validator.report import CheckResult\n\n"
        "@check('leaf_task_is_snake_case', weight=1.0, fields=('media_geometry.media.leaf_task',))\n"
        "def leaf(sample):\n"
        "    v = sample.get('media_geometry.media.leaf_task') or ''\n"
        "    return CheckResult(1.0 if v == v.lower() else 0.0, 'use snake_case')\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    profile = tmp_path / "mine.yaml"
    profile.write_text(
        "profile: mine\nmodule: my_checks\nchecks:\n  leaf_task_is_snake_case: 1.0\n  record: 1.0\n"
    )
    c = oracle_copy("synth-histology-png")
    report = validate(c.root, c.dataset, profile=profile)
    assert report.profile == "mine"
    assert set(report.samples[0].checks) == {"leaf_task_is_snake_case", "record"}


def test_unknown_check_in_a_profile_names_the_valid_ones(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("profile: bad\nchecks:\n  no_such_check: 1.0\n")
    with pytest.raises(ProfileError, match=r"registered: .*image_path"):
        load_profile(bad)
    with pytest.raises(ProfileError, match=r"available: .*evidence"):
        load_profile("no-such-profile")


def test_checklist_lists_failed_high_risk_checks_with_editable_fields(oracle_copy: Any) -> None:
    c = oracle_copy("synth-histology-png")
    doc = c.load(0)
    doc["media_geometry"]["media"]["dimension"] = "3D"
    c.save(0, doc)
    items = checklist(validate(c.root, c.dataset))
    assert items and all(item.index == 0 for item in items)
    fields = {f for item in items for f in item.editable_fields}
    assert "media_geometry.media.dimension" in fields
    assert all(item.message for item in items)


def test_cli_prints_json_report(suite: Path) -> None:
    ds = suite / "synth-histology-png"
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "validator",
            str(ds / "VLM" / "oracle"),
            "--dataset-dir",
            str(ds),
            "--profile",
            "mdsbench",
            "--json",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    data = json.loads(out.stdout)
    assert data["profile"] == "mdsbench"
    assert set(data["samples"]["0"]["checks"]) >= {"image_path", "source_trace"}
    assert 0 <= data["samples"]["0"]["total"] <= 1
    assert "total" in data["data_meta"]


def test_cli_schema_command_prints_both_documents() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "validator", "schema"], capture_output=True, text=True, check=True
    )
    assert set(json.loads(out.stdout)) == {"annotation", "data_meta"}


def test_cli_table_fits_120_columns_and_names_the_failed_checks(suite: Path, oracle_copy) -> None:
    cand = oracle_copy("synth-kidney-ct-nifti")
    damaged = cand.load(0)
    damaged["media_geometry"]["media"]["dimension"] = "video"
    damaged["context"]["sample"]["extra"]["source_file"] = "data/nowhere.bin"
    cand.save(0, damaged)
    cand.ann_path(1).unlink()
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "validator",
            str(cand.root),
            "--dataset-dir",
            str(cand.dataset),
            "--checklist",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    everything = out.stdout.splitlines()
    assert max(len(line) for line in everything) <= 120, max(everything, key=len)
    assert any(line.startswith("- [index 0]") for line in everything)  # the checklist, wrapped too
    lines = everything[: next(i for i, line in enumerate(everything) if "mean total" in line)]
    # One entry per sample: its row plus indented continuation lines when the failed checks wrap.
    rows: dict[str, str] = {}
    last = ""
    for line in lines[2:]:
        if line.startswith(" " * 10):
            rows[last] += " " + line.strip()
        else:
            last = line.split()[0]
            rows[last] = line
    assert "source_in_dataset=0.00" in rows["0"] and "valid_json_object=0.00" in rows["1"]
    # Exactly the checks below 1 that --json reports, for every sample.
    full = subprocess.run(
        [sys.executable, "-m", "validator", str(cand.root), "--dataset-dir", str(cand.dataset), "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    for index, sample in json.loads(full.stdout)["samples"].items():
        failed = {name for name, score in sample["checks"].items() if score < 1.0}
        shown = set(re.findall(r"(\w+)=\d", rows[index]))
        assert shown == failed, index
        assert ("all checks pass" in rows[index]) == (not failed)
