"""HTML of a run's model roles (``roles.json``, `experiments.run.role_table`): one row per agent of the
candidate pool (candidates, selected, win rate, oracle rate, calls, tokens, dollars) and the judge's summary
(verdicts, fallbacks by reason, calls, tokens, dollars).

The run page shows its own table; the sweep page stacks every run's rows under the run's strategy label, so
pools and selectors compare side by side.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["JUDGE_FALLBACKS", "roles_html", "sweep_roles_html"]

e = html.escape

JUDGE_FALLBACKS = {
    "tie": "ties (candidates agree)",
    "single": "one candidate",
    "invalid": "invalid answers",
}
"""Why ``validator_max`` chose instead of the judge, by the verdict status `strategies.judge` records."""

_AGENT_HEAD = ("agent", "candidates", "selected", "win rate", "oracle rate", "calls", "tokens", "USD")
_JUDGE_HEAD = ("samples", "judge chose", *JUDGE_FALLBACKS.values(), "calls", "tokens", "USD")


def _rate(value: Any) -> str:
    return f"<td>{float(value):.3f}</td>" if isinstance(value, (int, float)) else '<td class="muted">n/a</td>'


def _agent_cells(label: str, a: Mapping[str, Any]) -> str:
    return (
        f'<td class="l">{e(label or "?")}</td><td>{int(a.get("candidates", 0))}</td>'
        f"<td>{int(a.get('selected', 0))}</td>{_rate(a.get('win_rate'))}{_rate(a.get('oracle_rate'))}"
        f"<td>{int(a.get('calls', 0))}</td><td>{int(a.get('tokens', 0))}</td>"
        f"<td>{float(a.get('cost_usd', 0.0)):.4f}</td>"
    )


def _judge_cells(j: Mapping[str, Any]) -> str:
    counts = "".join(f"<td>{int(j.get(k, 0))}</td>" for k in JUDGE_FALLBACKS)
    return (
        f"<td>{int(j.get('samples', 0))}</td><td>{int(j.get('chosen', 0))}</td>{counts}"
        f"<td>{int(j.get('calls', 0))}</td><td>{int(j.get('tokens', 0))}</td>"
        f"<td>{float(j.get('cost_usd', 0.0)):.4f}</td>"
    )


def _head(names: Sequence[str]) -> str:
    return "<tr>" + "".join(f"<th>{e(n)}</th>" for n in names) + "</tr>"


def roles_html(doc: Mapping[str, Any] | None) -> str:
    """The run page's section (empty when the run had no roles).

    Args:
        doc: The run's ``roles.json``, or None.

    Returns:
        HTML: the per-agent table, then the judge's table when a judge selector ran.
    """
    if not doc or not doc.get("agents"):
        return ""
    rows = "".join(f"<tr>{_agent_cells(label, a)}</tr>" for label, a in doc["agents"].items())
    out = (
        "<h2>Model roles: candidates per agent</h2>"
        f'<p class="muted">win rate: share of the {int(doc.get("samples", 0))} decided samples whose '
        "selected candidate the agent made; oracle rate: whose ground-truth best candidate it made "
        "(analysis only)</p>"
        f'<table id="roles">{_head(_AGENT_HEAD)}{rows}</table>'
    )
    judge = doc.get("judge")
    if judge:
        out += (
            "<h2>Judge</h2>"
            '<p class="muted">where the judge did not choose, validator_max did; its calls, tokens and '
            "dollars are part of the strategy's cost</p>"
            f'<table id="judge">{_head(_JUDGE_HEAD)}<tr>{_judge_cells(judge)}</tr></table>'
        )
    return out


def sweep_roles_html(docs: Sequence[tuple[str, Mapping[str, Any]]]) -> str:
    """The sweep page's section: every run's agent rows and judge row under its strategy label.

    Args:
        docs: ``(strategy label, roles.json)`` per run that has roles, in the page's run order.

    Returns:
        HTML, empty when no run of the sweep had roles.
    """
    docs = [(label, d) for label, d in docs if d and d.get("agents")]
    if not docs:
        return ""
    agents = "".join(
        f'<tr><td class="l">{e(label)}</td>{_agent_cells(name, a)}</tr>'
        for label, d in docs
        for name, a in d["agents"].items()
    )
    out = (
        "<h2>Model roles: candidates per agent, per run</h2>"
        '<p class="muted">win rate: share of decided samples whose selected candidate the agent made; '
        "oracle rate: whose ground-truth best candidate it made (analysis only)</p>"
        f'<div class="wide"><table id="roles">{_head(("strategy", *_AGENT_HEAD))}{agents}</table></div>'
    )
    judged = [(label, d["judge"]) for label, d in docs if d.get("judge")]
    if judged:
        rows = "".join(f'<tr><td class="l">{e(label)}</td>{_judge_cells(j)}</tr>' for label, j in judged)
        out += (
            "<h2>Judge per run</h2>"
            '<p class="muted">where the judge did not choose, validator_max did; the judge\'s cost is in the '
            "cost table above</p>"
            f'<div class="wide"><table id="judge">{_head(("strategy", *_JUDGE_HEAD))}{rows}</table></div>'
        )
    return out
