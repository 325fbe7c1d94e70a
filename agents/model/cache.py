"""A persistent SQLite cache of model responses, so rerunning an experiment spends no tokens.

The key is a SHA-256 of the canonical JSON of everything that determines a sample: the model string, the
endpoint that serves it (the provider LiteLLM routes to and ``api_base``: the same model name on another
server is another model), what the server at ``api_base`` says it serves (its ``/v1/models`` ids and
llama.cpp's ``model_path``: other weights behind the same name and port are another model), the messages, the
tool definitions, the sampling parameters (with the ``seed``, which carries ``run.seed`` and the candidate
index: a repeat is a new sample, a rerun of the same seed is free) and the candidate index (so n candidates
are n distinct samples even at identical prompts). Credentials are never part of the key and never stored. The
value is our normalized response (the assistant message) with the usage and cost it had when it was first
bought, so a replay reports the same usage.

``RequestCache(path, refresh=True)`` (``agent.cache=refresh``) answers nothing and overwrites what it buys:
the way to re-buy after the model behind an unchanged name and endpoint changed (a new checkpoint, an ``ollama
pull``) that the server's ``/v1/models`` does not show (the same file name).
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

__all__ = ["CachedResponse", "RequestCache", "endpoint_of", "request_key", "sampling_seed"]

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


def sampling_seed(seed: int, candidate_index: int, salt: str = "") -> int:
    """The provider ``seed`` of one candidate: a stable 31-bit mix of its task seed and its index.

    A task seed is ``run.seed + k`` for candidate k, so ``run.seed=1``'s candidate 0 and ``run.seed=0``'s
    candidate 1 share one; mixed with the index every (run seed, candidate) pair samples with its own seed.
    31 bits: every provider that takes a seed takes a non-negative 32-bit integer.

    Args:
        seed: The task's seed (``Task.seed``).
        candidate_index: The candidate index.
        salt: Further material (a revision's digest of what it revises), empty for a generation.

    Returns:
        An integer in ``[0, 2**31)``.
    """
    material = f"{int(seed)}:{int(candidate_index)}" + (f":{salt}" if salt else "")
    digest = hashlib.sha256(material.encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def endpoint_of(provider: str, api_base: str | None) -> str:
    """The endpoint part of a key, no credentials: ``"<provider> <api_base>"`` (LiteLLM's provider name, the
    endpoint override without its trailing slash; ``"openai "`` for the provider's default endpoint).
    """
    return f"{provider} {(api_base or '').strip().rstrip('/')}"


def request_key(
    model: str,
    messages: Sequence[Mapping[str, Any]],
    tools: Sequence[Mapping[str, Any]] | None,
    params: Mapping[str, Any],
    candidate_index: int,
    *,
    endpoint: str,
    served: str | None = None,
) -> str:
    """Hash one request into a cache key.

    Args:
        model: The LiteLLM model string.
        messages: The chat messages sent.
        tools: The tool definitions sent.
        params: Sampling parameters (temperature, max_tokens, seed, ...), also those the provider is not
            sent (a ``seed`` for a provider without one still makes seeds distinct samples).
        candidate_index: Which candidate asks, so n candidates draw n samples.
        endpoint: Who serves the model (`endpoint_of`).
        served: What the server at the endpoint says it serves (`agents.model.server.served_model`), or
            None (a hosted API): another model behind the same name and port is another key. None leaves
            the key as it was before identities existed, so the caches of hosted runs still answer.

    Returns:
        A hex SHA-256 digest.
    """
    payload = {
        "model": model,
        "endpoint": endpoint,
        "messages": list(messages),
        "tools": list(tools or []),
        "params": dict(params),
        "candidate_index": candidate_index,
    }
    if served is not None:
        payload["served"] = served
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
        refresh: Answer nothing and overwrite what is stored (``agent.cache=refresh``): every call is bought
            again and its answer replaces the old one.

    Raises:
        sqlite3.Error: The file exists but is not a usable SQLite database.
    """

    def __init__(self, path: Path, *, refresh: bool = False) -> None:
        self.path = Path(path)
        self.refresh = refresh
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
            The stored response, or None (always None when refreshing).
        """
        if self.refresh:
            return None
        with self._lock:
            row = self._conn.execute(
                "SELECT message, prompt_tokens, completion_tokens, cost_usd FROM responses WHERE key = ?",
                (key,),
            ).fetchone()
        if row is None:
            return None
        return CachedResponse(json.loads(row[0]), int(row[1]), int(row[2]), float(row[3]))

    def put(self, key: str, model: str, response: CachedResponse) -> None:
        """Store a response (the first one stored for a key wins; when refreshing, the last one).

        Args:
            key: From `request_key`.
            model: The model string (kept for inspection).
            response: What to store.
        """
        blob = json.dumps(response.message, ensure_ascii=False, sort_keys=True)
        with self._lock:
            self._conn.execute(
                f"INSERT OR {'REPLACE' if self.refresh else 'IGNORE'} INTO responses "
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
