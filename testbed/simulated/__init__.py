"""The gated ``simulated`` agent: correct outputs with labelled, sampled mistakes (`testbed.perturb`).

SIMULATION ONLY: it reads a correct output (the oracle export, i.e. ground truth), so it runs only with
``analysis.simulated=true`` and every result is marked "simulation".
"""

from testbed.simulated.agent import SimulatedAgent, SimulationNotAllowed, SimulationSourceMissing

__all__ = ["SimulatedAgent", "SimulationNotAllowed", "SimulationSourceMissing"]
