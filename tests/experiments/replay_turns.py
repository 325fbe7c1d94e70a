"""The rules baseline's candidate as a short fake-server conversation (a plain module: test files import it by
a unique name)."""

from __future__ import annotations

from pathlib import Path

from testbed.fakeserver import ByDataset, Reply, TurnScript, assistant_turn
from testbed.fakeserver.replay import replay_script

USAGE = (1000, 100)
"""Tokens every scripted turn reports (prompt, completion)."""


def three_turns(dataset: Path, work: Path) -> TurnScript:
    """The rules baseline's candidate in three model calls: every render; every annotation; meta + finish.

    One conversation per dataset: run it with ``agent.batch_size`` at least the dataset's samples (a plan
    conversation offers none of these tools)."""
    replay = replay_script(dataset, work_dir=work, check=False)
    calls = [c for step in replay.steps if isinstance(step, Reply) for c in step.tool_calls]
    groups = [("render",), ("write_annotation",), ("write_data_meta", "finish")]
    turns = [assistant_turn(*[c for c in calls if c["function"]["name"] in group]) for group in groups]
    return TurnScript([Reply(t.content, t.tool_calls, USAGE) for t in turns])


def suite_script(suite: Path, work: Path) -> ByDataset:
    """`three_turns` for every dataset of ``suite``, one server for the whole run."""
    names = sorted(p.name for p in suite.iterdir() if (p / "VLM" / "random.txt").is_file())
    return ByDataset({n: three_turns(suite / n, work / n) for n in names})
