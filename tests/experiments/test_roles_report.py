"""The HTML reports show the model roles: a run's page its per-agent table and judge summary, a sweep's page
every run's rows (through the real LiteLLM path, fake provider)."""

from __future__ import annotations

import json
import logging
import re
import shutil
from pathlib import Path

import pytest
from fake_roles import RolesRuns

from experiments.analysis.sweep_report import build_sweep_report


def _rows(page: str, table_id: str) -> list[list[str]]:
    """The data rows of one table of the page, each as its cells' text."""
    found = re.search(rf'<table id="{table_id}">(.*?)</table>', page, re.S)
    assert found, f"no table {table_id} in the page"
    rows = re.findall(r"<tr>(.*?)</tr>", found.group(1), re.S)
    return [re.findall(r"<td[^>]*>(.*?)</td>", r, re.S) for r in rows if "<td" in r]


def test_the_run_report_shows_each_agents_table_and_the_judges_summary(roles_runs: RolesRuns) -> None:
    run = roles_runs.judged  # judged with run.report=true
    roles = json.loads((run / "roles.json").read_text(encoding="utf-8"))
    page = (run / "report.html").read_text(encoding="utf-8")

    shown = {r[0]: r[1:] for r in _rows(page, "roles")}
    assert (
        set(shown) == set(roles["agents"]) == {"litellm:openai/fake-a", "litellm:openai/fake-b", "rules-hot"}
    )
    for label, a in roles["agents"].items():
        candidates, selected, win, oracle, calls, tokens, usd = shown[label]
        assert (int(candidates), int(selected), int(calls), int(tokens)) == (
            a["candidates"],
            a["selected"],
            a["calls"],
            a["tokens"],
        )
        assert float(win) == pytest.approx(a["win_rate"], abs=1e-3)
        assert float(oracle) == pytest.approx(a["oracle_rate"], abs=1e-3)
        assert float(usd) == pytest.approx(a["cost_usd"], abs=1e-4)
    [judged] = _rows(page, "judge")
    samples, chosen, ties, single, invalid, calls, tokens, usd = judged
    j = roles["judge"]
    assert int(chosen) == j["chosen"] == roles_runs.judged_asked > 0
    assert (int(samples), int(ties), int(single), int(invalid)) == (j["samples"], j["tie"], j["single"], 0)
    assert (int(calls), int(tokens)) == (j["calls"], j["tokens"]) and j["tokens"] > 0
    assert float(usd) == pytest.approx(j["cost_usd"], abs=1e-4)


def test_the_sweep_report_stacks_every_runs_agent_rows_and_judge_rows(
    roles_runs: RolesRuns, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # The two shared runs as a sweep's jobs (copies: the sweep's page is written beside them).
    sweep = tmp_path / "sweep"
    shutil.copytree(roles_runs.plain, sweep / "0")
    shutil.copytree(roles_runs.judged, sweep / "1")
    with caplog.at_level(logging.WARNING):
        page = build_sweep_report(sweep).read_text(encoding="utf-8")
    # The judged S3 run cannot be re-selected at fewer candidates without new verdicts: left out by name,
    # not a failure of the whole budget-matched table.
    said = [r.getMessage() for r in caplog.records]
    assert not any("budget-matched comparison skipped" in m for m in said), said
    assert any("left out: its selector llm_judge needs a judge" in m for m in said), said

    rows = _rows(page, "roles")
    assert len(rows) == 6  # three agents per run, two runs
    for k in ("0", "1"):
        roles = json.loads((sweep / k / "roles.json").read_text(encoding="utf-8"))
        for label, a in roles["agents"].items():
            assert [label, str(a["candidates"]), str(a["selected"])] in [r[1:4] for r in rows]
    judged = _rows(page, "judge")
    one = json.loads((sweep / "1" / "roles.json").read_text(encoding="utf-8"))["judge"]
    assert len(judged) == 1 and int(judged[0][2]) == one["chosen"] > 0  # only the judged run has a judge row
