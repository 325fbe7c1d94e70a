"""A JSONL trace of one candidate: every model call and every tool call, one JSON object per line.

Secrets never reach the file: every string is scrubbed of the values of credential-looking environment
variables (``*_API_KEY``, ``*_TOKEN``, ``*SECRET*`` ...) and of any extra secret the caller registers, and
inline images (``data:`` URLs) are replaced by their length so traces stay small. Any other string longer
than `LONG_STRING` characters (a model's 5 MB tool argument) is stored as its head, its tail, its length
and the sha256 of the whole, so a trace stays readable and small whatever the model sends.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any, TextIO

__all__ = ["LONG_STRING", "REDACTED", "TraceWriter", "redact", "secret_values", "shorten"]

REDACTED = "[redacted]"
#: Strings longer than this are traced as head + tail + length + sha256.
LONG_STRING = 8192
_KEPT_CHARS = 1024

_SECRET_NAME = re.compile(r"(API_?KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL)", re.IGNORECASE)
# Short values (e.g. "1", "true") would scrub harmless text everywhere; real keys are long.
_MIN_SECRET_LEN = 8
_DATA_URL = re.compile(r"data:image/[a-z0-9.+-]+;base64,[A-Za-z0-9+/=]+")


def secret_values(extra: Iterable[str | None] = ()) -> tuple[str, ...]:
    """The secret strings to scrub, longest first (a key containing another is scrubbed whole):
    credential-like environment variables plus ``extra`` (e.g. an API key passed explicitly; None entries are
    ignored).
    """
    found = {v for k, v in os.environ.items() if _SECRET_NAME.search(k) and len(v) >= _MIN_SECRET_LEN}
    found.update(v for v in extra if v and len(v) >= _MIN_SECRET_LEN)
    return tuple(sorted(found, key=len, reverse=True))


def shorten(text: str) -> str | dict[str, Any]:
    """A long string as ``{"head", "tail", "length", "sha256"}``; a short one as it is.

    Args:
        text: Any string.

    Returns:
        ``text`` when it has at most `LONG_STRING` characters, else its summary.
    """
    if len(text) <= LONG_STRING:
        return text
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    return {"head": text[:_KEPT_CHARS], "tail": text[-_KEPT_CHARS:], "length": len(text), "sha256": digest}


def redact(value: Any, secrets: tuple[str, ...]) -> Any:
    """A copy of the JSON-able ``value`` with every secret replaced by ``[redacted]`` and inline images
    summarised, recursively (long strings shortened by `shorten`, secrets scrubbed from head and tail too).
    """
    if isinstance(value, str):
        out = _DATA_URL.sub(lambda m: f"<inline image, {len(m.group(0))} chars>", value)
        short = shorten(out)
        if isinstance(short, dict):
            return {k: redact(v, secrets) for k, v in short.items()}
        for secret in secrets:
            if secret in out:
                out = out.replace(secret, REDACTED)
        return out
    if isinstance(value, dict):
        return {str(k): redact(v, secrets) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact(v, secrets) for v in value]
    return value


class TraceWriter:
    """Append-only JSONL trace; each line has ``t`` (seconds since the trace opened) and ``event``.

    Args:
        path: The trace file (parent folders are created; an existing file is appended to).
        secrets: Extra secret strings to scrub besides the environment's.

    Example:
        >>> with TraceWriter(tmp / "trace.jsonl") as trace:  # doctest: +SKIP
        ...     trace.write("tool", name="list_dir", args={"path": "data"})
    """

    def __init__(self, path: Path, secrets: Iterable[str | None] = ()) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._secrets = secret_values(secrets)
        self._start = time.perf_counter()
        self._lock = threading.Lock()
        self._handle: TextIO | None = self.path.open("a", encoding="utf-8")

    def write(self, event: str, **fields: Any) -> None:
        """Append one event.

        Args:
            event: The event kind (``"start"``, ``"model_call"``, ``"tool"``, ``"end"`` ...).
            **fields: JSON-able details; non-JSON values are stringified.
        """
        record = {"t": round(time.perf_counter() - self._start, 4), "event": event, **fields}
        line = json.dumps(redact(record, self._secrets), ensure_ascii=False, default=str)
        with self._lock:
            if self._handle is None:
                return
            self._handle.write(line + "\n")
            self._handle.flush()

    def close(self) -> None:
        """Close the file; later writes are ignored."""
        with self._lock:
            if self._handle is not None:
                self._handle.close()
                self._handle = None

    def __enter__(self) -> TraceWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
