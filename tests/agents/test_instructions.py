"""The benchmark's own instructions: found in the user's checkout (or named), sent verbatim, recorded in
run.json."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
from agent_scripts import standard_script

from agents.instructions import BUNDLED, InstructionError, instruction_text, resolve_instructions
from experiments import compose_config
from experiments.run.experiment import run_experiment


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _checkout(tmp_path: Path, seg_dataset: Path) -> tuple[Path, str, str]:
    """A root laid out like the public checkout: datasets/standard.md, prompt_experiment/S1, a dataset."""
    root = tmp_path / "MDS-Bench"
    standard = "# Standardize this dataset\n\nA task text written by this test — ünïcode, `code`, {braces}.\n"
    s1 = "Review your own output on the seven axes and revise only with evidence.\n"
    (root / "datasets").mkdir(parents=True)
    (root / "datasets" / "standard.md").write_text(standard, encoding="utf-8")
    (root / "prompt_experiment" / "S1").mkdir(parents=True)
    (root / "prompt_experiment" / "S1" / "S1_prompt.md").write_text(s1, encoding="utf-8")
    (root / "prompt_experiment" / "S1" / "notes.txt").write_text("not the prompt", encoding="utf-8")
    shutil.copytree(seg_dataset, root / "datasets" / "tiny_seg")
    return root, standard, s1


def test_resolution_prefers_the_named_file_then_the_checkout_then_ours(tmp_path: Path, seg_dataset: Path):
    root, standard, s1 = _checkout(tmp_path, seg_dataset)
    found = resolve_instructions(root)
    assert found["s0"].text == standard and found["s0"].source == str(root / "datasets" / "standard.md")
    assert found["s1"].text == s1 and found["s1"].sha256 == _sha(s1)  # the file named like a prompt wins
    assert found["s2"].source == "bundled" and found["s2"].text == BUNDLED["s2"]
    mine = tmp_path / "my_s2.txt"
    mine.write_text("my own S2 text", encoding="utf-8")
    named = resolve_instructions(root, {"s0": "bundled", "s2": str(mine)})
    assert named["s0"].text == BUNDLED["s0"] and named["s2"].text == "my own S2 text"
    assert resolve_instructions(None)["s0"].source == "bundled"  # the bundled suite: ours
    assert instruction_text({"instructions": {"s1": s1}}, "s1") == s1
    assert instruction_text({}, "s1") == BUNDLED["s1"]


def test_a_missing_named_file_or_an_ambiguous_prompt_folder_is_a_config_error(tmp_path: Path):
    with pytest.raises(InstructionError, match="no such file"):
        resolve_instructions(tmp_path, {"s0": "nowhere.md"})
    folder = tmp_path / "prompt_experiment" / "S2"
    folder.mkdir(parents=True)
    (folder / "a.md").write_text("a", encoding="utf-8")
    (folder / "b.md").write_text("b", encoding="utf-8")
    with pytest.raises(InstructionError, match="several prompt files"):
        resolve_instructions(tmp_path)
    with pytest.raises(InstructionError, match=r"unknown agent\.instructions"):
        resolve_instructions(tmp_path, {"s5": "x"})


def test_a_run_on_a_checkout_sends_standard_md_verbatim_and_records_its_hash(
    tmp_path: Path, seg_dataset: Path, fake_server, monkeypatch: pytest.MonkeyPatch
):
    root, standard, s1 = _checkout(tmp_path, seg_dataset)
    server = fake_server(standard_script())
    run_dir = tmp_path / "run"
    overrides = [
        "strategy=s0",
        "agent=litellm",
        "agent.model=openai/fake-model",
        f"agent.api_base={server.url}",
        "benchmark=dir",
        f"benchmark.root={root / 'datasets'}",  # as docs/benchmark.md tells users to point it
        "run.progress=false",
        "run.report=false",
    ]
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake-test-key")  # read by LiteLLM, as a user would export it
    monkeypatch.setenv("MEDSTRAT_CACHE", str(tmp_path / "cache"))
    outcome = run_experiment(compose_config(overrides), run_dir)
    assert not outcome.incomplete and not outcome.errors
    first = server.chat_requests[0]["messages"]
    # The task instruction is the checkout's text, byte for byte, in its own message; the tool guidance is
    # the system message and the manifest follows separately.
    assert first[1] == {"role": "user", "content": standard}
    assert standard not in first[0]["content"] and "tiny_seg" in first[2]["content"]
    recorded = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))["instructions"]
    assert recorded["s0"] == {"source": str(root / "datasets" / "standard.md"), "sha256": _sha(standard)}
    assert recorded["s1"]["sha256"] == _sha(s1) and recorded["s2"]["source"] == "bundled"
    assert standard not in (run_dir / "run.json").read_text(encoding="utf-8")  # a hash, never the text
