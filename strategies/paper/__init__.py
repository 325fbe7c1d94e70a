"""The paper's own S3/S4 procedure (SPEC §4) as strategies of their own: ``s3_paper`` and ``s4_paper``.

- `strategies.paper.reference`: the reference selection and vote over validator reports.
- `strategies.paper.vote`: the per-index field vote of the reference S4.
- `strategies.paper.procedure`: the reference procedure wired to our candidates and writer.
- `strategies.paper.best_of_n` / `strategies.paper.fieldwise`: the registered strategies.

Only the reference's public names are re-exported here; the strategies load lazily from the registry, so
importing this package (as the shared mechanics do for `patch_meta`) never imports a strategy.
"""

from strategies.paper.reference import (
    CandidateRef,
    MetaChoice,
    SampleChoice,
    Selection,
    VoteResult,
    Voting,
    choose_meta,
    discover_candidates,
    patch_meta,
    select_reference,
    vote_reference,
)

__all__ = [
    "CandidateRef",
    "MetaChoice",
    "SampleChoice",
    "Selection",
    "VoteResult",
    "Voting",
    "choose_meta",
    "discover_candidates",
    "patch_meta",
    "select_reference",
    "vote_reference",
]
