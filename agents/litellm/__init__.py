"""The LiteLLM tool-calling agent (any LiteLLM model string) with sandboxed tools, cache, retries and budgets.

Importing this package does not import litellm; constructing `LiteLLMAgent` does.
"""

from agents.litellm.agent import LiteLLMAgent
from agents.litellm.budget import Budget, BudgetExceeded
from agents.litellm.cache import RequestCache
from agents.litellm.client import TokenPrice
from agents.litellm.retry import RetryPolicy
from agents.litellm.sandbox import Sandbox, SandboxError, SandboxLimits

__all__ = [
    "Budget",
    "BudgetExceeded",
    "LiteLLMAgent",
    "RequestCache",
    "RetryPolicy",
    "Sandbox",
    "SandboxError",
    "SandboxLimits",
    "TokenPrice",
]
