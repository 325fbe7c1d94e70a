"""A perturbation simulator written from the output format: realistic agent mistakes on correct outputs.

It turns any correct output folder (the oracle export of a suite) into candidates with labelled mistakes: the
paper's four error categories (source grounding, semantic confusion, content omission, unsupported filling),
image mistakes and format mistakes. Deterministic and seeded; every applied mistake is written to
``<candidate>/mistakes.json`` so selectors can be measured per kind of mistake (`miss_rates`).

Example:
    >>> from testbed.perturb import perturb_folder, read_mistakes, MixConfig
    >>> labels = perturb_folder(oracle_dir, cand_dir, dataset_root, seed=3, config=MixConfig(clean=0.45))
    >>> read_mistakes(cand_dir)[0]
    frozenset({'neighbour_image'})
"""

from testbed.perturb.apply import (
    AGENT_DIR,
    Applied,
    MixConfig,
    correct_annotations,
    draw_mistakes,
    perturb_folder,
    replay_sample,
)
from testbed.perturb.labels import (
    MISTAKES_FILE,
    miss_rates,
    read_mistake_meta,
    read_mistakes,
    write_mistakes,
)
from testbed.perturb.mistake import CATEGORIES, MISTAKES, Mistake, SampleState

__all__ = [
    "AGENT_DIR",
    "CATEGORIES",
    "MISTAKES",
    "MISTAKES_FILE",
    "Applied",
    "Mistake",
    "MixConfig",
    "SampleState",
    "correct_annotations",
    "draw_mistakes",
    "miss_rates",
    "perturb_folder",
    "read_mistake_meta",
    "read_mistakes",
    "replay_sample",
    "write_mistakes",
]
