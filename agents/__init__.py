"""Agents that standardize one dataset: the offline `rules` baseline and the LiteLLM tool-calling agent.

litellm is imported only when the LiteLLM agent is constructed, never at package import.
"""

from agents.base import (
    OUTPUT_SUBDIR,
    Agent,
    Candidate,
    FatalAgentError,
    Feedback,
    Limits,
    ManifestEntry,
    Task,
    Usage,
)

__all__ = [
    "OUTPUT_SUBDIR",
    "Agent",
    "Candidate",
    "FatalAgentError",
    "Feedback",
    "Limits",
    "ManifestEntry",
    "Task",
    "Usage",
]
