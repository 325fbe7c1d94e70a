"""The offline `rules` baseline: a deterministic standardizer in code (no model)
with seeded sampling noise."""

from agents.rules.agent import RulesAgent
from agents.rules.decisions import Decider, DecisionRecord, Hypothesis, softmax

__all__ = ["Decider", "DecisionRecord", "Hypothesis", "RulesAgent", "softmax"]
