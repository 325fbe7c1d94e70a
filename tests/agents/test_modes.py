"""How a candidate picks its mode and why it runs guided (`agents.llm.modes.pick`)."""

from __future__ import annotations

import pytest

from agents.llm import modes


def _opening() -> list[str]:
    return ["x" * 35_000]  # ~10,000 tokens at 3.5 characters each


def _unread() -> list[str]:
    raise AssertionError("the opening is built only when a window is checked")


@pytest.mark.parametrize(
    "setting, remembered, window, expected",
    [
        ("script", "tools mode, plan: no tool call", 512, ("script", None)),
        ("guided", None, None, ("guided", "agent.mode=guided")),
        ("guided", None, 512, ("guided", "agent.mode=guided")),
        ("tools", None, None, ("tools", None)),
        ("tools", "tools mode, plan: no tool call", None, ("guided", "tools mode, plan: no tool call")),
        ("tools", "tools mode, plan: no tool call", 512, ("guided", "tools mode, plan: no tool call")),
    ],
)
def test_the_mode_follows_the_setting_and_what_the_agent_learned(setting, remembered, window, expected):
    assert modes.pick(setting, remembered, window, _unread, 256) == expected


def test_a_tools_opening_the_window_cannot_hold_starts_guided():
    starts, because = modes.pick("tools", None, 8192, _opening, 256)
    assert starts == "guided"
    assert because == "the tools-mode opening, ~10256 tokens with its reply, exceeds the window of 8192"
    assert modes.pick("tools", None, 16384, _opening, 256) == ("tools", None)


def test_every_mode_setting_is_known():
    assert set(modes.MODES) == {"tools", "guided", "script"}
