"""The guided mode through the real LiteLLM path: forced calls, the response_format fallback, the window."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agent_scripts import make_agent, make_task

from agents.base import Feedback
from agents.llm.guided import (
    PLAN_SCHEMA,
    GuidedPlan,
    annotation_record,
    answer_of,
    answer_schema,
)
from testbed.fakeserver.schema_answers import SchemaAnswers, instance_of
from testbed.fakeserver.script import Fault, Reply, Step, tool_call
from validator.schema import Annotation, DataMeta


def _written(candidate: Any) -> dict[int, dict[str, Any]]:
    folder = candidate.output_dir / "standardized_annotations"
    return {int(p.stem): json.loads(p.read_text()) for p in folder.glob("*.json")}


def _generated(
    fake_server: Any, answers: Any, dataset: Path, out: Path, **options: Any
) -> tuple[Any, Any, Any]:
    """The fake server answering with ``answers``, a guided agent on it and the candidate it generated."""
    server = fake_server(answers)
    agent = make_agent(server, mode="guided", vision=False, **options)
    return server, agent, asyncio.run(agent.generate(make_task(dataset, out)))


def test_guided_mode_writes_schema_valid_samples_with_one_forced_call_per_step(
    seg_dataset: Path, tmp_path: Path, fake_server
):
    server, _agent, candidate = _generated(
        fake_server, SchemaAnswers("tool_choice"), seg_dataset, tmp_path / "c0"
    )

    assert candidate.status == "ok", candidate.reason
    assert candidate.reason == "guided mode (agent.mode=guided)"
    written = _written(candidate)
    assert sorted(written) == [0, 1]
    for i, annotation in written.items():
        Annotation.model_validate(annotation)
        assert annotation["record"]["image_path"] == f"images/{i}.png"
        assert annotation["context"]["sample"]["extra"]["source_file"] == f"data/case{i}/image.nii.gz"
        assert (candidate.output_dir / "images" / f"{i}.png").is_file()
    DataMeta.model_validate(json.loads((candidate.output_dir / "data_meta.json").read_text()))
    # Every request offers exactly the one tool it forces, and is a fresh two-message request.
    for request in server.chat_requests:
        forced = request["tool_choice"]["function"]["name"]
        assert [t["function"]["name"] for t in request["tools"]] == [forced]
        assert [m["role"] for m in request["messages"]] == ["system", "user"]
    asked = [r["tool_choice"]["function"]["name"] for r in server.chat_requests]
    assert asked[0] == "write_plan" and asked[-1] == "write_data_meta"
    assert asked.count("annotate") == 2
    assert candidate.usage.calls == len(server.chat_requests)


def test_a_server_that_ignores_tool_choice_is_asked_by_response_format_from_then_on(
    seg_dataset: Path, tmp_path: Path, fake_server
):
    server = fake_server(SchemaAnswers("response_format"))
    agent = make_agent(server, mode="guided", vision=False)
    candidate = asyncio.run(agent.generate(make_task(seg_dataset, tmp_path / "c0")))

    assert candidate.status == "ok", candidate.reason
    requests = server.chat_requests
    assert "tool_choice" in requests[0] and "response_format" not in requests[0]
    # One wasted call, then every request of the agent (this candidate's and the next ones') asks by schema.
    assert all("response_format" in r and not r.get("tools") for r in requests[1:])
    assert requests[1]["response_format"]["json_schema"]["schema"] == PLAN_SCHEMA
    again = asyncio.run(agent.generate(make_task(seg_dataset, tmp_path / "c1", candidate_index=1)))
    assert again.status == "ok"
    assert all("response_format" in r for r in server.chat_requests[len(requests) :])
    assert sorted(_written(candidate)) == [0, 1]


def test_a_model_that_never_calls_a_tool_is_redone_in_the_guided_mode(
    seg_dataset: Path, tmp_path: Path, fake_server
):
    # Prose for the tools mode's open requests (no tool_choice), JSON for the guided mode's forced calls.
    server = fake_server(SchemaAnswers("tool_choice"))
    agent = make_agent(server, vision=False)
    candidate = asyncio.run(agent.generate(make_task(seg_dataset, tmp_path / "c0")))

    assert candidate.status == "ok", candidate.reason
    assert candidate.reason.startswith(
        "guided mode (tools mode, dataset: 3 replies in a row without a tool call"
    )
    assert sorted(_written(candidate)) == [0, 1]
    # The three prose replies were paid for: they are in the usage.
    assert candidate.usage.calls == len(server.chat_requests)
    assert sum("tool_choice" not in r for r in server.chat_requests) == 3
    # The agent remembers: its next candidate goes straight to the guided mode.
    before = len(server.chat_requests)
    asyncio.run(agent.generate(make_task(seg_dataset, tmp_path / "c1", candidate_index=1)))
    assert all("tool_choice" in r for r in server.chat_requests[before:])


def test_an_overflow_names_the_window_and_the_request_is_sent_again_smaller(
    seg_dataset: Path, tmp_path: Path, fake_server
):
    answers = SchemaAnswers("tool_choice")
    limit = 2400  # characters of user message the "server" holds

    def script(request: dict[str, Any], serial: int) -> Any:
        if len(request["messages"][-1]["content"]) > limit:
            return Fault(
                400,
                "This model's maximum context length is 2048 tokens. However, you requested 9000 tokens.",
            )
        return answers(request, serial)

    server = fake_server(script)
    agent = make_agent(server, mode="guided", vision=False)
    candidate = asyncio.run(agent.generate(make_task(seg_dataset, tmp_path / "c0")))

    assert candidate.status == "ok", candidate.reason
    assert agent.client.context_window == 2048
    trimmed = [
        json.loads(line)
        for line in candidate.trace_path.read_text().splitlines()
        if '"context_trimmed"' in line
    ]
    assert trimmed and trimmed[0]["window"] == 2048
    assert sorted(_written(candidate)) == [0, 1]


def test_a_window_the_config_names_sizes_every_request_before_it_is_sent(
    seg_dataset: Path, tmp_path: Path, fake_server
):
    server = fake_server(SchemaAnswers("tool_choice"))
    agent = make_agent(
        server, mode="guided", vision=False, max_tokens_per_call=256, server={"context_window": 1200}
    )
    candidate = asyncio.run(agent.generate(make_task(seg_dataset, tmp_path / "c0")))

    assert candidate.status == "ok", candidate.reason
    # (1200 - 256 reply - 320 overhead - the schema) tokens at 2.5 characters: no request is over ~1,600.
    assert max(len(r["messages"][-1]["content"]) for r in server.chat_requests) < 1600


def test_the_tools_mode_opening_that_cannot_fit_the_window_goes_to_the_guided_mode_unsent(
    seg_dataset: Path, tmp_path: Path, fake_server
):
    server = fake_server(SchemaAnswers("tool_choice"))
    agent = make_agent(server, vision=False, server={"context_window": 4096})
    candidate = asyncio.run(agent.generate(make_task(seg_dataset, tmp_path / "c0")))

    assert candidate.status == "ok", candidate.reason
    assert "exceeds the window of 4096" in candidate.reason
    assert all("tool_choice" in r for r in server.chat_requests)


def test_every_answer_of_the_answer_schema_makes_a_record_that_passes_the_benchmark_schema() -> None:
    for task in ("classification", "segmentation", "detection"):
        for dim in ("2D", "3D", "video"):
            plan = GuidedPlan("d", "CT", task, dim, ("background", "tumour"))
            rendered = {"size": [64, 32], "slice_index": 3, "axis": 0, "frame": 2}
            answer = instance_of(answer_schema(plan))
            annotation = annotation_record(plan, 5, "data/a/b.nii.gz", rendered, answer, "data/m.nii.gz")
            Annotation.model_validate(annotation)
            media = annotation["media_geometry"]["media"]
            assert (media["task_type"], media["dimension"]) == (task, dim)
            active = [k for k, v in annotation["media_geometry"]["spatial"].items() if v]
            assert active == [{"2D": "common", "3D": "three_d", "video": "video"}[dim]]
            assert annotation["record"]["image_path"] == "images/5.png"
            assert answer_of(annotation) == answer  # a revision shows the model its own answer back


def test_the_answer_schema_is_the_same_for_every_sample_and_names_only_the_models_values() -> None:
    plan = GuidedPlan("d", "dermoscopy", "classification", "2D", ("nevus", "melanoma"))
    schema = answer_schema(plan)
    assert list(schema["properties"]) == ["subject_id", "sex", "race_ethnicity", "site_id", "label"]
    answer = {"subject_id": "p7", "sex": "F", "race_ethnicity": "NA", "site_id": "NA", "label": "melanoma"}
    record = annotation_record(plan, 2, "data/x/p7.jpg", {"size": [8, 8]}, answer)
    branch = record["tasks"]["classification"]
    assert (branch["label"], branch["label_name"]) == (1, "melanoma")  # the id is the framework's
    assert record["context"]["sample"]["extra"] == {
        "source_file": "data/x/p7.jpg",
        "original_filename": "p7.jpg",
    }
    # An answer outside the schema (a server that ignored it) falls back to the schema's first values.
    record = annotation_record(plan, 2, "data/x/p7.jpg", {"size": [8, 8]}, {"label": "cat", "sex": "?"})
    assert record["tasks"]["classification"]["label_name"] == "nevus"
    assert record["context"]["sample"]["sex"] == "unknown"


def test_a_plan_outside_its_schema_is_refused_with_the_reason() -> None:
    import pytest

    with pytest.raises(ValueError, match="task_type"):
        GuidedPlan.of(
            {"dataset_name": "d", "modality": "CT", "task_type": "ocr", "dimension": "2D", "classes": ["a"]}
        )
    with pytest.raises(ValueError, match="lacks"):
        GuidedPlan.of({"dataset_name": "d"})
    plan = GuidedPlan.of(
        {
            "dataset_name": " d ",
            "modality": "CT",
            "task_type": "detection",
            "dimension": "2D",
            "classes": ["a", "a", "b"],
        }
    )
    assert plan.classes == ("a", "b") and plan.class_table() == {"1": "a", "2": "b"}


class _ReplanAnswers(SchemaAnswers):
    """Schema answers, but a plan asked with feedback (``Your plan`` in the request) names a new modality."""

    def __call__(self, request: Mapping[str, Any], serial: int) -> Step:
        step = super().__call__(request, serial)
        user = request["messages"][-1]["content"]
        if request["tool_choice"]["function"]["name"] == "write_plan" and "## Your plan" in user:
            call = step.tool_calls[0]  # type: ignore[attr-defined]
            arguments = {**json.loads(call["function"]["arguments"]), "modality": "dermoscopy"}
            return Reply(tool_calls=(tool_call("write_plan", arguments, call_id=f"call_{serial}"),))
        return step


def test_feedback_on_a_field_the_plan_fixes_asks_the_plan_again_and_rewrites_every_record(
    seg_dataset: Path, tmp_path: Path, fake_server
):
    server, agent, candidate = _generated(
        fake_server, _ReplanAnswers("tool_choice"), seg_dataset, tmp_path / "c0"
    )
    assert candidate.status == "ok", candidate.reason
    asked = len(server.chat_requests)
    feedback = Feedback(
        items=((0, "context.sample.modality_primary", "the modality is not what the data shows"),)
    )

    revised = asyncio.run(
        agent.revise(make_task(seg_dataset, tmp_path / "r0"), candidate, feedback, ["context.sample"])
    )

    names = [r["tool_choice"]["function"]["name"] for r in server.chat_requests[asked:]]
    assert names[0] == "write_plan" and names.count("annotate") == 2 and names[-1] == "write_data_meta"
    written = _written(revised)
    assert {a["context"]["sample"]["modality_primary"] for a in written.values()} == {"dermoscopy"}
    meta = json.loads((revised.output_dir / "data_meta.json").read_text())
    assert meta["modality_primary"] == ["dermoscopy"]


def test_feedback_on_a_samples_own_field_leaves_the_plan_unasked(
    seg_dataset: Path, tmp_path: Path, fake_server
):
    server, agent, candidate = _generated(
        fake_server, _ReplanAnswers("tool_choice"), seg_dataset, tmp_path / "c0"
    )
    asked = len(server.chat_requests)
    feedback = Feedback(items=((1, "context.sample.subject_id", "the subject is named in the path"),))

    asyncio.run(
        agent.revise(make_task(seg_dataset, tmp_path / "r0"), candidate, feedback, ["context.sample"])
    )

    names = [r["tool_choice"]["function"]["name"] for r in server.chat_requests[asked:]]
    assert names == ["annotate"]


class _OffSchemaSex(SchemaAnswers):
    """Schema answers, but every annotation names a sex its schema does not allow (a grammar ignored)."""

    def __call__(self, request: Mapping[str, Any], serial: int) -> Step:
        step = super().__call__(request, serial)
        if request["tool_choice"]["function"]["name"] != "annotate":
            return step
        call = step.tool_calls[0]  # type: ignore[attr-defined]
        arguments = {**json.loads(call["function"]["arguments"]), "sex": "male"}
        return Reply(tool_calls=(tool_call("annotate", arguments, call_id=f"call_{serial}"),))


def test_an_answer_outside_its_schema_takes_the_default_and_says_so_in_the_reason(
    seg_dataset: Path, tmp_path: Path, fake_server
):
    _server, _agent, candidate = _generated(
        fake_server, _OffSchemaSex("tool_choice"), seg_dataset, tmp_path / "c0"
    )

    assert candidate.status == "ok"
    assert "value(s) outside the schema, the framework's default taken (sex:" in candidate.reason
    assert {a["context"]["sample"]["sex"] for a in _written(candidate).values()} == {"unknown"}
