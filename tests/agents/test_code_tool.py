"""The opt-in ``run_python`` tool through the fake server (the real LiteLLM path): one script standardizes a
whole dataset; scripts that loop, allocate, write or read where they may not are stopped and reported."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from agent_scripts import DATA_META, FAKE_KEY, annotation, make_agent, make_task, standard_steps, tree_digest

from agents.tools.code_tool import CodeLimits
from testbed.fakeserver import TurnScript, assistant_turn, tool_call

# What a coding model writes: read every sample with medio, render image and mask on the mask's largest
# slice, write the JSON it decided, then data_meta.json. Annotations are passed in as JSON literals.
STANDARDIZE = """\
import json, os
import medio

annotations = json.loads({annotations!r})
os.makedirs("output/images", exist_ok=True)
os.makedirs("output/masks", exist_ok=True)
os.makedirs("output/standardized_annotations", exist_ok=True)
for index in (0, 1):
    image = medio.read(f"data/case{{index}}/image.nii.gz")
    mask = medio.read(f"data/case{{index}}/mask.nii.gz")
    medio.write_png(medio.render(image, mask=mask.array).pixels, f"output/images/{{index}}.png")
    medio.write_png(
        medio.render(mask, label=True, mask=mask.array).pixels, f"output/masks/{{index}}.png"
    )
    with open(f"output/standardized_annotations/{{index}}.json", "w") as handle:
        json.dump(annotations[str(index)], handle)
with open("output/data_meta.json", "w") as handle:
    json.dump(json.loads({meta!r}), handle)
print("standardized", len(annotations), "samples")
"""


def _standardize_script() -> str:
    annotations = json.dumps({str(i): annotation(i) for i in (0, 1)})
    return STANDARDIZE.format(annotations=annotations, meta=json.dumps(DATA_META))


def _told(server: Any, call_id: str) -> dict[str, Any]:
    """The tool result the model received for ``call_id`` (parsed JSON)."""
    for request in server.chat_requests:
        for message in request["messages"]:
            if message.get("role") == "tool" and message.get("tool_call_id") == call_id:
                return json.loads(message["content"])
    raise AssertionError(f"no tool result for {call_id}")


def test_one_script_standardizes_the_whole_dataset_like_the_render_tools(
    seg_dataset: Path, tmp_path: Path, fake_server
) -> None:
    script = TurnScript(
        [
            assistant_turn(tool_call("run_python", {"code": _standardize_script()}, "py1")),
            assistant_turn(tool_call("finish", {"summary": "one script"}, "fin")),
        ]
    )
    server = fake_server(script)
    agent = make_agent(server, tools=["code"])
    candidate = asyncio.run(agent.generate(make_task(seg_dataset, tmp_path / "code")))

    assert candidate.status == "ok", candidate.reason
    result = _told(server, "py1")
    assert result["exit_code"] == 0 and result["stopped_by"] is None, result
    assert "standardized 2 samples" in result["stdout"]
    assert set(result["changed_outputs"]) >= {"images/0.png", "masks/1.png", "data_meta.json"}
    # The offer and the instructions: run_python is a tool now, and the prompt no longer forbids code.
    first = server.chat_requests[0]
    assert "run_python" in {t["function"]["name"] for t in first["tools"]}
    assert "cannot run shell commands or code" not in first["messages"][0]["content"]

    # The same dataset through the render tools (another candidate): the script's files are identical.
    reference = asyncio.run(
        make_agent(fake_server(TurnScript(standard_steps()))).generate(
            make_task(seg_dataset, tmp_path / "tools")
        )
    )
    assert reference.status == "ok", reference.reason
    ours = tree_digest(candidate.output_dir)
    theirs = tree_digest(reference.output_dir)
    for rel in ("images/0.png", "images/1.png", "masks/0.png", "masks/1.png"):
        assert ours[rel] == theirs[rel], rel
    for index in (0, 1):
        written = json.loads((candidate.output_dir / f"standardized_annotations/{index}.json").read_text())
        assert written == annotation(index)
    # Without the opt-in, no code tool is offered.
    assert "run_python" not in {t["function"]["name"] for t in make_agent(server).tools}


def test_runaway_scripts_are_stopped_and_reported_and_the_candidate_goes_on(
    seg_dataset: Path, tmp_path: Path, fake_server
) -> None:
    outside = tmp_path / "outside.txt"
    bad = {
        "loop": "while True:\n    pass\n",
        "sleep": "import time\ntime.sleep(600)\n",
        "alloc": "block = bytearray(3 * 1024**3)\n",
        "data": "open('data/labels.csv', 'a').write('case9,planted\\n')\n",
        "outside": f"open({str(outside)!r}, 'w').write('escaped')\n",
        "ground_truth": "print(open('data/../VLM/ground_truth_tiny.json').read())\n",
        "network": "import socket\nsocket.create_connection(('127.0.0.1', 9), timeout=1)\n",
        "shell": "import os\nos.system('touch data/shell_was_here')\n",
        "env": "import os\nprint(sorted(os.environ.items()))\n",
    }
    turns = [assistant_turn(tool_call("run_python", {"code": code}, name)) for name, code in bad.items()]
    turns[1] = assistant_turn(tool_call("run_python", {"code": bad["sleep"], "timeout_s": 2}, "sleep"))
    turns += [
        assistant_turn(tool_call("run_python", {"code": _standardize_script()}, "good")),
        assistant_turn(tool_call("finish", {"summary": "done after mistakes"}, "fin")),
    ]
    server = fake_server(TurnScript(turns))
    before = tree_digest(seg_dataset)
    # 3 CPU seconds: the well-behaved script (import medio, render two samples) needs about one on an idle
    # machine and was stopped at a 1 s limit on a loaded one; the runaway loop is stopped either way.
    limits = CodeLimits(cpu_s=3, wall_s=30, memory_mb=768)
    agent = make_agent(server, tools="code", code_limits=limits)
    candidate = asyncio.run(agent.generate(make_task(seg_dataset, tmp_path / "c0")))

    stopped = {name: _told(server, name)["stopped_by"] or "" for name in bad}
    assert stopped["loop"].startswith("CPU-time limit"), stopped
    assert stopped["sleep"].startswith("wall-time limit (2 s)"), stopped
    assert stopped["alloc"].startswith("memory limit"), stopped
    assert "data/labels.csv" in stopped["data"] and "not allowed" in stopped["data"], stopped
    assert "outside.txt" in stopped["outside"], stopped
    assert "ground_truth" in stopped["ground_truth"] and "outside data/" in stopped["ground_truth"]
    assert "ground truth" not in _told(server, "ground_truth")["stdout"]
    assert "network access is disabled" in stopped["network"], stopped
    assert "starting processes is disabled" in stopped["shell"], stopped
    env = _told(server, "env")
    assert env["exit_code"] == 0 and FAKE_KEY not in env["stdout"] and "OPENAI" not in env["stdout"]

    # Nothing outside the workspace moved, the run went on and the last script's work is the candidate.
    assert tree_digest(seg_dataset) == before
    assert not outside.exists()
    assert _told(server, "good")["exit_code"] == 0
    assert candidate.status == "ok", candidate.reason
    assert (candidate.output_dir / "standardized_annotations" / "1.json").is_file()
    # Each script is kept in the workspace for audit, and the workspace is not part of the output.
    assert (tmp_path / "c0" / "workspace" / "run_1.py").read_text() == bad["loop"]
    assert not (candidate.output_dir / "run_1.py").exists()


def test_the_config_switches_the_code_tool_on_with_its_limits(monkeypatch) -> None:
    from experiments import compose_config
    from experiments.run.plan import build_agent

    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake")
    for tools in ("agent.tools=[code]", "agent.tools=code"):
        cfg = compose_config(
            ["agent=litellm", tools, "agent.code_limits.cpu_s=5", "agent.retry.max_attempts=2"]
        )
        agent = build_agent(cfg.agent)
        assert agent.code and agent.code_limits == CodeLimits(cpu_s=5)
        assert agent.client.retry.max_attempts == 2
        assert "run_python" in {t["function"]["name"] for t in agent.tools}
    off = build_agent(compose_config(["agent=litellm"]).agent)
    assert not off.code and "run_python" not in {t["function"]["name"] for t in off.tools}
