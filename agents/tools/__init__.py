"""Folder tools any agent may call: each one a typed argument model, a sandboxed function and a result.

- `tools`: `ToolBox`, the dispatcher (validates the model's arguments, runs the tool, turns every failure
  into a `ToolResult` the model reads) and `tool_definitions`, the JSON schemas sent to a provider;
- `tool_args`: `ToolArgs`, the base of every argument model;
- `folder_tools`, `table_tools`, `review_tools`: finding one's way in the dataset folder, reading label
  tables, reading and editing the candidate's own output;
- `file_notes`, `render_cache`: what an inspected file says about itself, and its renders cached per process;
- `sandbox`: `Sandbox`, read-only under the dataset, write-only under the candidate's output, size limits;
- `tool_pool`: the CPU-bound tools in worker processes;
- `code_tool`: ``run_python`` in a fresh sandboxed subprocess (`_code_child`).

Nothing here knows a model-driven agent, its conversation or its modes
(`tests/architecture/test_agent_seams.py`): a tool sees a `Task`, a `Sandbox` and its arguments.
"""
