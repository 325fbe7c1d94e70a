"""S2's field whitelist on plain documents, and the resume/budget rules of every agent call."""

from __future__ import annotations

import asyncio
from pathlib import Path

from strategy_fakes import NoisyOracleAgent

from agents.base import Task
from agents.budget import Budget
from strategies._whitelist import merge_whitelisted
from strategies.context import DONE_MARKER, RunContext, call_agent, use
from strategies.mechanics import generate_many


def test_only_whitelisted_paths_change_and_each_revert_is_logged() -> None:
    before = {"media": {"task_type": "detection", "modality": "CT"}, "tasks": {"detection": {"boxes": [1]}}}
    after = {
        "media": {"task_type": "classification", "modality": "MR"},
        "tasks": {"classification": {"label": 1}, "detection": {}},
        "new_block": {"x": 1},
    }
    log: list[str] = []
    merged = merge_whitelisted(before, after, ["media.task_type", "tasks"], "", log)
    assert merged == {
        "media": {"task_type": "classification", "modality": "CT"},
        "tasks": {"classification": {"label": 1}, "detection": {}},
    }
    assert sorted(log) == [
        "reverted media.modality: not in the whitelist",
        "reverted new_block: not in the whitelist",
    ]


def test_a_whitelisted_leaf_may_be_created_under_a_missing_parent() -> None:
    merged = merge_whitelisted({"a": 1}, {"a": 2, "b": {"c": 3, "d": 4}}, ["b.c"], "", [])
    assert merged == {"a": 1, "b": {"c": 3}}


def _gen(task: Task, agent: NoisyOracleAgent, ctx: RunContext, n: int) -> list:
    async def main() -> list:
        use(ctx)
        return await generate_many(agent, task, n)

    return asyncio.run(main())


def test_resume_reuses_finished_candidates_and_redoes_unfinished_ones(task: Task, tmp_path: Path) -> None:
    ctx = RunContext(candidates_root=tmp_path / "cands", resume=True)
    first = NoisyOracleAgent()
    _gen(task, first, ctx, 3)
    (tmp_path / "cands" / task.name / "1" / DONE_MARKER).unlink()  # as if killed before the marker landed
    again = NoisyOracleAgent()
    made = _gen(task, again, RunContext(candidates_root=tmp_path / "cands", resume=True), 3)
    assert again.calls == [("generate", 1)]
    assert [c.candidate_index for c in made] == [0, 1, 2]
    assert made[0].usage.prompt_tokens == 100  # usage is restored from the marker


def test_a_spent_budget_starts_no_new_call_but_keeps_what_finished(task: Task, tmp_path: Path) -> None:
    budget = Budget(max_tokens=150)
    ctx = RunContext(candidates_root=tmp_path / "c", semaphore=asyncio.Semaphore(1), budget=budget)
    agent = NoisyOracleAgent(tokens=100)

    async def main() -> list:
        use(ctx)
        ctx.semaphore = asyncio.Semaphore(1)  # bound to this loop
        return await generate_many(agent, task, 5)

    made = asyncio.run(main())
    assert len(made) == 2 and budget.hit and budget.spent.tokens == 200


def test_call_agent_without_a_runner_puts_candidates_beside_the_selected_folder(task: Task) -> None:
    cand = asyncio.run(call_agent(task, "7", NoisyOracleAgent().generate, candidate_index=7))
    assert (
        cand is not None
        and cand.output_dir
        == task.out_dir.with_name("selected.candidates") / "7" / "agent1_data_organization"
    )


def _sample_folder(
    root: Path, slice_index: int, image_value: int, mask_size: tuple[int, int] = (8, 6)
) -> Path:
    """One 3D sample: a JSON naming its slice, an image and a mask (sizes in PIL order: width, height)."""
    import json

    import numpy as np
    from PIL import Image

    for sub in ("images", "masks", "standardized_annotations"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    Image.fromarray(np.full((6, 8), image_value, np.uint8)).save(root / "images" / "0.png")
    Image.fromarray(np.zeros(mask_size[::-1], np.uint8)).save(root / "masks" / "0.png")
    ann = {
        "media_geometry": {"spatial": {"three_d": {"slice_index": slice_index}}},
        "context": {"sample": {"modality_primary": "CT"}},
    }
    (root / "standardized_annotations" / "0.json").write_text(json.dumps(ann))
    return root


def _files(root: Path) -> dict[str, object]:
    """Every file's bytes (a JSON file's parsed value: a revert may re-serialize it)."""
    import json

    return {
        p.relative_to(root).as_posix(): json.loads(p.read_text()) if p.suffix == ".json" else p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_an_image_that_moves_without_its_plane_is_rejected_with_the_whole_sample(tmp_path: Path) -> None:
    from strategies._whitelist import enforce_whitelist

    original = _sample_folder(tmp_path / "a", 3, 10)
    revised = _sample_folder(tmp_path / "b", 3, 99)  # new pixels, same declared slice
    flagged = {0: ["media_geometry.spatial.three_d.slice_index"]}
    log = enforce_whitelist(original, revised, ["media_geometry.spatial"], flagged)
    assert log == [
        "sample 0: rejected a partial move (the image changed but the declared plane did not): "
        "image, mask and JSON restored"
    ]
    assert _files(revised) == _files(original)


def test_a_plane_move_whose_mask_has_another_size_than_its_image_is_rejected(tmp_path: Path) -> None:
    from strategies._whitelist import enforce_whitelist

    original = _sample_folder(tmp_path / "a", 3, 10)
    revised = _sample_folder(tmp_path / "b", 5, 99, mask_size=(6, 8))
    flagged = {0: ["media_geometry.spatial.three_d.slice_index"]}
    log = enforce_whitelist(original, revised, ["media_geometry.spatial"], flagged)
    assert len(log) == 1 and "the mask is 6x8 but the image is 8x6" in log[0]
    assert _files(revised) == _files(original)


def test_a_whole_plane_move_is_kept_and_an_unflagged_sample_keeps_its_files(tmp_path: Path) -> None:
    from strategies._whitelist import enforce_whitelist

    original = _sample_folder(tmp_path / "a", 3, 10)
    revised = _sample_folder(tmp_path / "b", 5, 99, mask_size=(8, 6))
    (revised / "masks" / "0.png").write_bytes((revised / "images" / "0.png").read_bytes())  # a moved mask
    moved = _files(revised)
    assert enforce_whitelist(original, revised, ["media_geometry.spatial"], {0: [SLICE]}) == []
    assert _files(revised) == moved
    # The same revision with nothing flagged for sample 0: every file and field goes back.
    again = _sample_folder(tmp_path / "c", 5, 99)
    log = enforce_whitelist(original, again, ["media_geometry.spatial"], {})
    assert _files(again) == _files(original) and log


SLICE = "media_geometry.spatial.three_d.slice_index"
