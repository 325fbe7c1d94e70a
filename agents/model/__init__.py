"""The model client and what serves it: one LiteLLM call with its cache, retries, server discovery and keys.

- `config`: `ModelConfig`, the one typed object a client (and the judge) is built from, and `TokenPrice`;
- `client`: `ModelClient`, one chat request through LiteLLM (usage, cost, the endpoint's slots);
- `cache`: `RequestCache`, the disk cache keyed on the full request (model, endpoint, sampling, seed, index);
- `retry`: `RetryPolicy`, which provider errors are transient and how long to wait;
- `server`: a local server's window and slots (`ServerOptions`, `EndpointSlots`);
- `credentials`: the provider's API key, checked before litellm is imported;
- `offline`: litellm imported without fetching its price map (a name a fork server can preload);
- `vision`: whether images are sent to the model;
- `judge`: `LiteLLMJudge`, the judge role over the same client.

Nothing here knows a tool or an agent mode (`tests/architecture/test_agent_seams.py`). Importing the package
imports neither litellm nor any submodule.
"""
