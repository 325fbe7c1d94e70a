"""Is there a key for the chosen provider? Answered before the first model call, before litellm is imported.

Importing litellm takes seconds; a user who forgot to export the key should hear so at once, in one line,
not after a retried "Missing credentials" error behind a progress bar. `missing_key_message` answers for the
common hosted providers from the environment alone; `litellm_missing_key_message` asks
``litellm.validate_environment`` for every other provider, once litellm is loaded.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from types import ModuleType

from core.cli_errors import CliError

__all__ = ["KEY_VARIABLES", "MissingApiKeyError", "litellm_missing_key_message", "missing_key_message"]

KEY_VARIABLES: dict[str, tuple[str, ...]] = {
    "openai": ("OPENAI_API_KEY",),
    "anthropic": ("ANTHROPIC_API_KEY",),
    "gemini": ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
    "mistral": ("MISTRAL_API_KEY",),
    "groq": ("GROQ_API_KEY",),
    "deepseek": ("DEEPSEEK_API_KEY",),
    "openrouter": ("OPENROUTER_API_KEY",),
    "xai": ("XAI_API_KEY",),
    "cohere": ("COHERE_API_KEY", "CO_API_KEY"),
    "together_ai": ("TOGETHERAI_API_KEY", "TOGETHER_API_KEY", "TOGETHER_AI_API_KEY"),
    "fireworks_ai": ("FIREWORKS_AI_API_KEY", "FIREWORKS_API_KEY"),
}
"""Provider prefix of a LiteLLM model string → the environment variables that can hold its key (any one)."""

# Providers whose credentials may come from elsewhere than one key variable (cloud profiles, AD tokens,
# local servers): `litellm.validate_environment` cannot tell that they are missing, so it is not trusted for
# them.
_OTHER_CREDENTIALS = frozenset(
    {"azure", "azure_ai", "bedrock", "sagemaker", "vertex_ai", "vertex_ai_beta", "watsonx", "huggingface"}
)


class MissingApiKeyError(CliError, ValueError):
    """No key for the chosen provider: a configuration error, reported before any call (exit 2).

    A `core.cli_errors.CliError`: its message is the whole line the user sees (not wrapped as a refused
    option of the agent).

    Args:
        message: One line naming the model and the variable to set.
    """


def _provider(model: str) -> str:
    if "/" in model:
        return model.split("/", 1)[0].lower()
    # Bare model names LiteLLM routes by their family.
    name = model.lower()
    if name.startswith(("gpt-", "o1", "o3", "o4", "chatgpt")):
        return "openai"
    if name.startswith("claude"):
        return "anthropic"
    return ""


def _message(model: str, names: tuple[str, ...] | list[str]) -> str:
    either = " or ".join(names)
    return f"no API key for {model}: set {either} in the environment"


def missing_key_message(
    model: str, api_key: str | None = None, env: Mapping[str, str] | None = None
) -> str | None:
    """One line naming the missing key variable of a common hosted provider, checked in ``env`` (default
    ``os.environ``) without importing litellm; None when an explicit ``api_key`` or a variable holds a key, or
    when the provider is not in `KEY_VARIABLES` (then `litellm_missing_key_message` decides).
    """
    if api_key:
        return None
    names = KEY_VARIABLES.get(_provider(model))
    if names is None:
        return None
    env = os.environ if env is None else env
    if any(env.get(name) for name in names):
        return None
    return _message(model, names)


def litellm_missing_key_message(
    litellm: ModuleType, model: str, api_key: str | None = None, api_base: str | None = None
) -> str | None:
    """Ask ``litellm.validate_environment`` about a provider `KEY_VARIABLES` does not cover: one line naming
    the missing variable, or None.

    Only missing ``*_API_KEY`` variables count, and only for providers whose key has no other source (cloud
    profiles, local servers: one at ``api_base`` often needs no key): a false alarm would stop a run that
    would have worked.
    """
    provider = _provider(model)
    if api_key or provider in KEY_VARIABLES or provider in _OTHER_CREDENTIALS or "/" not in model:
        return None
    try:
        report = litellm.validate_environment(model=model, api_key=api_key, api_base=api_base)
    except Exception:  # a model litellm cannot place: the first call will say why
        return None
    missing = [str(k) for k in report.get("missing_keys") or []]
    if report.get("keys_in_environment") or not missing:
        return None
    if not all(k.endswith("_API_KEY") for k in missing):
        return None
    return _message(model, missing)
