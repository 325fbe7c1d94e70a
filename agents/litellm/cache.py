"""A persistent SQLite cache of model responses, so rerunning an experiment spends no tokens.

The key is a SHA-256 of the canonical JSON of everything that determines a sample: the model string, the
messages, the tool definitions, the sampling parameters and the candidate index (so n candidates are n
distinct samples even at identical prompts). Endpoint and credentials are not part of the key and never
stored. The value is our normalized response (the assistant message) with the usage and cost it had when it
was first bought, so a replay reports the same usage.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["CachedResponse", "RequestCache", "request_key"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    message TEXT NOT NULL,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    cost_usd REAL NOT NULL,
    created REAL NOT NULL DEFAULT (julianday('now'))
)
"""


def request_key(
    model: str,
    messages: Sequence[Mapping[str, Any]],
    tools: Sequence[Mapping[str, Any]] | None,
    params: Mapping[str, Any],
    candidate_index: int,
) -> str:
    """Hash one request into a cache key.

    Args:
        model: The LiteLLM model string.
        messages: The chat messages sent.
        tools: The tool definitions sent.
        params: Sampling parameters (temperature, max_tokens, seed, ...).
        candidate_index: Which candidate asks, so n candidates draw n samples.

    Returns:
        A hex SHA-256 digest.
    """
    payload = {
        "model": model,
        "messages": list(messages),
        "tools": list(tools or []),
        "params": dict(params),
        "candidate_index": candidate_index,
    }
    blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class CachedResponse:
    """A stored response.

    Attributes:
        message: The assistant message (``role``, ``content``, ``tool_calls``) as plain JSON.
        prompt_tokens: Prompt tokens of the original call.
        completion_tokens: Completion tokens of the original call.
        cost_usd: Cost of the original call.
    """

    message: dict[str, Any]
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float


class RequestCache:
    """SQLite-backed response cache, safe to share between concurrent candidates of one process.

    Args:
        path: The database file (created with its folder when missing).

    Raises:
        sqlite3.Error: The file exists but is not a usable SQLite database.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        # WAL lets several processes of a sweep read while one writes.
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA busy_timeout=30000")
        # WAL + NORMAL: a crash may lose the last responses (re-bought on rerun), never corrupt the file.
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.execute(_SCHEMA)

    def get(self, key: str) -> CachedResponse | None:
        """Look a key up.

        Args:
            key: From `request_key`.

        Returns:
            The stored response, or None.
        """
        with self._lock:
            row = self._conn.execute(
                "SELECT message, prompt_tokens, completion_tokens, cost_usd FROM responses WHERE key = ?",
                (key,),
            ).fetchone()
        if row is None:
            return None
        return CachedResponse(json.loads(row[0]), int(row[1]), int(row[2]), float(row[3]))

    def put(self, key: str, model: str, response: CachedResponse) -> None:
        """Store a response (the first one stored for a key wins).

        Args:
            key: From `request_key`.
            model: The model string (kept for inspection).
            response: What to store.
        """
        blob = json.dumps(response.message, ensure_ascii=False, sort_keys=True)
        with self._lock:
            self._conn.execute(
                "INSERT OR IGNORE INTO responses "
                "(key, model, message, prompt_tokens, completion_tokens, cost_usd) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (key, model, blob, response.prompt_tokens, response.completion_tokens, response.cost_usd),
            )

    def __len__(self) -> int:
        with self._lock:
            return int(self._conn.execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def close(self) -> None:
        """Close the database connection."""
        with self._lock:
            self._conn.close()
