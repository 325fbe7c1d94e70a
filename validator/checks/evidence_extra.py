"""Evidence checks on the source trace beyond the file name.

``extra_like_peers``: ``context.sample.extra`` carries the keys the candidate's other samples of the dataset
carry (subject, label file, map type, ...). Samples of one dataset share their raw layout, so the trace an
output writes for them has the same shape; a sample whose ``extra`` lacks a key nearly every other sample
fills has lost part of its trace (the label or mask file a reader needs, the subject it belongs to).

``source_stem_matchable``: the official scorer can match the declared source by name; a source whose
extension it does not strip (``.dat``, ``.nrrd`` ...) needs ``extra.source_stem`` (`benchmark.source_stem`).

Ground-truth free: both read the output alone.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from benchmark.fields import SOURCE_FILE, SOURCE_STEM
from benchmark.source_stem import STEM_KEY, declared_source, source_stem_need, unstripped_extension
from validator.registry import check
from validator.report import CheckResult
from validator.sample import SampleView
from validator.values import nonmissing

EXTRA = "context.sample.extra"
NAMED_ELSEWHERE = ("source_file", "original_filename")  # judged by source_fields_present
MIN_PEERS = 1
SHARE = 0.75
"""A key is expected when at least this share of the other samples fill it."""


def _filled(extra: Any) -> set[str]:
    if not isinstance(extra, dict):
        return set()
    return {
        str(k) for k, v in extra.items() if k not in NAMED_ELSEWHERE and nonmissing(v) and v not in ([], {})
    }


def _peer_keys(sample: SampleView) -> tuple[Counter[str], dict[int, set[str]]]:
    """Per key, how many of the candidate's samples fill it, and each sample's keys (once per candidate)."""
    peers = sample.peers or []
    holder = peers[0].memo if peers else sample.memo
    if "extra_keys" not in holder:
        keys: dict[int, set[str]] = {}
        for peer in peers:
            ann = peer.annotation
            if isinstance(ann, dict):
                context = ann.get("context")
                inner = context.get("sample") if isinstance(context, dict) else None
                keys[peer.index] = _filled(inner.get("extra") if isinstance(inner, dict) else None)
        counts: Counter[str] = Counter()
        for found in keys.values():
            counts.update(found)
        holder["extra_keys"] = (counts, keys)
    result: tuple[Counter[str], dict[int, set[str]]] = holder["extra_keys"]
    return result


def _stem_not_needed(sample: SampleView) -> bool:
    # Writers record source_stem only where the official scorer needs it (source_stem_matchable), so a peer
    # whose source's extension the scorer strips does not lack it.
    declared = declared_source(sample.extra)
    return declared is not None and unstripped_extension(declared[1]) is None


@check("extra_like_peers", weight=0.05, fields=(EXTRA,))
def extra_like_peers(sample: SampleView) -> CheckResult:
    """context.sample.extra fills the keys (beyond the file name) that the output's other samples fill."""
    if sample.annotation is None:
        return CheckResult.fail(sample.annotation_error, (EXTRA,))
    counts, keys = _peer_keys(sample)
    mine = _filled(sample.extra)
    others = {i: k for i, k in keys.items() if i != sample.index}
    if len(others) < MIN_PEERS:
        return CheckResult.ok((EXTRA,), skipped="no other sample to compare with")
    own = keys.get(sample.index, mine)
    expected = sorted(k for k, n in counts.items() if (n - (k in own)) >= SHARE * len(others))
    if not expected:
        return CheckResult.ok((EXTRA,), skipped="the other samples share no extra key")
    missing = [k for k in expected if k not in mine and not (k == STEM_KEY and _stem_not_needed(sample))]
    if not missing:
        return CheckResult.ok((EXTRA,))
    return CheckResult.fail(
        f"{EXTRA} lacks {', '.join(missing)}, which the other samples fill; trace this sample the same way "
        "(from its raw files)",
        (EXTRA,),
        # Any lost key is a lost trace (the file a reader needs): at most half credit, less the more is lost.
        score=0.5 * (1.0 - len(missing) / len(expected)),
        missing=missing,
    )


@check("source_stem_matchable", weight=0.02, fields=(SOURCE_STEM, SOURCE_FILE))
def source_stem_matchable(sample: SampleView) -> CheckResult:
    """The official scorer can match the declared source by name: a source whose extension it keeps in its
    stem (``.dat``, ``.nrrd``, ``.dcm.gz`` ...) has ``extra.source_stem`` naming the file.

    Does not apply (no weight, so no total changes) when the scorer strips the source's extension or no
    source is declared.
    """
    fields = (SOURCE_STEM, SOURCE_FILE)
    declared = declared_source(sample.extra) if sample.annotation is not None else None
    if declared is None or unstripped_extension(declared[1]) is None:
        return CheckResult.not_applicable("the official scorer strips this source's extension", fields)
    need = source_stem_need(sample.extra)
    if need is None:
        return CheckResult.ok(fields)
    return CheckResult.fail(need.message(), fields, stem=need.stem, extension=need.extension)
