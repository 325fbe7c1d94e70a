"""One fake server for a whole run: each request answered by the script of the dataset it is about.

A run sends every dataset's conversations to one endpoint; the dataset is named in the task prompt
(``Dataset name: ...``), which follows the instruction text, so it is looked up in every message.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from testbed.fakeserver.script import Fault, Step

__all__ = ["ByDataset", "OneDataset", "dataset_of", "unscripted"]

UNSCRIPTED_STATUS = 404
"""The status of a request about a dataset the server has no script for.

A 404 is what a provider answers for a model it does not serve: the LiteLLM agent treats it as fatal and stops
the run with one line carrying the message, instead of replaying another dataset's decisions into garbage.
"""


def unscripted(dataset: str, scripted: list[str]) -> Fault:
    """The error answered for a request about a dataset the server has no script for.

    Args:
        dataset: The dataset the request names.
        scripted: The datasets the server has scripts for.

    Returns:
        A `Fault` whose message names both and the way out.
    """
    names = ", ".join(scripted)
    return Fault(
        UNSCRIPTED_STATUS,
        f"the fake server has no script for dataset {dataset!r} (it serves: {names}); run only those "
        f"(benchmark.datasets=[{names}]) or serve a script for every dataset of benchmark.root",
    )


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
        """Answer ``request`` from its dataset's script (`unscripted` for a dataset it has none for)."""
        name = dataset_of(request)
        script = self.scripts.get(name)
        if script is None:
            return unscripted(name, sorted(self.scripts))
        return script(request, serial)


class OneDataset:
    """A server script for one dataset that refuses requests about any other (`unscripted`).

    A request naming no dataset (a plain chat, a probe) is answered by the script as before.

    Args:
        dataset: The dataset the script is for.
        script: The script (a ``TurnScript``, a ``ReplayScript``, any ``(request, serial) -> Step``).
    """

    def __init__(self, dataset: str, script: Callable[[Mapping[str, Any], int], Step]) -> None:
        self.dataset = dataset
        self.script = script

    def __call__(self, request: Mapping[str, Any], serial: int) -> Step:
        """Answer ``request`` from the script when it is about the dataset, else refuse it."""
        try:
            name = dataset_of(request)
        except KeyError:
            return self.script(request, serial)
        if name != self.dataset:
            return unscripted(name, [self.dataset])
        return self.script(request, serial)
