"""`agents.adapters.from_callable`: S3 over a researcher's own LiteLLM agent function,, fake server."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any

from strategy_fakes import ORACLE_RUN

from agents.adapters import from_callable
from agents.base import Task
from strategies import ProfileValidator, strategies
from testbed.fakeserver import FakeServer, Reply


def test_s3_runs_over_a_wrapped_litellm_function_and_counts_its_tokens(task: Task) -> None:
    seen: list[dict[str, Any]] = []

    async def my_agent(task_dir: Path, out_dir: Path, model: str, *, api_base: str, seed: int = 0) -> None:
        import litellm

        await litellm.acompletion(
            model=model,
            api_base=api_base,
            api_key="sk-fake-0123456789",
            messages=[{"role": "user", "content": f"standardize {task_dir.name}"}],
        )
        seen.append({"seed": seed})
        shutil.copytree(
            task_dir / "VLM" / ORACLE_RUN / "agent1_data_organization", out_dir, dirs_exist_ok=True
        )

    with FakeServer(lambda request, serial: Reply(content="done", usage=(100, 20))) as server:
        agent = from_callable(my_agent, model="openai/fake-model", api_base=server.url)
        result = asyncio.run(strategies.get("s3")(n=3)(task, agent, ProfileValidator("evidence")))
        assert len(server.chat_requests) == 3
    assert sorted(s["seed"] for s in seen) == [0, 1, 2]
    assert (
        result.usage.prompt_tokens == 300 and result.usage.completion_tokens == 60 and result.usage.calls == 3
    )
    assert all(d.candidate is not None for d in result.decisions.values())
