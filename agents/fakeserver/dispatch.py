"""One fake server for a whole run: each request answered by the script of the dataset it is about.

A run sends every dataset's conversations to one endpoint; the dataset is named in the task prompt
(``Dataset name: ...``), which follows the instruction text, so it is looked up in every message.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from agents.fakeserver.script import Step

__all__ = ["ByDataset", "dataset_of"]


def dataset_of(request: Mapping[str, Any]) -> str:
    """The dataset a request is about: the name in the task prompt (``Dataset name: ...``).

    Args:
        request: A chat-completion request body.

    Returns:
        The dataset name.

    Raises:
        KeyError: No message names a dataset.
    """
    for message in request["messages"]:
        content = message.get("content")
        if isinstance(content, str) and content.startswith("Dataset name:"):
            return content.split("\n", 1)[0].removeprefix("Dataset name:").strip()
    raise KeyError("no message names the dataset")


class ByDataset:
    """A server script that answers each request with the script of its dataset.

    Args:
        scripts: Dataset name -> script (a ``TurnScript`` or any ``(request, serial) -> Step``).
    """

    def __init__(self, scripts: Mapping[str, Callable[[Mapping[str, Any], int], Step]]) -> None:
        self.scripts = dict(scripts)

    def __call__(self, request: Mapping[str, Any], serial: int) -> Step:
        """Answer ``request`` from its dataset's script."""
        return self.scripts[dataset_of(request)](request, serial)
