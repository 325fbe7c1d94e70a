"""``agent.mode=script`` through the fake server (the real LiteLLM path): one conversion script standardizes a
whole dataset in four model calls and scores like the rules baseline; the validator's messages follow every
run; scripts that crash, write outside or run too long are tool errors, and the calls stay bounded."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from agent_scripts import DATA_META, annotation, make_agent, make_task

from agents.base import Candidate, Limits, Task
from agents.llm.script_mode import SCRIPT_SYSTEM_PROMPT
from agents.tools.code_tool import CodeLimits
from testbed.fakeserver import FakeServer, TurnScript, assistant_turn, tool_call
from testbed.fakeserver.script_replay import script_mode_replay

DATASET = "synth-brain-mr-nifti"  # 3D segmentation: images, masks on a chosen slice, a class table
RULES_RUN, SCRIPT_RUN = "rules_reference", "script_mode"

# Writes the two annotations and data_meta.json but no image or mask: the validator has plenty to say.
JSON_ONLY = f"""\
import json, os
os.makedirs("output/standardized_annotations", exist_ok=True)
for index, doc in json.loads({json.dumps({str(i): annotation(i) for i in (0, 1)})!r}).items():
    with open(f"output/standardized_annotations/{{index}}.json", "w") as handle:
        json.dump(doc, handle)
with open("output/data_meta.json", "w") as handle:
    json.dump(json.loads({json.dumps(DATA_META)!r}), handle)
print("json written")
"""


def _tool_messages(server: FakeServer) -> dict[str, str]:
    """Every tool result the model received, by call id (from the longest conversation sent)."""
    out: dict[str, str] = {}
    for request in server.chat_requests:
        for message in request["messages"]:
            if message.get("role") == "tool":
                out[message["tool_call_id"]] = message["content"]
    return out


def _trace(candidate: Candidate) -> list[dict[str, Any]]:
    assert candidate.trace_path is not None
    return [json.loads(line) for line in candidate.trace_path.read_text(encoding="utf-8").splitlines()]


@pytest.fixture(scope="module")
def replayed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Candidate, FakeServer]:
    from benchmark.discover import Dataset
    from testbed.synth.suite import generate_suite

    suite = tmp_path_factory.mktemp("suite")
    generate_suite(suite, size="small", only=[DATASET])
    root = suite / DATASET
    script = script_mode_replay(root, work_dir=root / "VLM" / RULES_RUN)
    with FakeServer(script) as server:
        task = Task.from_dataset(
            Dataset.from_root(root),
            root / "VLM" / SCRIPT_RUN,
            limits=Limits(max_turns=20, max_tool_calls=40, max_tokens=10**8),
        )
        candidate = asyncio.run(make_agent(server, mode="script").generate(task))
    return root, candidate, server


def test_one_script_standardizes_every_sample_in_four_calls_and_scores_like_rules(
    replayed: tuple[Path, Candidate, FakeServer],
) -> None:
    from benchmark.discover import Dataset
    from benchmark.score import score_dataset

    root, candidate, server = replayed
    n = len(list(Dataset.from_root(root).entries()))
    assert candidate.status == "ok", candidate.reason
    assert candidate.usage.calls == 4 == len(server.chat_requests)  # tree, inspect, run_python, finish
    written = sorted(p.name for p in (candidate.output_dir / "standardized_annotations").iterdir())
    assert written == sorted(f"{i}.json" for i in range(n))
    assert len(list((candidate.output_dir / "masks").iterdir())) == n
    # The model read the validator's verdict on what its script wrote.
    run = json.loads(_tool_messages(server)["convert"])
    assert run["exit_code"] == 0 and run["stopped_by"] is None
    assert run["validation"]["written"] == run["validation"]["expected"] == n
    assert run["validation"]["missing"] == [] and run["validation"]["mean_score"] > 0.9
    # Script mode offers run_python and the exploring tools, not the per-sample render/write tools.
    first = server.chat_requests[0]
    offered = {t["function"]["name"] for t in first["tools"]}
    assert {"run_python", "tree", "table_head", "finish"} <= offered
    assert not offered & {"render", "write_annotation", "write_data_meta"}
    assert first["messages"][0]["content"] == SCRIPT_SYSTEM_PROMPT
    results = score_dataset(root, models=[RULES_RUN, SCRIPT_RUN], profile="official")
    rules, ours = results["models"][RULES_RUN], results["models"][SCRIPT_RUN]
    assert ours["error"] is None
    assert ours["metrics"] == rules["metrics"]
    assert ours["metrics"]["E2E"] == pytest.approx(1.0)


def test_validator_messages_follow_each_run_grouped_by_message(
    seg_dataset: Path, tmp_path: Path, fake_server: Callable[..., FakeServer]
) -> None:
    turns = [
        assistant_turn(tool_call("run_python", {"code": JSON_ONLY}, "json_only")),
        assistant_turn(tool_call("finish", {}, "fin")),
    ]
    server = fake_server(TurnScript(turns))
    candidate = asyncio.run(
        make_agent(server, mode="script").generate(make_task(seg_dataset, tmp_path / "c"))
    )
    assert candidate.status == "ok", candidate.reason
    validation = json.loads(_tool_messages(server)["json_only"])["validation"]
    assert validation["written"] == 2 and validation["missing"] == []
    assert validation["mean_score"] < 1.0
    # The missing images are one message per check for both samples, not one line per sample.
    assert validation["problems"], validation
    assert all(p["indices"] == [0, 1] and p["samples"] == 2 for p in validation["problems"][:1])
    assert len({(p["check"], p["message"]) for p in validation["problems"]}) == len(validation["problems"])


def test_crashing_escaping_and_slow_scripts_are_clear_tool_errors(
    seg_dataset: Path, tmp_path: Path, fake_server: Callable[..., FakeServer]
) -> None:
    outside = tmp_path / "outside.txt"
    bad = {
        "crash": "raise RuntimeError('the conversion broke')\n",
        "outside": f"open({str(outside)!r}, 'w').write('escaped')\n",
        "slow": "import time\ntime.sleep(120)\n",
    }
    turns = [assistant_turn(tool_call("run_python", {"code": code}, name)) for name, code in bad.items()]
    turns[2] = assistant_turn(tool_call("run_python", {"code": bad["slow"], "timeout_s": 1}, "slow"))
    turns += [
        assistant_turn(tool_call("render", {"index": 0, "source": "data/case0/image.nii.gz"}, "render")),
        assistant_turn(tool_call("run_python", {"code": JSON_ONLY}, "good")),
        assistant_turn(tool_call("finish", {}, "fin")),
    ]
    server = fake_server(TurnScript(turns))
    agent = make_agent(server, mode="script", code_limits=CodeLimits(wall_s=30, cpu_s=20), max_failed_turns=5)
    candidate = asyncio.run(agent.generate(make_task(seg_dataset, tmp_path / "c")))

    told = _tool_messages(server)
    crash = json.loads(told["crash"])
    assert crash["exit_code"] != 0 and "RuntimeError: the conversion broke" in crash["stderr"]
    assert crash["validation"]["missing"] == [0, 1]
    assert json.loads(told["outside"])["stopped_by"].startswith("refused: writing")
    assert not outside.exists()
    assert json.loads(told["slow"])["stopped_by"] == "wall-time limit (1 s)"
    assert told["render"].startswith("Unknown tool 'render'")
    errors = {e["call_id"]: e["error"] for e in _trace(candidate) if e["event"] == "tool"}
    assert errors == {
        "crash": "script_failed",
        "outside": "script_failed",
        "slow": "script_failed",
        "render": "unknown_tool",
        "good": None,
        "fin": None,
    }
    # Four failed turns in a row stay under max_failed_turns (5): the good script ran, the candidate is ok.
    assert candidate.status == "ok", candidate.reason
    assert json.loads(told["good"])["run"] == "4 of at most 8"


def test_a_model_that_only_sends_crashing_scripts_is_stopped_after_a_bounded_number_of_calls(
    seg_dataset: Path, tmp_path: Path, fake_server: Callable[..., FakeServer]
) -> None:
    crash = assistant_turn(tool_call("run_python", {"code": "1 / 0\n"}, "again"))
    server = fake_server(TurnScript([], after_end=crash))
    candidate = asyncio.run(
        make_agent(server, mode="script").generate(make_task(seg_dataset, tmp_path / "c"))
    )
    assert candidate.status == "failed"
    # The default max_failed_turns (4): four turns whose every script crashed end the candidate.
    assert "4 turns in a row with every tool call failed" in (candidate.reason or "")
    assert "script_failed" in (candidate.reason or "")
    assert len(server.chat_requests) == 4


def test_runs_past_max_runs_are_refused(
    seg_dataset: Path, tmp_path: Path, fake_server: Callable[..., FakeServer]
) -> None:
    ok = "print('fine')\n"
    turns = [assistant_turn(tool_call("run_python", {"code": ok}, f"run{i}")) for i in range(3)]
    turns += [
        assistant_turn(tool_call("run_python", {"code": JSON_ONLY}, "json")),
        assistant_turn(tool_call("finish", {}, "fin")),
    ]
    server = fake_server(TurnScript(turns))
    agent = make_agent(server, mode="script", script={"max_runs": 2})
    candidate = asyncio.run(agent.generate(make_task(seg_dataset, tmp_path / "c")))
    told = _tool_messages(server)
    assert json.loads(told["run1"])["run"] == "2 of at most 2"
    assert told["run2"].startswith("run_python refused: 2 scripts already ran")
    assert told["json"].startswith("run_python refused")
    assert not (candidate.output_dir / "standardized_annotations").exists()
    assert candidate.status == "failed"  # nothing written


def test_unknown_mode_and_script_options_are_one_line_errors(fake_server: Callable[..., FakeServer]) -> None:
    server = fake_server(TurnScript([]))
    with pytest.raises(
        ValueError, match=r"unknown agent.mode 'scripts'; valid: \['tools', 'script', 'guided'\]"
    ):
        make_agent(server, mode="scripts")
    with pytest.raises(ValueError, match=r"unknown agent.script option\(s\) \['max_run'\]"):
        make_agent(server, mode="script", script={"max_run": 3})


# What a coding model writes once the validator said the images and masks are missing: render both with medio
# on the mask's largest slice, then the same JSONs.
FULL = (
    """\
import os
import medio

os.makedirs("output/images", exist_ok=True)
os.makedirs("output/masks", exist_ok=True)
for index in (0, 1):
    image = medio.read(f"data/case{index}/image.nii.gz")
    mask = medio.read(f"data/case{index}/mask.nii.gz")
    medio.write_png(medio.render(image, mask=mask.array).pixels, f"output/images/{index}.png")
    medio.write_png(medio.render(mask, label=True, mask=mask.array).pixels, f"output/masks/{index}.png")
"""
    + JSON_ONLY
)


def test_the_model_fixes_its_script_from_the_validators_messages(
    seg_dataset: Path, tmp_path: Path, fake_server: Callable[..., FakeServer]
) -> None:
    turns = [
        assistant_turn(tool_call("run_python", {"code": JSON_ONLY}, "first")),
        assistant_turn(tool_call("run_python", {"code": FULL}, "fixed")),
        assistant_turn(tool_call("finish", {}, "fin")),
    ]
    server = fake_server(TurnScript(turns))
    candidate = asyncio.run(
        make_agent(server, mode="script").generate(make_task(seg_dataset, tmp_path / "c"))
    )
    assert candidate.status == "ok", candidate.reason
    told = _tool_messages(server)
    before, after = json.loads(told["first"])["validation"], json.loads(told["fixed"])["validation"]
    assert after["mean_score"] > before["mean_score"]
    assert len(after["problems"]) < len(before["problems"])
    fixed = {(p["check"], p["message"]) for p in after["problems"]}
    assert all((p["check"], p["message"]) not in fixed for p in before["problems"][:1])
    assert json.loads(told["fixed"])["run"] == "2 of at most 8"


def test_a_tool_outside_the_mode_is_refused_before_any_tool_process(
    seg_dataset: Path, tmp_path: Path
) -> None:
    from agents.llm.script_mode import ScriptOptions, script_toolbox
    from agents.tools.sandbox import Sandbox
    from agents.tools.tool_pool import ToolPool

    task = make_task(seg_dataset, tmp_path / "c")
    box = script_toolbox(task, Sandbox(task.root, task.output_dir), False, CodeLimits(), ScriptOptions())
    pool = ToolPool(1)
    try:
        args = json.dumps({"index": 0, "source": "data/case0/image.nii.gz"})
        result = pool.run(box, "render", args)
        assert result.error == "unknown_tool"
        assert not (task.output_dir / "images").exists()
        assert pool.run(box, "inspect", json.dumps({"path": "data/case0/image.nii.gz"})).error is None
    finally:
        pool.close()


def test_the_fake_servers_mode_flag_needs_a_replay() -> None:
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "testbed.fakeserver", "--mode", "script"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "medstrat fakeserver: error: --mode applies to --replay only; give --replay DATASET_ROOT"
    ]


def test_a_misspelt_script_or_code_limit_option_in_the_config_is_refused_by_name() -> None:
    from core.registry import OptionError
    from experiments.run.plan import build_agent

    base = {"name": "litellm", "model": "openai/fake-model", "api_key": "sk-fake", "mode": "script"}
    # A mapping from the config must reach the agent's own check, not be coerced (extras dropped) on the way.
    with pytest.raises(OptionError, match=r"unknown agent.script option\(s\) \['max_run'\]"):
        build_agent({**base, "script": {"max_runs": 8, "max_run": 3}})
    with pytest.raises(OptionError, match=r"unknown code limit\(s\) \['cpu'\]"):
        build_agent({**base, "code_limits": {"cpu": 3}})
    assert build_agent({**base, "script": {"max_runs": 3}}).script.max_runs == 3  # type: ignore[attr-defined]


def test_the_fake_server_cli_serves_a_script_mode_replay(
    replayed: tuple[Path, Candidate, FakeServer],
) -> None:
    """`medstrat fakeserver --replay DIR --mode script` starts and says what it replays."""
    import os
    import subprocess
    import sys

    root = replayed[0]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "testbed.fakeserver",
            "--replay",
            str(root),
            "--mode",
            "script",
            "--port",
            "0",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert proc.stdout is not None and proc.stderr is not None
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:") and url.endswith("/v1"), url
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=60)
    assert "one conversion script" in err and "Traceback" not in err, err
