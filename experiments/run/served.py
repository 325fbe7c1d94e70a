"""Which model produced a run's results: per role, the model the config names and the one the server serves.

``agent=local`` names every model ``openai/local``; what answered is what the server says it serves
(`agents.model.server.served_model`: its ``/v1/models`` ids, llama.cpp's ``model_path``). ``run.json`` keeps
both for every role with a model (the agent, each pool member, the reviser, the judge), and the run's summary
line shows the served model where it is not the name the config gives.
"""

from __future__ import annotations

from typing import Any

from agents.model.server import served_model

__all__ = ["role_models", "served_label"]


def _client(obj: Any) -> Any:
    client = getattr(obj, "client", None)
    return client if client is not None and hasattr(client, "endpoint") else None


def _entry(role: str, client: Any) -> dict[str, Any]:
    served = client.served
    if served is None and client.api_base:
        # A client that made no call (the workers of run.processes=N made them): ask the server now.
        served = served_model(str(client.api_base))
    return {"role": role, "model": client.model, "api_base": client.api_base, "served": served}


def role_models(agent: Any, judge: Any = None) -> list[dict[str, Any]]:
    """The models of a run's roles, as ``run.json`` keeps them.

    Args:
        agent: The plan's agent (a plain agent or an `agents.roles.RoleAgent` with a pool and a reviser).
        judge: The plan's judge, if any.

    Returns:
        One ``{"role", "model", "api_base", "served"}`` per role that calls a model through a client
        (``served`` None for a hosted API or a server that did not say); empty for the rules agent.
    """
    out: list[dict[str, Any]] = []
    pool = getattr(agent, "pool", None)
    if pool:
        for member in pool:
            client = _client(member.agent)
            if client is not None:
                out.append(_entry(f"pool:{member.label}", client))
        reviser = _client(getattr(agent, "reviser", None))
        if reviser is not None:
            out.append(_entry(f"reviser:{getattr(agent, 'reviser_label', 'reviser')}", reviser))
    elif _client(agent) is not None:
        out.append(_entry("agent", _client(agent)))
    if _client(judge) is not None:
        out.append(_entry("judge", _client(judge)))
    return out


def served_label(models: list[dict[str, Any]]) -> str | None:
    """``served <identity>`` for the summary line when a server's identity differs from the config's name.

    Args:
        models: `role_models`.

    Returns:
        The text to show (the distinct identities, ``;``-joined), or None when every model is its name.
    """
    shown = []
    for entry in models:
        served = entry.get("served")
        name = str(entry.get("model") or "").split("/", 1)[-1]
        if served and served not in shown and served != f"ids={name}":
            shown.append(served)
    return "served " + "; ".join(shown) if shown else None
