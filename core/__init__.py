"""The lowest floor: plumbing every layer uses and that imports none of them.

- `core.registry`: one typed `Registry[T]` per kind of plug-in (strategies, selectors, agents, validator
  checks, metrics), lazy ``"module:object"`` entries, entry points, metadata per entry.
- `core.cli_errors`: the error policy of every command line (one line, a documented exit code).
- `core.errors`: `InputError`, the base of the errors that mean bad input.
- `core.atomic`: atomic file writes.
- `core.paths`: resolving paths below a real root.

Nothing here imports numpy or any other package of the project, so that every CLI can start with it cheaply.
"""
