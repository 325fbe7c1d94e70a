"""The typed ground-truth models behind `benchmark.groundtruth.load_ground_truth` (pydantic v2).

Kept apart from `benchmark.groundtruth` so that reading a GT file as raw JSON (the scorer's whole need) does
not import pydantic and build these models (~70 ms per process; docs/performance.md, Scorer). Import the
names from `benchmark.groundtruth`, which loads this module on first use.
"""

from __future__ import annotations

from typing import Any

from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    ValidatorFunctionWrapHandler,
    model_serializer,
    model_validator,
)

from benchmark.fields import GT_SAMPLE_KEYS


class _Open(BaseModel):
    """Base: unknown keys are kept, fields accept their Python name or their JSON key, and a dump gives back
    the keys that were given, in the order they were given (so a file round-trips, and a sample without
    ``geometry`` is not dumped with ``"geometry": null``)."""

    model_config = ConfigDict(extra="allow", validate_by_name=True, validate_by_alias=True)

    _key_order: list[str] | None = PrivateAttr(default=None)

    @model_validator(mode="wrap")
    @classmethod
    def _remember_key_order(cls, data: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        model = handler(data)
        if isinstance(data, dict) and isinstance(model, _Open):
            model._key_order = [str(k) for k in data]
        return model

    def __eq__(self, other: object) -> bool:
        # Same values are equal whatever the key order of the file they came from (pydantic's own __eq__ would
        # also compare the private key order).
        if not isinstance(other, _Open) or type(self) is not type(other):
            return NotImplemented
        return self.__dict__ == other.__dict__ and self.__pydantic_extra__ == other.__pydantic_extra__

    __hash__ = None  # type: ignore[assignment]  # mutable models, as pydantic's default

    @model_serializer(mode="wrap")
    def _dump_given_keys(self, handler: SerializerFunctionWrapHandler, info: SerializationInfo) -> Any:
        data = handler(self)
        if not isinstance(data, dict):
            return data
        fields = type(self).model_fields
        out_key: dict[str, str] = {}  # every key a field may be read from -> the key it is dumped under
        for name, spec in fields.items():
            dumped = (spec.serialization_alias or spec.alias or name) if info.by_alias else name
            readable = [name, *([spec.alias] if spec.alias else [])]
            if isinstance(spec.validation_alias, AliasChoices):
                readable += [c for c in spec.validation_alias.choices if isinstance(c, str)]
            for key in readable:
                out_key[key] = dumped
            if name not in self.model_fields_set:
                data.pop(dumped, None)
        if not self._key_order:
            return data
        ordered = {}
        for key in self._key_order:
            key = out_key.get(key, key)
            if key in data and key not in ordered:
                ordered[key] = data[key]
        ordered.update((k, v) for k, v in data.items() if k not in ordered)
        return ordered


class GTGeometry(_Open):
    """Our geometry extension of a GT sample (docs/contracts.md); the reference scorer ignores it.

    Attributes:
        image_size: Output image ``[width, height]``.
        axis: Slice axis of a volume, or None.
        slice_index: Target slice of a volume, or None.
        frame_index: Target frame of a video, or None.
        mask_file: GT label map relative to the dataset root (``VLM/gt_geometry/<i>.png``), or None.
        boxes: GT boxes, COCO ``[x, y, w, h]`` in output-image pixels.
        box_category_ids: Category id of each box.
    """

    image_size: list[int] | None = None
    axis: int | None = None
    slice_index: int | None = None
    frame_index: int | None = None
    mask_file: str | None = None
    boxes: list[list[float]] = Field(default_factory=list)
    box_category_ids: list[int] = Field(default_factory=list)


class GTSample(_Open):
    """The ground truth of one manifest index (SPEC §1, "Per-sample GT").

    Attributes:
        source_stem: Normalised id of the true source (``"case_00286"``).
        expected_sources: Alternative accepted source ids.
        class_: The class string (JSON key ``class``), or None (echonet, DRIVE).
        map_type: ``"pixel_mask"``, ``"bbox"``, ``"image_level_label"`` or ``"label"``.
        expected_record: Expected ``record`` fields.
        expected_context_sample: Expected ``context.sample`` fields.
        expected_extra: Expected ``context.sample.extra`` fields (``source_file`` is ``"data/..."``).
        expected_extra_keys: Keys that must be present and non-placeholder in ``extra``.
        expected_tasks: Expected task blocks, e.g. ``{"segmentation": {"schema_variant": "3d_mask"}}``.
        geometry: Our extension (target slice/frame, GT mask, GT boxes), absent in the public GT files.
    """

    source_stem: str | None = None
    expected_sources: list[str] | None = None
    # validation_alias (not alias) keeps the Python name `class_` in the constructor's signature for type
    # checkers, while files are still read from and dumped (by_alias=True) under "class".
    class_: str | None = Field(
        default=None, validation_alias=AliasChoices("class", "class_"), serialization_alias="class"
    )
    map_type: str | None = None
    expected_record: dict[str, Any] = Field(default_factory=dict)
    expected_context_sample: dict[str, Any] = Field(default_factory=dict)
    expected_extra: dict[str, Any] = Field(default_factory=dict)
    expected_extra_keys: list[str] = Field(default_factory=list)
    expected_tasks: dict[str, Any] = Field(default_factory=dict)
    geometry: GTGeometry | None = None


class GroundTruth(_Open):
    """One dataset's ground truth (SPEC §1, schema "1.1").

    Attributes:
        schema_version: ``"1.1"`` in the public files.
        dataset_name: The dataset's name as the GT spells it.
        description: Free text (Chinese in the public files).
        expected_count: Expected number of samples (used for SV and MCF).
        modality_primary: Dataset-level modality (``"CT"``, ``"Ophthalmic"``, ...).
        task_type: ``"classification"``, ``"segmentation"`` or ``"detection"``.
        dimension: ``"2d"`` or ``"3d"``.
        format: Key lists of the schema checks (SPEC §3.3).
        content: Content-fidelity settings and global expected blocks (SPEC §1).
        data_meta_expected: What ``data_meta.json`` must hold (SPEC §3.6).
        classes: Class names; the length is the expected number of classes.
        samples: Per-index ground truth, keyed by the index as a string (``"0"``). Read from ``samples`` or
            ``source_to_truth``; dumped as ``samples``.
    """

    schema_version: str | None = None
    dataset_name: str | None = None
    description: str | None = None
    expected_count: int | None = None
    modality_primary: str | None = None
    task_type: str | None = None
    dimension: str | None = None
    format: dict[str, Any] = Field(default_factory=dict)
    content: dict[str, Any] = Field(default_factory=dict)
    data_meta_expected: dict[str, Any] = Field(default_factory=dict)
    classes: list[Any] = Field(default_factory=list)
    samples: dict[str, GTSample] = Field(
        validation_alias=AliasChoices(*GT_SAMPLE_KEYS), serialization_alias="samples"
    )

    @property
    def indices(self) -> list[int]:
        """The sample indices (keys written as plain integers), ascending."""
        return sorted(int(k) for k in self.samples if k.isascii() and k.isdigit())

    def sample(self, index: int) -> GTSample:
        """The ground truth of one index.

        Args:
            index: Sample index.

        Returns:
            The sample.

        Raises:
            KeyError: The ground truth has no such index.
        """
        try:
            return self.samples[str(index)]
        except KeyError:
            raise KeyError(f"ground truth of {self.dataset_name!r} has no sample {index}") from None
