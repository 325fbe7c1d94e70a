"""Helpers shared by the agent tests: tasks, agents, the standard scripted run, tree digests."""

from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path
from typing import Any

from agents.base import Limits, ManifestEntry, Task
from agents.llm.agent import LiteLLMAgent
from agents.llm.options import AgentOptions
from agents.model.config import ModelConfig, TokenPrice
from agents.model.retry import RetryPolicy
from testbed.fakeserver import FakeServer, Reply, TurnScript, assistant_turn, tool_call

FAKE_KEY = "sk-fake-test-key-0123456789"
FAST_RETRY = RetryPolicy(max_attempts=10, initial_s=0.001, max_wait_s=0.005, jitter_s=0.001)
PRICE = TokenPrice(prompt_usd_per_mtok=1000.0, completion_usd_per_mtok=2000.0)
USAGE = (100, 20)  # tokens per scripted reply; 0.1 + 0.04 = 0.14 USD at PRICE


def make_agent(fake: FakeServer, **kwargs: Any) -> LiteLLMAgent:
    """A LiteLLM agent talking to the fake server, with tiny retries and timeouts.

    Args:
        fake: The server.
        **kwargs: `ModelConfig` and `AgentOptions` fields, and ``budget``.
    """
    kwargs.setdefault("retry", FAST_RETRY)
    kwargs.setdefault("timeout_s", 5.0)
    kwargs.setdefault("vision", True)
    kwargs.setdefault("price", PRICE)
    budget = kwargs.pop("budget", None)
    model_fields = {f.name for f in dataclasses.fields(ModelConfig)}
    model = {k: kwargs.pop(k) for k in list(kwargs) if k in model_fields}
    config = ModelConfig("openai/fake-model", api_base=fake.url, api_key=FAKE_KEY, **model)
    return LiteLLMAgent(config, AgentOptions(**kwargs), budget=budget)


def make_task(root: Path, out_dir: Path, **options: Any) -> Task:
    """The task of ``seg_dataset`` writing into ``out_dir``."""
    entries = (ManifestEntry(0, "data/case0/image.nii.gz"), ManifestEntry(1, "data/case1/image.nii.gz"))
    options.setdefault("limits", Limits(max_turns=20, max_tool_calls=60, max_tokens=1_000_000))
    return Task(root=root, name="tiny_seg", entries=entries, out_dir=out_dir, **options)


def tree_digest(root: Path, skip: Path | None = None) -> dict[str, str]:
    """Map every file and symlink under ``root`` (except under ``skip``) to a digest of its content."""
    out = {}
    for path in sorted(root.rglob("*")):
        if skip is not None and (path == skip or skip in path.parents):
            continue
        rel = path.relative_to(root).as_posix()
        if path.is_symlink():
            out[rel] = "link:" + str(path.readlink())
        elif path.is_file():
            out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
        else:
            out[rel] = "dir"
    return out


def annotation(index: int) -> dict[str, Any]:
    """A complete 3D segmentation annotation for sample ``index`` of the tiny dataset."""
    return {
        "record": {
            "schema_version": "1.0.1",
            "dataset_name": "tiny_seg",
            "image_path": f"images/{index}.png",
        },
        "context": {
            "sample": {
                "subject_id": f"case{index}",
                "age_years": 0,
                "sex": "unknown",
                "race_ethnicity": "NA",
                "site_id": "NA",
                "modality_primary": "CT",
                "anatomical_structure": ["Kidney (Abdomen)"],
                "extra": {
                    "source_file": f"data/case{index}/image.nii.gz",
                    "original_filename": "image.nii.gz",
                    "mask_file": f"data/case{index}/mask.nii.gz",
                    "map_type": "pixel_mask",
                },
            },
            "text": {},
        },
        "media_geometry": {
            "media": {"task_type": "segmentation", "annotation_type": "pixel_mask", "dimension": "3D"},
            "spatial": {
                "common": {},
                "three_d": {"pixel_size_px": [16, 20], "slice_index": 3 + index},
                "video": {},
            },
        },
        "tasks": {
            "classification": {},
            "segmentation": {
                "schema_variant": "3d_mask",
                "classes": {"0": "background", "1": "kidney", "2": "tumor"},
                "mask_3d": {
                    "format": "label_map_png",
                    "mask_path": f"masks/{index}.png",
                    "label_values": [0, 1, 2],
                },
            },
            "detection": {},
        },
        "provenance": {"notes": f"Converted from: data/case{index}/image.nii.gz"},
    }


DATA_META = {
    "dataset_name": "tiny_seg",
    "modality_primary": ["CT"],
    "task_type": ["segmentation"],
    "data_volume": {"total": 2},
    "valid_image_n": {"total": 2},
    "num_classes_per_task": {"segmentation": {"num_classes": 3, "include_background": True}},
}


def render_calls(index: int) -> list[dict[str, Any]]:
    """The render tool calls (image, then mask on the mask's largest slice) for one sample."""
    source = f"data/case{index}/image.nii.gz"
    mask = f"data/case{index}/mask.nii.gz"
    return [
        tool_call("render", {"index": index, "source": source, "mask_source": mask}, f"r_img_{index}"),
        tool_call(
            "render", {"index": index, "source": mask, "kind": "mask", "mask_source": mask}, f"r_msk_{index}"
        ),
    ]


def standard_steps() -> list[Reply]:
    """The scripted standardization: list_dir, inspect, render, view_image, write, meta, finish."""
    steps = [
        assistant_turn(tool_call("list_dir", {"path": "data"}, "c_list")),
        assistant_turn(tool_call("inspect", {"path": "data/case0/image.nii.gz"}, "c_inspect")),
        assistant_turn(*render_calls(0), content="Rendering sample 0."),
        assistant_turn(tool_call("view_image", {"path": "images/0.png"}, "c_view")),
        assistant_turn(tool_call("write_annotation", {"index": 0, "annotation": annotation(0)}, "c_ann0")),
        assistant_turn(
            *render_calls(1),
            tool_call("write_annotation", {"index": 1, "annotation": annotation(1)}, "c_ann1"),
        ),
        assistant_turn(tool_call("write_data_meta", {"data_meta": DATA_META}, "c_meta")),
        assistant_turn(tool_call("finish", {"summary": "done"}, "c_finish")),
    ]
    return [Reply(content=s.content, tool_calls=s.tool_calls, usage=USAGE) for s in steps]


def standard_script() -> TurnScript:
    """`standard_steps` as a turn script."""
    return TurnScript(standard_steps())
