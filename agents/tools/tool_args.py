"""The one base class of every tool's argument model.

Each tool's arguments are a pydantic model derived from `ToolArgs`; `agents.tools.tools.tool_definitions`
turns the models into the JSON-schema definitions sent to the provider, and the model's raw argument JSON is
validated against them before a tool runs. Unknown keys are refused (``extra="forbid"``), so a misspelt
argument is a tool error the model sees instead of a silently ignored option.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, ValidationError

__all__ = ["ToolArgs", "validation_problems"]


class ToolArgs(BaseModel):
    """Arguments of one tool call; unknown keys are refused."""

    model_config = ConfigDict(extra="forbid")


def validation_problems(exc: ValidationError) -> list[str]:
    """Each error of a pydantic validation as ``dotted.location: message`` (``(root)`` for the whole)."""
    return [f"{'.'.join(map(str, e['loc'])) or '(root)'}: {e['msg']}" for e in exc.errors()]
