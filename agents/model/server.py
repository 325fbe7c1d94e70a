"""What a local server needs: its window, how many requests it serves at once, when it's up.

Researchers run open models on llama.cpp, vLLM or Ollama: a window of a few thousand tokens, one request
served at a time, a server started a moment before the run. Each fact is taken from the server where it says
it and from the config where it does not:

- the **context window**: vLLM's ``/v1/models`` (``max_model_len``), llama.cpp's ``/props``
  (``default_generation_settings.n_ctx``), else ``agent.server.context_window``, else learnt from the first
  overflow error (every server names its window there: "maximum context length is 8192 tokens");
- the **slots** (requests in flight at once): llama.cpp's ``/props`` (``total_slots``), else
  ``agent.server.slots``. A request waits for a slot *before* it is sent, so its timeout counts only the time
  the server spends on it: a one-slot server given four candidates' calls queues them here instead of timing
  them out on its own queue. The slots are lock files, so every thread, event loop and worker process of a run
  (and of other runs on the machine) shares them;
- **up**: ``agent.server.wait_s`` seconds of waiting for the first answer of ``/v1/models``, so a command
  started right after the server (``python -m llama_cpp.server ... &``) does not fail on a refused connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import fcntl
import hashlib
import ipaddress
import json
import logging
import os
import re
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

__all__ = [
    "EndpointSlots",
    "ServerFacts",
    "ServerOptions",
    "discover",
    "is_loopback",
    "served_model",
    "window_from_error",
]

# The phrases servers put the window in: OpenAI and llama-cpp-python ("maximum context length is 8192
# tokens"), llama.cpp ("the request exceeds the available context size (8192 tokens)"), vLLM ("this model's
# maximum context length is 4096 tokens"), "context window of 8192" (llama-cpp-python's own message).
_WINDOW_PATTERNS = (
    re.compile(r"maximum context length is (\d+)", re.IGNORECASE),
    re.compile(r"context window of (\d+)", re.IGNORECASE),
    re.compile(r"context size \((\d+) tokens\)", re.IGNORECASE),
    re.compile(r"context length of (\d+)", re.IGNORECASE),
)
_POLL_S = 0.05

log = logging.getLogger(__name__)


def window_from_error(message: str) -> int | None:
    """The window (tokens) a server's overflow error message names, or None."""
    for pattern in _WINDOW_PATTERNS:
        found = pattern.search(message)
        if found:
            return int(found.group(1))
    return None


def is_loopback(api_base: str | None) -> bool:
    """Whether ``api_base`` is a server on this machine (127.0.0.0/8, ::1, localhost)."""
    if not api_base:
        return False
    host = urlsplit(api_base).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _positive(name: str, value: Any) -> int | None:
    if value is None or (isinstance(value, str) and value.lower() in ("auto", "none", "null")):
        return None
    if isinstance(value, bool):
        raise ValueError(f"agent.server.{name}={value!r}: expected a positive integer or auto")
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise ValueError(f"agent.server.{name}={value!r}: expected a positive integer or auto") from None
    if number < 1:
        raise ValueError(f"agent.server.{name}={value!r}: must be 1 or more")
    return number


@dataclass(frozen=True)
class ServerOptions:
    """The ``agent.server`` block: what the config says of the server (None: ask the server).

    Attributes:
        context_window: Tokens the server's window holds, or None to ask it (then learn it from an overflow).
        slots: Requests the server serves at once, or None to ask it (then: no bound).
        wait_s: Seconds to wait for the server to answer before the run starts (0: do not wait).
    """

    context_window: int | None = None
    slots: int | None = None
    wait_s: float = 0.0

    @classmethod
    def of(cls, value: ServerOptions | Mapping[str, Any] | None) -> ServerOptions | None:
        """The options from the config (``agent.server.context_window=8192 agent.server.slots=1``).

        Args:
            value: Options, a mapping of their fields (``auto`` or null for "ask the server"), or None.

        Returns:
            The options, or None when there is no ``server`` block (nothing is asked or bounded).

        Raises:
            ValueError: An unknown key, or a value that is not a positive integer / ``auto``.
        """
        if value is None or isinstance(value, ServerOptions):
            return value
        unknown = sorted(set(value) - {"context_window", "slots", "wait_s"})
        if unknown:
            raise ValueError(f"agent.server: unknown keys {unknown}; valid: context_window, slots, wait_s")
        try:
            wait = float(value.get("wait_s") or 0.0)
        except (TypeError, ValueError):
            raise ValueError(f"agent.server.wait_s={value.get('wait_s')!r}: expected seconds") from None
        if wait < 0:
            raise ValueError(f"agent.server.wait_s={wait}: cannot be negative")
        return cls(
            _positive("context_window", value.get("context_window")),
            _positive("slots", value.get("slots")),
            wait,
        )

    def resolve(self, api_base: str | None) -> tuple[int | None, int | None]:
        """The window and slots: the config's, else what the server says (asked once, waiting ``wait_s``).

        Args:
            api_base: The endpoint; None (a hosted API) asks nothing.

        Returns:
            ``(context_window, slots)``, each None where neither the config nor the server said.
        """
        window, slots = self.context_window, self.slots
        if api_base and (window is None or slots is None or self.wait_s > 0):
            facts = discover(api_base, self.wait_s)
            if not facts.answered and self.wait_s > 0:
                log.warning(
                    "%s did not answer in %.0f s; the run's first call will tell", api_base, self.wait_s
                )
            window = window or facts.context_window
            slots = slots or facts.slots
        return window, slots


@dataclass(frozen=True)
class ServerFacts:
    """What a server said of itself.

    Attributes:
        context_window: Its window in tokens, when it says.
        slots: Requests it serves at once, when it says.
        models: The model ids it serves.
        answered: Whether it answered at all.
        model_path: The weights file it loaded, when it says (llama.cpp's ``/props``).
    """

    context_window: int | None = None
    slots: int | None = None
    models: tuple[str, ...] = ()
    answered: bool = False
    model_path: str | None = None

    @property
    def identity(self) -> str | None:
        """What it serves, in one line (``"ids=a,b path=/m.gguf"``); None when it said nothing."""
        parts = [f"ids={','.join(sorted(self.models))}"] if self.models else []
        parts += [f"path={self.model_path}"] if self.model_path else []
        return " ".join(parts) or None


def _get_json(url: str, timeout_s: float) -> Any:
    with urllib.request.urlopen(url, timeout=timeout_s) as response:
        return json.loads(response.read().decode("utf-8", "replace"))


def _refused(exc: BaseException) -> bool:
    reason = getattr(exc, "reason", exc)
    return isinstance(reason, ConnectionError | TimeoutError) or getattr(reason, "errno", None) in (
        errno.ECONNREFUSED,
        errno.ECONNRESET,
    )


def discover(api_base: str, wait_s: float = 0.0, timeout_s: float = 5.0) -> ServerFacts:
    """Ask an OpenAI-compatible server for its models, window and slots; never raises.

    Args:
        api_base: The endpoint (``http://127.0.0.1:8080/v1``).
        wait_s: Seconds to keep asking while the connection is refused (a server still starting).
        timeout_s: Seconds per request.

    Returns:
        What it said; ``answered=False`` when ``/models`` never answered.
    """
    base = api_base.rstrip("/")
    deadline = time.monotonic() + wait_s
    listing: Any = None
    while True:
        try:
            listing = _get_json(f"{base}/models", timeout_s)
            break
        except (urllib.error.URLError, OSError, ValueError) as exc:
            if isinstance(exc, urllib.error.HTTPError) or not _refused(exc) or time.monotonic() >= deadline:
                listing = None
                break
            time.sleep(0.25)
    if listing is None:
        return ServerFacts()
    entries = listing.get("data") if isinstance(listing, dict) else None
    entries = [e for e in entries or [] if isinstance(e, dict)]
    models = tuple(str(e.get("id")) for e in entries if e.get("id"))
    window = next((int(e["max_model_len"]) for e in entries if isinstance(e.get("max_model_len"), int)), None)
    slots = None
    root = base[: -len("/v1")] if base.endswith("/v1") else base
    try:
        props = _get_json(f"{root}/props", timeout_s)
    except (urllib.error.URLError, OSError, ValueError):
        props = None
    if isinstance(props, dict):
        settings = props.get("default_generation_settings")
        n_ctx = settings.get("n_ctx") if isinstance(settings, dict) else None
        window = window or (n_ctx if isinstance(n_ctx, int) and n_ctx > 0 else None)
        total = props.get("total_slots")
        slots = total if isinstance(total, int) and total > 0 else None
        path = props.get("model_path")
        model_path = path if isinstance(path, str) and path else None
    else:
        model_path = None
    return ServerFacts(window, slots, models, True, model_path)


def served_model(api_base: str) -> str | None:
    """The identity of the model behind ``api_base`` (`ServerFacts.identity`): one ``GET /models`` (and
    ``/props``).

    ``agent=local`` names every model ``openai/local``: the name says nothing of the weights behind the port,
    so the request cache key and ``run.json`` carry what the server says it serves. Each `ModelClient` asks
    once, before its first call, and keeps the answer for its run (a run in a notebook that follows a model
    swap asks again: it builds new clients).

    Args:
        api_base: The endpoint.

    Returns:
        The identity, or None when the server did not say (did not answer, or lists no model).
    """
    return discover(api_base.strip().rstrip("/")).identity


class EndpointSlots:
    """At most ``slots`` requests in flight to one endpoint, across threads, event loops and processes.

    Each slot is a lock file (``flock``) under the temporary folder, named by the endpoint; a request polls
    for a free one (cancellable: a Ctrl-C while waiting holds nothing) and frees it when its answer is in. A
    process that dies frees its slot with its file descriptors.

    Args:
        endpoint: The endpoint's identity (the cache key's), naming the lock files.
        slots: How many requests may be in flight.
        folder: Where the lock files live (default: ``<tmp>/medstrat-slots``).
    """

    def __init__(self, endpoint: str, slots: int, folder: Path | None = None) -> None:
        if slots < 1:
            raise ValueError(f"slots must be 1 or more, got {slots}")
        self.slots = slots
        digest = hashlib.sha256(endpoint.encode("utf-8")).hexdigest()[:16]
        self.folder = folder or Path(tempfile.gettempdir()) / "medstrat-slots"
        self._paths = [self.folder / f"{digest}-{k}.lock" for k in range(slots)]

    def _try(self) -> int | None:
        self.folder.mkdir(parents=True, exist_ok=True)
        for path in self._paths:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            return fd
        return None

    @contextlib.asynccontextmanager
    async def hold(self) -> AsyncIterator[float]:
        """Wait for a free slot and hold it for the block.

        Yields:
            Seconds spent waiting for it.
        """
        start = time.perf_counter()
        fd = self._try()
        while fd is None:
            await asyncio.sleep(_POLL_S)
            fd = self._try()
        try:
            yield time.perf_counter() - start
        finally:
            os.close(fd)  # closing the descriptor releases its lock
