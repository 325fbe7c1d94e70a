"""What an independent dataset is: its sample type (a realfiles sample plus boxes and a mask key), the
builder registry and the documented dataset names.

Each builder writes real pixels (:mod:`testbed.independent.sources`) into ``<dataset>/data/`` in the layout
of one imaging community and returns one :class:`IndependentSample` per manifest line. Geometry is read back
through ``medio`` by :mod:`testbed.independent.suite`, never written by hand, except detection boxes, which
the builder measures on the very pixels it writes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from testbed.realfiles.spec import RealContext, RealSample
from testbed.synth.spec import DatasetSpec, RegisteredDataset, register

__all__ = ["INDEPENDENT_REGISTRY", "INDEPENDENT_TITLES", "IndependentSample", "independent_dataset"]


@dataclass
class IndependentSample(RealSample):
    """A realfiles sample with what the independent suite adds.

    Args:
        boxes: COCO ``[x, y, w, h]`` boxes in output pixels (detection).
        box_labels: Index into ``DatasetSpec.classes`` of each box.
        mask_read: ``medio.read`` keyword arguments of the label map (an ``.npz`` member).
    """

    boxes: list[list[int]] = field(default_factory=list)
    box_labels: list[int] = field(default_factory=list)
    mask_read: dict[str, Any] = field(default_factory=dict)


IndependentBuilder = Callable[[RealContext], list[IndependentSample]]

INDEPENDENT_REGISTRY: dict[str, RegisteredDataset[IndependentBuilder]] = {}

#: The dataset name the documentation gives (README title, ``dataset.json`` name): the ground truth's
#: ``dataset_name``, as an annotator reading the folder would write it.
INDEPENDENT_TITLES: dict[str, str] = {}


def independent_dataset(spec: DatasetSpec, title: str) -> Callable[[IndependentBuilder], IndependentBuilder]:
    """Register ``spec`` (documented as ``title``) with the decorated builder.

    Raises:
        ValueError: When a dataset of that name is already registered.
    """
    INDEPENDENT_TITLES[spec.name] = title
    return register(INDEPENDENT_REGISTRY, spec, "independent dataset")
