"""perf/concurrency.py: the bare-LiteLLM side replays exactly what our run sent, and ``--json`` parses.

No timing is asserted: the numbers depend on the machine; what must hold is that both sides send the same
requests (count and content) the same way (each conversation in order, the datasets split over processes
with concurrency shares that sum to the total).
"""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from perf_script import load_perf_script

from testbed.fakeserver import dataset_of


@pytest.fixture(scope="module")
def script() -> ModuleType:
    """perf/concurrency.py imported as a module (perf/ is a folder of scripts, not a package)."""
    return load_perf_script("concurrency")


def _body(dataset: str, turns: list[str], candidate: int) -> dict[str, Any]:
    """A request at turn ``len(turns)``: the task prompt, then one assistant/tool pair per earlier turn."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": f"Dataset name: {dataset}\nrest"}]
    for turn in turns:
        messages += [
            {"role": "assistant", "content": turn},
            {"role": "tool", "content": f"{turn} done in c{candidate}"},
        ]
    return {"model": "fake-model", "messages": messages}


def test_conversations_are_rebuilt_from_interleaved_requests(script: ModuleType) -> None:
    steps = ["render", "write", "finish"]
    bodies = [
        _body(d, steps[:t], c) for t in range(3) for d in ("a", "b") for c in range(3)
    ]  # arrival order: every turn-0 request first, as when all candidates start at once
    bodies.reverse()  # and the order within a turn does not matter
    chains = script.conversations(bodies)
    assert len(chains) == 6
    for chain in chains:
        assert [script.turn_of(b) for b in chain] == [0, 1, 2]
        last = chain[-1]["messages"]
        assert all(b["messages"] == last[: len(b["messages"])] for b in chain)
    with pytest.raises(ValueError, match="continues no recorded conversation"):
        script.conversations([_body("a", [], 0), _body("b", ["render"], 0)])


def test_split_keeps_datasets_whole_and_shares_the_concurrency(script: ModuleType) -> None:
    chains = [[_body(d, [], c)] for d, k in (("a", 5), ("b", 3), ("c", 2)) for c in range(k)]
    for processes, concurrency in ((1, 64), (2, 64), (3, 7), (5, 4), (2, 1)):
        plan = script.split(chains, processes, concurrency)
        assert len(plan) == min(processes, 3, concurrency)
        assert sum(share for share, _ in plan) == concurrency
        assert all(share >= 1 for share, _ in plan)
        assigned = [dataset_of(chain[0]) for _, convs in plan for chain in convs]
        assert sorted(assigned) == sorted(dataset_of(chain[0]) for chain in chains)
        homes = {dataset_of(chain[0]): k for k, (_, convs) in enumerate(plan) for chain in convs}
        assert all(homes[dataset_of(chain[0])] == k for k, (_, convs) in enumerate(plan) for chain in convs)
    # Two processes: the five-conversation dataset alone, the other two together, concurrency in proportion.
    plan = script.split(chains, 2, 10)
    assert sorted((share, len(convs)) for share, convs in plan) == [(5, 5), (5, 5)]


@pytest.mark.heavy  # a whole run and its bare replay (about 10 s; more when litellm is not imported yet)
def test_bare_side_sends_what_ours_sent_and_json_parses(
    script: ModuleType, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    args = ["--datasets", "2", "--n", "2", "--latency", "0", "--second-latency", "0"]
    extra = ["--workdir", str(tmp_path), "--override", "agent.temperature=0.3"]
    results = script.main([*args, "--processes", "2", "--concurrency", "3", *extra, "--json"])
    out = capsys.readouterr().out
    assert f"file creation in {tmp_path}" in out and list(tmp_path.iterdir()) == []  # used, then removed
    (comparison,) = results
    ours, bare = comparison.ours, comparison.bare
    assert ours.calls == bare.calls == 2 * 2 * script.TURNS
    assert len(ours.bodies) == len(bare.bodies) == ours.calls

    def canonical(bodies: list[dict[str, Any]]) -> list[str]:
        return sorted(json.dumps(b, sort_keys=True) for b in bodies)

    # The very same request bodies (model, messages with images, tools, sampling parameters).
    assert canonical(bare.bodies) == canonical(ours.bodies)
    assert {b.get("temperature") for b in ours.bodies} == {0.3}  # --override reached our run
    assert comparison.shares == [2, 1] or comparison.shares == [1, 2]
    assert len(bare.cpu_s) == 2  # one bare client process per share

    summary = json.loads(out.strip().splitlines()[-1])
    assert summary["script"] == "concurrency.py"
    (point,) = summary["results"]
    assert point["processes"] == 2 and point["concurrency"] == 3
    assert point["calls"] == point["bare_calls"] == ours.calls
    assert point["ours_over_bare"] == pytest.approx(ours.throughput / bare.throughput, rel=1e-3)
    assert point["bound_calls_per_s"] is None  # zero latency: no bound


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--workdir", "/no/such/folder"], "--workdir /no/such/folder: not a folder"),
        (["--override", "agent.temperature"], "expected KEY=VALUE"),
    ],
)
def test_bad_options_are_one_line_and_exit_2(
    script: ModuleType, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    with pytest.raises(SystemExit) as ended:
        script.main(args)
    assert ended.value.code == 2
    assert message in capsys.readouterr().err
