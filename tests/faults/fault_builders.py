"""Inputs shared by the fault-injection tests: a tiny PNG dataset, a scripted LiteLLM conversation that
standardizes it, a fast agent on the fake server, and a scan proving every JSON/PNG on disk is whole."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from agents.base import Limits, ManifestEntry, Task
from agents.llm.agent import LiteLLMAgent
from agents.llm.options import AgentOptions
from agents.model.config import ModelConfig, TokenPrice
from agents.model.retry import RetryPolicy
from testbed.fakeserver import FakeServer, Reply, assistant_turn, tool_call

FAST_RETRY = RetryPolicy(max_attempts=12, initial_s=0.001, max_wait_s=0.005, jitter_s=0.001)
USAGE = (50, 10)
N_SAMPLES = 3


def png_dataset(root: Path) -> Path:
    """A 3-sample 2D classification dataset of PNGs (``data/<class>/<i>.png``) with a manifest."""
    rng = np.random.default_rng(0)
    lines = []
    for i in range(N_SAMPLES):
        cls = "benign" if i % 2 == 0 else "malignant"
        path = root / "data" / cls / f"img{i}.png"
        path.parent.mkdir(parents=True, exist_ok=True)
        Image.fromarray(rng.integers(0, 255, size=(24, 32)).astype(np.uint8)).save(path)
        lines.append(f"{i} /authors/box/tiny/data/{cls}/img{i}.png\n")
    (root / "VLM").mkdir(parents=True, exist_ok=True)
    (root / "VLM" / "random.txt").write_text("".join(lines), encoding="utf-8")
    (root / "VLM" / "ground_truth_tiny.json").write_text('{"secret": 1}', encoding="utf-8")
    return root


def png_task(root: Path, out_dir: Path, **options: Any) -> Task:
    """The task of `png_dataset` writing into ``out_dir``."""
    entries = tuple(
        ManifestEntry(i, f"data/{'benign' if i % 2 == 0 else 'malignant'}/img{i}.png")
        for i in range(N_SAMPLES)
    )
    options.setdefault("limits", Limits(max_turns=30, max_tool_calls=80, max_tokens=10_000_000))
    return Task(root=root, name="tiny", entries=entries, out_dir=out_dir, **options)


def annotation(i: int) -> dict[str, Any]:
    """A plausible classification annotation of sample ``i``."""
    cls = "benign" if i % 2 == 0 else "malignant"
    return {
        "record": {"schema_version": "1.0.1", "dataset_name": "tiny", "image_path": f"images/{i}.png"},
        "context": {
            "sample": {
                "subject_id": f"img{i}",
                "sex": "unknown",
                "race_ethnicity": "NA",
                "site_id": "NA",
                "modality_primary": "Dermoscopy",
                "extra": {"source_file": f"data/{cls}/img{i}.png", "original_filename": f"img{i}.png"},
            },
            "text": {},
        },
        "media_geometry": {
            "media": {"task_type": "classification", "dimension": "2D"},
            "spatial": {"common": {"pixel_size_px": [32, 24]}, "three_d": {}, "video": {}},
        },
        "tasks": {
            "classification": {
                "schema_variant": "multiclass",
                "class_names": {"0": "benign", "1": "malignant"},
                "label": i % 2,
                "label_name": cls,
            },
            "segmentation": {},
            "detection": {},
        },
    }


def standard_steps() -> list[Reply]:
    """List, then per sample render + write, then data_meta and finish: N_SAMPLES + 3 model turns."""
    steps = [assistant_turn(tool_call("list_dir", {"path": "data"}, "c_list"))]
    for i in range(N_SAMPLES):
        cls = "benign" if i % 2 == 0 else "malignant"
        steps.append(
            assistant_turn(
                tool_call("render", {"index": i, "source": f"data/{cls}/img{i}.png"}, f"r{i}"),
                tool_call("write_annotation", {"index": i, "annotation": annotation(i)}, f"w{i}"),
            )
        )
    meta = {
        "dataset_name": "tiny",
        "modality_primary": ["Dermoscopy"],
        "task_type": ["classification"],
        "data_volume": {"total": N_SAMPLES},
        "valid_image_n": {"total": N_SAMPLES},
    }
    steps.append(assistant_turn(tool_call("write_data_meta", {"data_meta": meta}, "c_meta")))
    steps.append(assistant_turn(tool_call("finish", {"summary": "done"}, "c_fin")))
    return [Reply(content=s.content, tool_calls=s.tool_calls, usage=USAGE) for s in steps]


def make_agent(server: FakeServer, **kwargs: Any) -> LiteLLMAgent:
    """A LiteLLM agent on the fake server with millisecond retries."""
    kwargs.setdefault("retry", FAST_RETRY)
    kwargs.setdefault("timeout_s", 5.0)
    kwargs.setdefault("vision", False)
    kwargs.setdefault("price", TokenPrice(prompt_usd_per_mtok=1.0, completion_usd_per_mtok=2.0))
    model_fields = {f.name for f in dataclasses.fields(ModelConfig)}
    model = {k: kwargs.pop(k) for k in list(kwargs) if k in model_fields}
    config = ModelConfig("openai/fake-model", api_base=server.url, api_key="sk-fake", **model)
    return LiteLLMAgent(config, AgentOptions(**kwargs))


def tree_digest(root: Path, skip: Path | None = None) -> dict[str, str]:
    """Every file under ``root`` (except under ``skip``) → SHA-256 of its bytes (links → their target)."""
    out = {}
    for path in sorted(root.rglob("*")):
        if skip is not None and (path == skip or skip in path.parents):
            continue
        rel = path.relative_to(root).as_posix()
        if path.is_symlink():
            out[rel] = "link:" + str(path.readlink())
        elif path.is_file():
            out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def broken_files(root: Path) -> list[str]:
    """Every ``*.json`` under ``root`` that does not parse and every ``*.png`` that does not decode.

    Files inside a ``*.partial`` folder are skipped: that is the export's staging copy, swapped into place
    with one rename when complete and never read by the scorer or the report (a resume discards it).
    """
    bad = []
    for path in sorted(root.rglob("*")):
        if path.is_symlink() or not path.is_file():
            continue
        if any(part.endswith(".partial") for part in path.relative_to(root).parts):
            continue
        try:
            if path.suffix == ".json":
                json.loads(path.read_text(encoding="utf-8"))
            elif path.suffix == ".png":
                with Image.open(path) as img:
                    img.load()
        except Exception as exc:  # any failure to parse/decode is what the scan reports
            bad.append(f"{path.relative_to(root)}: {type(exc).__name__}: {exc}")
    return bad
