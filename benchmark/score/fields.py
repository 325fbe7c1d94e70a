"""The field matcher φ(key, actual, expected) and block scores (SPEC §3.4).

Dispatch is by the type of the *expected* value, then by the key name: enum keys compare lower-case exact,
path keys compare normalised full paths (or stems), everything else compares ``norm_token`` text.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from benchmark.score import constants as C
from benchmark.score.normalize import is_number, is_placeholder, norm_full_path, norm_text, norm_token, round4
from benchmark.score.source import aliases_of, normalize_source_stem


@dataclass(frozen=True)
class MatchOptions:
    """GT ``content`` switches that change how strings are compared.

    Attributes:
        strict_path_full_match: Always compare path keys as full paths.
        strict_text_keys: Keys compared lower-case exact instead of by token.
    """

    strict_path_full_match: bool = False
    strict_text_keys: frozenset[str] = field(default_factory=frozenset)

    @staticmethod
    def from_content(content: dict[str, Any]) -> MatchOptions:
        """Read the options from a GT ``content`` block."""
        keys = content.get("strict_content_text_keys")
        return MatchOptions(
            strict_path_full_match=bool(content.get("strict_path_full_match", False)),
            strict_text_keys=frozenset(str(k).lower() for k in keys)
            if isinstance(keys, list)
            else frozenset(),
        )


_DEFAULT_OPTIONS = MatchOptions()


def is_path_key(key: str) -> bool:
    """Whether the key names a path (``*path*``, ``*source_file*``, ``*filename*``, ``*_relative``,
    ``*_relpath``).
    """
    k = key.lower()
    return any(t in k for t in C.PATH_KEY_CONTAINS) or k.endswith(C.PATH_KEY_ENDSWITH)


def _is_null_expected(expected: Any) -> bool:
    return expected is None or (isinstance(expected, str) and expected.strip().lower() in C.NULL_EQ_TOKENS)


def field_score(key: str, actual: Any, expected: Any, opts: MatchOptions | None = None) -> float:
    """φ: how well ``actual`` (None when absent) reproduces the GT value ``expected`` under ``key`` (0..1);
    ``key`` drives the enum / path / text dispatch for strings, ``opts`` are the GT content switches."""
    opts = opts or _DEFAULT_OPTIONS
    if type(expected) is str:  # most GT values: their normal forms are memoised
        null_like, text, token = _expected_text(expected)
        if null_like:
            return 1.0 if is_placeholder(actual, key) else 0.0
        return _string_score(key, actual, expected, opts, text, token)
    if _is_null_expected(expected):
        return 1.0 if is_placeholder(actual, key) else 0.0
    if isinstance(expected, bool):
        return 1.0 if actual is expected else 0.0
    if is_number(expected):
        try:
            return 1.0 if float(actual) == float(expected) else 0.0
        except (TypeError, ValueError):
            return 0.0
    if isinstance(expected, list):
        want = {norm_token(v) for v in expected}
        got = {norm_token(v) for v in actual} if isinstance(actual, list) else set()
        union = want | got
        return len(want & got) / len(union) if union else 1.0
    if isinstance(expected, dict):
        return block_score(actual, expected, opts)
    text = str(expected)
    return _string_score(key, actual, text, opts, norm_text(text), norm_token(text))


@lru_cache(maxsize=4096)
def _key_kind(key: str) -> tuple[str, bool, bool]:
    # (lower-cased key, enum key?, path key?): a GT has a few dozen keys, looked up for every sample.
    k = key.lower()
    return k, k in C.ENUM_KEYS, is_path_key(k)


@lru_cache(maxsize=65_536)
def _expected_text(expected: str) -> tuple[bool, str, str]:
    # (null-like?, norm_text, norm_token) of a GT string: the same few hundred strings for every sample.
    return expected.strip().lower() in C.NULL_EQ_TOKENS, norm_text(expected), norm_token(expected)


def _string_score(
    key: str, actual: Any, expected: str, opts: MatchOptions, expected_text: str, expected_token: str
) -> float:
    if actual is None:
        return 0.0
    k, enum_key, path_key = _key_kind(key)
    if enum_key:
        return 1.0 if norm_text(actual) == expected_text else 0.0
    if path_key:
        full = opts.strict_path_full_match or "/" in expected or "\\" in expected
        if full or C.PATH_EXTENSION_RE.search(expected.strip()):
            return 1.0 if norm_full_path(actual) == norm_full_path(expected) else 0.0
        got, want = normalize_source_stem(actual), normalize_source_stem(expected)
        return 1.0 if got and want and aliases_of({got}) & aliases_of({want}) else 0.0
    if k in opts.strict_text_keys:
        return 1.0 if norm_text(actual) == expected_text else 0.0
    return 1.0 if norm_token(actual) == expected_token else 0.0


def block_score(actual: Any, expected: dict[str, Any], opts: MatchOptions | None = None) -> float:
    """Mean φ over the expected keys, rounded to 4 decimals (like the reference); 1.0 for an empty block."""
    if not expected:
        return 1.0
    block = actual if isinstance(actual, dict) else {}
    total = 0.0
    for k, v in expected.items():
        total += field_score(k, block.get(k), v, opts)
    return round4(total / len(expected))
