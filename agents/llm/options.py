"""How the model-driven agent works: sampling, what a request carries, its bounds, tools and mode.

`AgentOptions` is the agent's one typed options object beside the model's `agents.model.config.ModelConfig`.
The config gives its fields flat (``agent.batch_size``, ``agent.script.max_runs``); the values are checked
here, once, whoever builds it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agents.llm import modes
from agents.llm.script_mode import ScriptOptions
from agents.model.vision import vision_setting
from agents.tools.code_tool import CodeLimits
from agents.tools.sandbox import SandboxLimits
from core.registry import flat_options, given_as

__all__ = ["AgentOptions"]

TOOL_SETS = ("code",)
"""Opt-in tool sets (``agent.tools``)."""


@flat_options
@dataclass(frozen=True)
class AgentOptions:
    """The options of `agents.llm.agent.LiteLLMAgent`; each is also ``agent.<field>`` in the config.

    Attributes:
        temperature: Sampling temperature; None uses the task's.
        max_tokens_per_call: Completion-token cap per call (None: no cap).
        vision: Whether images are sent: True, False, or None to ask LiteLLM (a model it does not know runs
            text-only after one warning line); the config says ``auto``, ``true`` or ``false``.
        sandbox_limits: Size caps of the tools.
        batch_size: Samples per conversation; a larger dataset is done as plan, batches, dataset JSON.
        concurrency: Batch conversations of one candidate in flight at once.
        keep_results: Tool results sent whole per request (older ones are stubbed).
        max_images: Image parts sent per request (the most recent ones).
        max_text_replies: Replies in a row without a tool call that end a conversation (failed).
        max_failed_turns: Turns in a row whose every tool call failed that end a conversation (failed).
        max_argument_chars: Longest tool-call argument string run; a longer one is refused unrun.
        tools: Opt-in tool sets: ``"code"`` adds ``run_python`` (`agents.tools.code_tool`).
        code_limits: Bounds of each ``run_python`` call (or a mapping of its fields).
        tool_processes: Worker processes for the CPU-heavy tools (render, inspect, view_image, the write and
            review tools; `agents.tools.tool_pool`), so they never hold the event loop's GIL; 0 runs every
            tool in the agent's threads. Started on first use, stopped by the agent's ``close``.
        mode: ``"tools"`` (per-sample tool calls), ``"script"`` (`agents.llm.script_mode`; either redoes
            guided a candidate whose model calls no tool, or whose opening overflows) or ``"guided"``
            (`agents.llm.guided`).
        script: Bounds and feedback of the script mode (or a mapping of its fields).
        plans: Plans sampled where the guided mode makes its plan (``agent.mode=guided``, and the guided
            fallback of the tools and script modes); with more than one, the plan the raw data supports best
            (`validator.plan_support`) is kept. The tools and script modes' own plans are not sampled again.
            A task's ``options["plans"]`` (``strategy=plans``) takes precedence.

    Raises:
        ValueError: An unknown mode, tool set, code limit, script option or vision setting, or a bound
            below 1 (``tool_processes`` below 0).
    """

    temperature: float | None = None
    max_tokens_per_call: int | None = 4096
    vision: bool | None = field(default=None, metadata=given_as(bool | str | None))
    sandbox_limits: SandboxLimits = field(default=SandboxLimits(), metadata=given_as(SandboxLimits | None))
    batch_size: int = 8
    concurrency: int = 4
    keep_results: int = 12
    max_images: int = 4
    max_text_replies: int = 3
    max_failed_turns: int = 4
    max_argument_chars: int = 1_000_000
    tools: frozenset[str] = field(default=frozenset(), metadata=given_as(str | Sequence[str] | None))
    code_limits: CodeLimits = field(
        default=CodeLimits(), metadata=given_as(Mapping[str, Any] | CodeLimits | None)
    )
    tool_processes: int = 0
    mode: str = "tools"
    script: ScriptOptions = field(
        default=ScriptOptions(), metadata=given_as(Mapping[str, Any] | ScriptOptions | None)
    )
    plans: int = 1

    def __post_init__(self) -> None:
        if self.mode not in modes.MODES:
            raise ValueError(f"unknown agent.mode {self.mode!r}; valid: {list(modes.MODES)}")
        # Frozen: the config forms are replaced by their types once, here.
        object.__setattr__(self, "script", ScriptOptions.of(self.script))
        if self.tool_processes < 0:
            raise ValueError(f"agent.tool_processes must be 0 or more, got {self.tool_processes}")
        bounds = {
            "batch_size": self.batch_size,
            "concurrency": self.concurrency,
            "max_text_replies": self.max_text_replies,
            "max_failed_turns": self.max_failed_turns,
            "max_argument_chars": self.max_argument_chars,
            "plans": self.plans,
        }
        low = {k: v for k, v in bounds.items() if v < 1}
        if low:
            raise ValueError(f"agent.{next(iter(low))} must be 1 or more, got {next(iter(low.values()))}")
        given: Any = self.tools
        tool_sets = frozenset({given} if isinstance(given, str) else given or ())
        if tool_sets - set(TOOL_SETS):
            raise ValueError(f"unknown agent.tools {sorted(tool_sets - set(TOOL_SETS))}; valid: ['code']")
        object.__setattr__(self, "tools", tool_sets)
        object.__setattr__(self, "code_limits", CodeLimits.of(self.code_limits))
        object.__setattr__(self, "sandbox_limits", self.sandbox_limits or SandboxLimits())
        object.__setattr__(self, "vision", vision_setting(self.vision))
