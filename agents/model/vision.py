"""Whether the LiteLLM agent sends images: ``agent.vision`` and what LiteLLM knows of the model."""

from __future__ import annotations

import logging

__all__ = ["resolve_vision", "vision_setting"]

log = logging.getLogger("agents.llm.agent")  # the agent's logger: where users and tests look for the line

# Models already warned about in this process: the warning is one line per model, not one per candidate.
_WARNED_VISION: set[str] = set()


def vision_setting(setting: bool | str | None) -> bool | None:
    """``agent.vision`` as True, False or None (ask LiteLLM).

    Raises:
        ValueError: Not ``auto``, ``true`` or ``false``.
    """
    text = str(setting).lower() if setting is not None else "auto"
    if text in ("true", "false"):
        return text == "true"
    if text != "auto":
        raise ValueError(f"agent.vision must be auto, true or false, got {setting!r}")
    return None


def resolve_vision(setting: bool | str | None, model: str, known: bool | None) -> bool:
    """Whether images are sent: ``agent.vision`` (`vision_setting`) when it says true or false, else what
    LiteLLM knows of the model (``known``: None when it does not know it; the model then runs text-only, after
    one warning naming it).

    Raises:
        ValueError: An unknown setting.
    """
    chosen = vision_setting(setting)
    if chosen is not None:
        return chosen
    if known is None:
        if model not in _WARNED_VISION:
            _WARNED_VISION.add(model)
            log.warning(
                "agent.vision=auto: LiteLLM does not know whether %s takes images; running it text-only "
                "(set agent.vision=true if it sees images)",
                model,
            )
        return False
    return known
