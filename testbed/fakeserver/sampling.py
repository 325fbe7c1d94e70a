"""How the fake provider samples: above temperature 0 a replayed annotation carries its seed's mistakes.

A real model asked the same question with another ``seed`` at a temperature above 0 answers differently; a
replay that answered every seed alike would make a three-seed ablation show an sd of 0 and hide a seed that is
lost on its way to the provider. So `AnnotationSampler` edits the annotation of each ``write_annotation`` call
of a replay with mistakes from the perturbation catalogue (`testbed.perturb`), drawn from a stream seeded by
the request's ``seed`` (the agent mixes ``run.seed`` and the candidate index into it), the dataset and the
sample: the same seed gives the same answer (a rerun is answered alike, and the request cache can replay it),
another seed another one, and a request without a seed samples as seed 0. At temperature 0 nothing is
changed: the replay is exact.

Only the JSON mistakes of the paper's four error categories are drawn (source grounding, semantic confusion,
content omission, unsupported filling): the agent renders the images itself through the tools, so a mistake
in an image file has no tool-call form. A draw whose annotation would fail the output schema is dropped (the
sample stays clean), so the replayed conversation still finishes: the mistakes lower scores, they never make
a candidate fail.
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from testbed.fakeserver.script import Reply, Step

__all__ = ["SAMPLED_CATEGORIES", "AnnotationSampler", "request_sampling"]

SAMPLED_CATEGORIES = ("source_grounding", "semantic_confusion", "content_omission", "unsupported_filling")
"""The catalogue's categories a sampled reply draws from (MDS-Bench §4.3's four error categories)."""

_FILE_FIELDS = ("images", "masks")


def request_sampling(request: Mapping[str, Any]) -> tuple[float, int]:
    """The request's temperature (0 when absent) and seed (0 when absent).

    Args:
        request: A chat-completion request body.

    Returns:
        ``(temperature, seed)``.
    """
    try:
        temperature = float(request.get("temperature") or 0.0)
    except (TypeError, ValueError):
        temperature = 0.0
    seed = request.get("seed")
    return temperature, int(seed) if isinstance(seed, int) and not isinstance(seed, bool) else 0


class AnnotationSampler:
    """Draws a seed's mistakes into the annotations of a replay's ``write_annotation`` calls.

    Args:
        reference_dir: The correct ``agent1_data_organization`` folder (the rules agent's: the replay's).
        dataset_root: The dataset folder (some mistakes look at the raw files).
        dataset: The dataset name (seed material, so datasets sharing a seed draw differently).
        clean: Probability that a sample stays clean in a draw.
    """

    def __init__(self, reference_dir: Path, dataset_root: Path, dataset: str, clean: float = 0.45) -> None:
        from testbed.perturb import CATEGORIES, MISTAKES, MixConfig, correct_annotations

        self.reference_dir = Path(reference_dir)
        self.dataset_root = Path(dataset_root)
        self.dataset = dataset
        self._docs = correct_annotations(self.reference_dir)
        names = {
            name: 1.0
            for name, kind in MISTAKES.items()
            if kind.category in SAMPLED_CATEGORIES and not set(kind.fields) & set(_FILE_FIELDS)
        }
        # Every other mistake and category weighs nothing: only the names above are drawn.
        self.config = MixConfig(
            clean=clean, mix={**dict.fromkeys(CATEGORIES, 0.0), **names}, default_weight=0.0
        )

    def annotation(self, index: int, annotation: Mapping[str, Any], seed: int) -> dict[str, Any]:
        """The annotation a sample's ``write_annotation`` carries at ``seed``.

        Args:
            index: The manifest index.
            annotation: The replayed (correct) annotation.
            seed: The request's seed.

        Returns:
            A copy with the seed's mistakes (unchanged when the draw is clean or fails the schema).
        """
        from testbed.perturb import SampleState, draw_mistakes
        from validator.schema import Annotation

        original: dict[str, Any] = json.loads(json.dumps(dict(annotation)))
        state = SampleState(
            index=index,
            annotation=json.loads(json.dumps(original)),
            # The drawn mistakes edit the JSON only (no file fields), so nothing is written here.
            out_dir=self.reference_dir,
            dataset_root=self.dataset_root,
            others=self._docs,
            correct=self.reference_dir,
            rng=random.Random(0),
        )
        applied = draw_mistakes(state, random.Random(f"{seed}:{self.dataset}:{index}"), self.config)
        if not applied:
            return original
        try:
            Annotation.model_validate(state.annotation)
        except ValidationError:
            return original
        return state.annotation

    def reply(self, step: Step, request: Mapping[str, Any]) -> Step:
        """``step`` as sampled for ``request``: its ``write_annotation`` calls redrawn at the request's seed.

        Args:
            step: The replayed step.
            request: The request it answers (its ``temperature`` and ``seed``).

        Returns:
            The step itself at temperature 0 (or when it writes no annotation), else a sampled copy.
        """
        temperature, seed = request_sampling(request)
        if temperature <= 0 or not isinstance(step, Reply) or not step.tool_calls:
            return step
        calls = []
        for call in step.tool_calls:
            function = call.get("function") or {}
            if function.get("name") != "write_annotation":
                calls.append(call)
                continue
            args = json.loads(function.get("arguments") or "{}")
            args["annotation"] = self.annotation(int(args["index"]), args["annotation"], seed)
            calls.append({**call, "function": {**function, "arguments": json.dumps(args, sort_keys=True)}})
        return Reply(content=step.content, tool_calls=tuple(calls), usage=step.usage)
