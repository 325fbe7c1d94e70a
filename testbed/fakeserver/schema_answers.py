"""A fake model that answers every constrained request with the first JSON object its schema allows.

The guided mode (`agents.llm.guided`) asks each step as a forced tool call or, from a server that ignores
``tool_choice``, by ``response_format``; a grammar-constrained server answers with an object of that schema.
`SchemaAnswers` plays such a server offline: the first ``enum`` value, the ``const``, the first ``anyOf``
branch, ``minLength`` characters, ``minItems`` items, the first integer 0. Its ``forced`` setting plays the
servers the agent must cope with:

- ``"tool_choice"``: a forced tool call is answered with the call (llama.cpp, vLLM, the hosted APIs);
- ``"response_format"``: a forced tool call is answered in prose, a ``response_format`` request with the JSON
  as the message's content (a server that honours only structured output);
- ``"never"``: every request is answered in prose (a model that cannot be constrained at all).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Literal

from testbed.fakeserver.script import Reply, Step, tool_call

__all__ = ["SchemaAnswers", "instance_of"]

PROSE = "I would be glad to help you standardize this dataset! First, let us think about the files."


def instance_of(schema: Mapping[str, Any], text: str = "x") -> Any:
    """The first instance a JSON Schema (the guided mode's subset) allows.

    Args:
        schema: The schema.
        text: The characters a free string is made of.

    Returns:
        A JSON value.
    """
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        values = list(schema["enum"])
        return next((v for v in values if v is not None), values[0] if values else None)
    if "anyOf" in schema:
        return instance_of(schema["anyOf"][0], text)
    kind = schema.get("type")
    if kind == "object" or "properties" in schema:
        return {k: instance_of(v, text) for k, v in (schema.get("properties") or {}).items()}
    if kind == "array":
        return [instance_of(schema.get("items") or {}, text) for _ in range(int(schema.get("minItems", 0)))]
    if kind == "string":
        return (text * max(1, int(schema.get("minLength", 1))))[: int(schema.get("maxLength", 10**6))]
    if kind in ("integer", "number"):
        return 0
    if kind == "boolean":
        return False
    return None


class SchemaAnswers:
    """A fake-server script answering constrained requests (see the module docstring).

    Args:
        forced: Which kind of constrained request it honours.
        text: The characters of its free strings.
    """

    def __init__(
        self, forced: Literal["tool_choice", "response_format", "never"] = "tool_choice", text: str = "x"
    ) -> None:
        self.forced = forced
        self.text = text

    def __call__(self, request: Mapping[str, Any], serial: int) -> Step:
        choice = request.get("tool_choice")
        fmt = request.get("response_format")
        if self.forced == "tool_choice" and isinstance(choice, dict):
            name = choice["function"]["name"]
            tool = next(t for t in request.get("tools") or [] if t["function"]["name"] == name)
            arguments = instance_of(tool["function"]["parameters"], self.text)
            return Reply(tool_calls=(tool_call(name, arguments, call_id=f"call_{serial}"),))
        if self.forced in ("tool_choice", "response_format") and isinstance(fmt, dict):
            schema = (fmt.get("json_schema") or {}).get("schema") or fmt.get("schema") or {}
            return Reply(content=json.dumps(instance_of(schema, self.text)))
        return Reply(content=PROSE)
