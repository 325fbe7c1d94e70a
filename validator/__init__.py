"""The output schema and a deterministic, ground-truth-free validator of candidate outputs."""
