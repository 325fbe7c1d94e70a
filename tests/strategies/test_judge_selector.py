"""The judge selectors' pieces: what the judge is shown (differing fields, one capped composite image), how an
answer is read, the hybrid's top-k, and the roles' config errors."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from PIL import Image

from agents.base import Candidate, ManifestEntry, Task, Usage
from agents.judge import CHOOSE_TOOL, JudgeAnswer, JudgeRequest
from agents.model.judge import parse_choice
from core.registry import OptionError
from experiments.run.roles import build_judge
from strategies.judge import JudgeSelector, composite_image, differing_fields
from validator.report import CheckOutcome, CheckResult, Report, SampleReport


def _png(w: int, h: int, value: int) -> bytes:
    out = io.BytesIO()
    Image.new("L", (w, h), value).save(out, format="PNG")
    return out.getvalue()


def test_the_composite_holds_every_candidate_side_by_side_within_the_width_cap() -> None:
    data = composite_image([_png(900, 600, 10), None, _png(64, 64, 250)], max_px=300)
    assert data is not None
    image = Image.open(io.BytesIO(data))
    assert image.width <= 300 and image.width == 3 * (image.height - 14)
    assert composite_image([None, None]) is None


def test_only_fields_that_differ_are_listed_with_every_candidates_value() -> None:
    a = {"tasks": {"classification": {"label": 1}}, "record": {"image_path": "images/0.png", "id": "x"}}
    b = {"tasks": {"classification": {"label": 2}}, "record": {"image_path": "images/9.png", "id": "x"}}
    assert differing_fields([a, b], ignore=("record.image_path",)) == {
        "tasks.classification.label": ["1", "2"]
    }


@pytest.mark.parametrize(
    ("arguments", "choice"),
    [
        ({"candidate": 2}, 2),
        ({"candidate": "1"}, 1),
        ({"candidate": 4}, None),
        ({"pick": 1}, None),
        ("{", None),
    ],
)
def test_only_one_in_range_choose_candidate_call_is_a_valid_answer(
    arguments: object, choice: int | None
) -> None:
    args = arguments if isinstance(arguments, str) else json.dumps(arguments)
    message = {"tool_calls": [{"function": {"name": CHOOSE_TOOL, "arguments": args}}]}
    assert parse_choice(message, 3)[0] == choice
    assert parse_choice({"content": "candidate 2"}, 3)[0] is None


class _Fixed:
    """A judge (the `agents.judge.Judge` protocol) that answers one number and remembers what it saw."""

    name = "fixed"

    def __init__(self, answer: int | None) -> None:
        self.answer, self.seen = answer, []

    def judge(self, request: JudgeRequest) -> JudgeAnswer:
        self.seen.append(request)
        return JudgeAnswer(self.answer, "fixed", Usage(prompt_tokens=10, completion_tokens=1, calls=1))


def _candidates(tmp_path: Path, labels: list[int]) -> list[Candidate]:
    out = []
    for k, label in enumerate(labels):
        root = tmp_path / str(k) / "agent1_data_organization"
        (root / "standardized_annotations").mkdir(parents=True)
        (root / "images").mkdir()
        (root / "images" / "0.png").write_bytes(_png(32, 32, 40 * k))
        doc = {"tasks": {"classification": {"label": label}}}
        (root / "standardized_annotations" / "0.json").write_text(json.dumps(doc), encoding="utf-8")
        out.append(Candidate(root, candidate_index=k))
    return out


def _report(total: float) -> Report:
    check = CheckOutcome(
        "label_known", 1.0, True, CheckResult(total, "" if total == 1 else "label not in table")
    )
    return Report(
        "evidence", Path("."), {0: SampleReport(0, total, {"label_known": check})}, SampleReport(-1, 1, {})
    )


def test_the_hybrid_shows_the_judge_only_the_validators_top_k(tmp_path: Path) -> None:
    cands = _candidates(tmp_path, [1, 2, 3])
    reports = [_report(0.2), _report(0.9), _report(0.6)]
    task = Task(tmp_path, "d", (ManifestEntry(0, "data/x"),), tmp_path)
    judge = _Fixed(2)
    choice = JudgeSelector(judge, top_k=2)(0, cands, reports, task)
    assert judge.seen[0].choices == 2 and "label not in table" in judge.seen[0].text
    assert choice.candidate == 2 and choice.details["shown"] == [1, 2]  # answer 2 of [best, second]
    assert choice.usage.calls == 1 and not choice.fallback


def test_an_out_of_range_answer_falls_back_to_the_validators_best(tmp_path: Path) -> None:
    cands = _candidates(tmp_path, [1, 2])
    task = Task(tmp_path, "d", (ManifestEntry(0, "data/x"),), tmp_path)
    choice = JudgeSelector(_Fixed(None))(0, cands, [_report(0.3), _report(0.8)], task)
    assert choice.candidate == 1 and choice.fallback and choice.details["status"] == "invalid"


def test_candidates_that_agree_everywhere_are_a_tie_and_cost_no_call(tmp_path: Path) -> None:
    cands = _candidates(tmp_path, [1, 1])
    (cands[1].output_dir / "images" / "0.png").write_bytes(
        (cands[0].output_dir / "images" / "0.png").read_bytes()
    )
    judge = _Fixed(2)
    task = Task(tmp_path, "d", (ManifestEntry(0, "data/x"),), tmp_path)
    choice = JudgeSelector(judge)(0, cands, [_report(0.5), _report(0.5)], task)
    assert judge.seen == [] and choice.details["status"] == "tie" and choice.candidate == 0


def test_a_judge_selector_with_the_rules_agent_and_no_judge_is_refused_in_one_line() -> None:
    with pytest.raises(OptionError, match=r"judge=litellm judge\.model="):
        build_judge(None, {"name": "rules", "temperature": 0.7})


def test_a_role_named_like_the_run_agent_inherits_its_node_and_overrides_its_own_keys() -> None:
    from experiments.run.roles import agent_config

    run_agent = {
        "name": "litellm",
        "model": "openai/a",
        "cache": "runs/cache.sqlite",
        "api_base": "http://x/v1",
    }
    got = agent_config({"name": "litellm", "model": "openai/b"}, like=run_agent)
    assert (
        got["model"] == "openai/b"
        and got["cache"] == "runs/cache.sqlite"
        and got["api_base"] == "http://x/v1"
    )
    # Another kind starts from its own conf/agent file.
    assert agent_config("rules", like=run_agent)["name"] == "rules" and "cache" not in agent_config("rules")


def test_the_judges_tool_lists_the_choices_a_grammar_can_hold_it_to() -> None:
    from agents.model.judge import choose_tool

    candidate = choose_tool(3)["function"]["parameters"]["properties"]["candidate"]

    # llama.cpp's converter reads an enum and ignores integer bounds: a tiny model answered 5 of 2.
    assert candidate["enum"] == [1, 2, 3]
