"""Inference-time strategies S0-S4 and the registry of selection heuristics."""
