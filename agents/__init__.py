"""Agents that standardize one dataset: the offline `rules` baseline and the LiteLLM tool-calling agent.

litellm is imported only when the LiteLLM agent is constructed, never at package import.
"""
