"""S4, field-wise selection (paper Appendix E): S3's choice as base, a weighted vote over high-risk fields,
and the base kept wherever the merged sample validates worse by more than a margin.

Built on S3's own steps (`strategies.best_of_n`): the same candidate pool and the same per-sample selection,
then the vote.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any

from pydantic import Field

from agents.base import Agent, Task
from benchmark.source_stem import add_source_stem_to_annotation
from strategies._vote import DIMENSION, TASK, donor_for, merge_sample, vote_field
from strategies.base import SampleDecision, Strategy, StrategyResult, Validator, run_cpu, strategy
from strategies.best_of_n import CandidatePool, candidate_pool, no_candidates
from strategies.choice import bind_loop
from strategies.fields import VOTED_FIELDS
from strategies.mechanics import SampleSource, candidate_metas, read_annotation, write_selected
from strategies.selectors import Selector, validator_max


@strategy("fieldwise", aliases=("s4",), candidates=True, reselectable=True, generations="n")
def fieldwise(
    n: Annotated[int, Field(ge=2)] = 5,  # one candidate leaves nothing to select: that is S0
    fields: Sequence[str] = VOTED_FIELDS,
    margin: float = 0.05,
    selector: Selector = validator_max,
) -> Strategy:
    """Vote the high-risk fields across n candidates on top of S3's per-sample choice.

    Args:
        n: Candidates per dataset.
        fields: Field paths voted (task type and dimension decide the branch donor).
        margin: Keep the base when the merged sample's validator total is lower by more than this.
        selector: Chooses the base candidate per sample (S3's selector).

    The paper's own vote is the strategy ``s4_paper``.
    """

    async def run(task: Task, agent: Agent, validator: Validator) -> StrategyResult:
        pool = await candidate_pool(agent, task, validator, n)
        if pool is None:
            return no_candidates("s4", task)
        # Voting reads every candidate's files and writing the merged folder is disk work: both run in the
        # worker pool, so the event loop keeps serving the model calls of the other datasets.
        bind_loop(selector)
        decisions, base_sources, merged_sources, metas = await run_cpu(
            validator, _vote_and_write, pool, fields, selector
        )
        merged = await run_cpu(validator, validator.validate, task.output_dir, task)
        final = dict(merged_sources)
        for index, decision in decisions.items():
            if index not in merged_sources:
                continue
            after = merged.samples[index].total
            if after < decision.score - margin:
                final[index] = base_sources[index]
                decision.reason = (
                    f"fieldwise: merge scored {after:.3f} < base {decision.score:.3f} - {margin}; kept base"
                )
            else:
                decision.reason = (
                    f"fieldwise: base {decision.candidate}, branch from {decision.details['donor']}"
                )
                decision.score = after
        if any(final[i] is not merged_sources[i] for i in final):
            await run_cpu(validator, write_selected, task.output_dir, final, metas)
        return pool.result("s4", decisions, selector)

    return run


def _vote_and_write(
    pool: CandidatePool, fields: Sequence[str], selector: Selector = validator_max
) -> tuple[
    dict[int, SampleDecision],
    dict[int, SampleSource],
    dict[int, SampleSource],
    list[tuple[float, dict[str, Any]]],
]:
    """S3's choice as base, the field votes and the merged folder written (blocking; run it in a pool).

    Returns:
        The decisions, per index the base and the merged sources, and the candidates' metas.
    """
    task, candidates, reports = pool.task, pool.candidates, pool.reports
    decisions = pool.select(selector)  # S3's selection, not a copy of it
    base_sources, merged_sources = {}, {}
    for index, decision in decisions.items():
        if decision.candidate is None:
            continue
        docs = {
            k: d for k, c in enumerate(candidates) if (d := read_annotation(c.output_dir, index)) is not None
        }
        scores = {k: r.samples[index].total for k, r in enumerate(reports) if index in r.samples}
        base = decision.candidate
        votes = [vote_field(f, docs, scores) for f in fields]
        by_path = {v.path: v for v in votes}
        donor = (
            donor_for(by_path[TASK].winner, by_path[DIMENSION].winner, docs, scores, base)
            if TASK in by_path and DIMENSION in by_path
            else base
        )
        base_src = SampleSource.of(candidates[base].output_dir, index)
        donor_src = SampleSource.of(candidates[donor].output_dir, index)
        assert base_src is not None and donor_src is not None  # both hold an annotation by construction
        base_sources[index] = base_src
        merged = merge_sample(docs[base], docs[donor], votes)
        # The voted source may be another candidate's than the base's extra: the stem the official scorer
        # needs follows the voted source (docs/scoring.md, "Sources outside the extension list").
        add_source_stem_to_annotation(merged)
        merged_sources[index] = SampleSource(merged, donor_src.image, donor_src.mask)
        decision.details.update(donor=donor, votes={v.path: v.weights for v in votes})
    metas = candidate_metas(candidates, reports)
    write_selected(task.output_dir, merged_sources, metas)
    return decisions, base_sources, merged_sources, metas
