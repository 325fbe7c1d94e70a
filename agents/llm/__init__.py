"""The model-driven agent: a language model standardizes one dataset, in one of three modes.

Named for what drives it (a language model), not for the library that carries the calls: the calls go
through `agents.model` (LiteLLM today) and the tools are `agents.tools`; this package is the agent itself.

- `agent`: `LiteLLMAgent`, the `Agent` over any LiteLLM model string (``agent=litellm`` / ``agent=local``);
  it picks the mode and its fallback; `options`: `AgentOptions`, its one typed options object;
- the modes, as siblings: the tools loop (`conversation`, with `phases` for a dataset larger than a batch),
  ``guided`` (`guided`: the framework walks the steps, the model answers
  each with one constrained reply) and ``script`` (`script_mode`: the model writes and runs one conversion
  script);
- what they share: `prompts`, `context` (the bounded window sent), `outcome` (a candidate's status from its
  conversations), `progress` (a conversation that ends on a limit with nothing written).

Importing the package imports neither litellm nor any submodule.
"""
