"""The rules agent never takes a MATLAB 1×N axis vector as the image key."""

from __future__ import annotations

from agents.rules.source import image_key_hypotheses


def test_row_vector_listed_first_is_not_an_image_key() -> None:
    shapes = {"x": (1, 64), "y": (64, 1), "scan": (64, 64, 5)}
    ranked = image_key_hypotheses(["x", "y", "scan"], shapes)
    assert [h.value for h in ranked] == ["scan"]
