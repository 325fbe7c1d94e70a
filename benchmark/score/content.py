"""Content fidelity f_i and the information scores c_i (IC), d_i (IV), r_i (INR) (SPEC §3.5)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from benchmark.score.fields import MatchOptions, block_score
from benchmark.score.normalize import as_dict, is_placeholder, mean, norm_token, round4
from benchmark.score.source import get_extra, sample_block


def content_blocks(
    ann: dict[str, Any], gt_sample: dict[str, Any], global_blocks: dict[str, Any], opts: MatchOptions
) -> dict[str, float]:
    """Score every content block the GT defines for this sample.

    Args:
        ann: A parsed annotation object.
        gt_sample: Its GT sample.
        global_blocks: GT ``content.global_expected_blocks``.
        opts: Field-matcher options.

    Returns:
        ``{block name: score in [0, 1]}`` for the blocks that are present.
    """
    record = as_dict(ann.get("record"))
    sample = sample_block(ann)
    extra = get_extra(ann)
    media = as_dict(as_dict(ann.get("media_geometry")).get("media"))
    tasks = as_dict(ann.get("tasks"))
    blocks: dict[str, float] = {}
    for name, actual in (
        ("expected_record", record),
        ("expected_context_sample", sample),
        ("expected_extra", extra),
    ):
        exp = gt_sample.get(name)
        if isinstance(exp, dict) and exp:
            blocks[name] = block_score(actual, exp, opts)
    keys = gt_sample.get("expected_extra_keys")
    if isinstance(keys, list) and keys:
        blocks["expected_extra_keys"] = round4(
            mean([float(k in extra and not is_placeholder(extra[k], k)) for k in keys])
        )
    exp_tasks = gt_sample.get("expected_tasks")
    if isinstance(exp_tasks, dict) and exp_tasks:
        blocks["expected_tasks"] = mean(
            [block_score(tasks.get(t), as_dict(s), opts) for t, s in exp_tasks.items()]
        )
    if isinstance(global_blocks, dict) and global_blocks:
        parts: list[float] = []
        for name, actual in (("record", record), ("context_sample", sample), ("media", media)):
            exp = global_blocks.get(name)
            if isinstance(exp, dict) and exp:
                parts.append(block_score(actual, exp, opts))
        g_tasks = global_blocks.get("tasks")
        if isinstance(g_tasks, dict) and g_tasks:
            parts.append(mean([block_score(tasks.get(t), as_dict(s), opts) for t, s in g_tasks.items()]))
        if parts:
            blocks["global_expected_blocks"] = mean(parts)
    return blocks


def content_fidelity(blocks: dict[str, float]) -> float:
    """f_i: the mean of the present blocks, each clamped to [0, 1], rounded to 4 decimals."""
    # Field blocks arrive already rounded to 4 decimals (fields.block_score), as in the reference; the global
    # block is a mean of rounded sub-blocks and is deliberately not re-rounded (matters at the 4th decimal).
    return round4(mean([min(1.0, max(0.0, b)) for b in blocks.values()])) if blocks else 0.0


@dataclass(frozen=True)
class InformationScores:
    """Per-sample information quality: completeness c_i, validity d_i, non-redundancy r_i (4 decimals)."""

    completeness: float
    validity: float
    non_redundancy: float


def information_scores(
    ann: dict[str, Any], gt_sample: dict[str, Any], content: dict[str, Any]
) -> InformationScores:
    """Compute c_i, d_i, r_i on ``extra`` against the GT key groups.

    Args:
        ann: A parsed annotation object.
        gt_sample: Its GT sample (used when the GT defines no key groups).
        content: The GT ``content`` block.

    Returns:
        The three scores.
    """
    extra = get_extra(ann)
    groups_raw = content.get("expected_extra_key_groups")
    groups = (
        [list(v) for v in groups_raw.values() if isinstance(v, list)] if isinstance(groups_raw, dict) else []
    )
    mode = str(content.get("expected_extra_keys_mode") or "all").lower()

    def filled(k: str) -> bool:
        return k in extra and not is_placeholder(extra[k], k)

    if groups:
        present = [any(k in extra for k in g) for g in groups]
        valid = [any(filled(k) for k in g) for g in groups]
        if mode == "any":
            c, d = float(any(present)), float(any(valid))
        else:
            c, d = mean([float(x) for x in present]), mean([float(x) for x in valid])
    else:
        keys = [k for k in gt_sample.get("expected_extra_keys") or [] if isinstance(k, str)]
        c = mean([float(k in extra) for k in keys]) if keys else 0.0
        d = mean([float(filled(k)) for k in keys]) if keys else 0.0
    strings = [norm_token(v) for k, v in extra.items() if isinstance(v, str) and not is_placeholder(v, k)]
    unique_ratio = len(set(strings)) / len(strings) if strings else 0.0
    required = content.get("strict_required_extra_keys")
    signal_keys = (
        list(required) if isinstance(required, list) and required else [k for g in groups for k in g]
    )
    extra_signal = mean([float(filled(k)) for k in signal_keys]) if signal_keys else 0.0
    r = 0.5 * unique_ratio + 0.5 * extra_signal
    return InformationScores(round4(c), round4(d), round4(r))
