"""Write the realfiles suite: real files in benchmark layouts, manifests, ground truth rendered by medio.

Each dataset's ground truth lists only the samples a plain install can decode. A sample whose builder marks it
as possibly undecodable (a codec without a decoder, a truncated file) stays in the manifest; when ``medio``
cannot read it at build time it is left out of ``samples`` and ``expected_count`` and recorded under the
top-level key ``expected_failures`` (``{index: reason}``; the reference scorer ignores unknown keys). The
expected behaviour for it is "no output": a correct agent writes no image and no annotation, and counts only
the samples it wrote in ``data_meta.json``. If a codec is installed and the file decodes, it is an ordinary
sample. Any other sample that ``medio`` cannot read stops the build: the suite never hides a reader bug.
"""

from __future__ import annotations

import json
import logging
import shutil
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

# Importing the dataset modules registers their datasets; the order here is the catalogue order.
from testbed.realfiles import dicom_sets  # noqa: F401  # isort: skip
from testbed.realfiles import nibabel_sets  # noqa: F401  # isort: skip
from testbed.realfiles.sources import source_versions
from testbed.realfiles.spec import REGISTRY, RealContext, RealSample
from testbed.synth.groundtruth import ground_truth, sample_truth
from testbed.synth.phantoms import largest_slice
from testbed.synth.spec import DatasetSpec, SynthSample, select_names
from testbed.synth.write_files import write_pillow, write_text

__all__ = [
    "REALFILES",
    "REALFILES_AUTHORS_ROOT",
    "REALFILES_MARKER",
    "BuiltRealDataset",
    "RealSuite",
    "build_realfiles",
    "realfiles_catalogue",
    "realfiles_names",
]

#: The markers around the realfiles catalogue table in docs/benchmark.md.
REALFILES_MARKER = "realfiles-catalogue"

log = logging.getLogger(__name__)

#: The authors' root the manifests pretend the data came from (re-rooted at the ``/data/`` segment).
REALFILES_AUTHORS_ROOT = "/data4/realfiles/Med-Agent/packaged"


@dataclass(frozen=True)
class BuiltRealDataset:
    """What :func:`build_realfiles` wrote for one dataset.

    Attributes:
        spec: The catalogue entry.
        root: The dataset folder.
        samples: Every manifest sample, in manifest order.
        truth: The ground-truth sample of each decodable index (what the GT's ``samples`` holds).
        failures: Index -> one-line reason, for the samples that are expected to fail.
        seconds: Build time.
    """

    spec: DatasetSpec
    root: Path
    samples: list[RealSample]
    truth: dict[int, SynthSample]
    failures: dict[int, str]
    seconds: float


def geometry_sample(root: Path, spec: DatasetSpec, sample: RealSample) -> SynthSample:
    """Read one decodable sample through ``medio`` and describe it as the ground truth needs.

    The slice rule is the suite's (docs/benchmark.md): 2D images as they are (frame 0 of a multi-frame
    object when the sample says so), the middle slice of a volume for classification, the largest-foreground
    slice of the label volume for segmentation; volume 0 of a 4D image.

    Args:
        root: Dataset folder.
        spec: Catalogue entry.
        sample: The sample.

    Returns:
        The sample with image size, slice and (segmentation) the GT label map in output pixels.

    Raises:
        medio.MedioError: The image or its mask cannot be read.
        ValueError: The mask's grid differs from the image's.
    """
    import medio

    image = medio.read(root / (sample.read_path or sample.manifest_path), **sample.read)
    slice_index: int | None = None
    mask: np.ndarray | None = None
    spacing = tuple(float(s) for s in (image.meta.spacing or (1.0, 1.0)))
    if spec.task == "segmentation":
        if sample.mask_path is None:
            raise ValueError(f"{spec.name}: segmentation sample {sample.manifest_path} has no mask")
        labels = medio.read(root / sample.mask_path)
        if labels.array.shape != image.array.shape[: labels.array.ndim]:
            raise ValueError(
                f"{spec.name}: mask {sample.mask_path} shape {labels.array.shape} != image "
                f"{image.array.shape}"
            )
        if spec.dimension == "3D":
            slice_index = largest_slice(labels.array)
        mask = medio.render(labels, slice_index=slice_index, label=True).pixels
    elif spec.dimension == "3D":
        slice_index = image.array.shape[0] // 2
    shown = medio.render(image, slice_index=slice_index)
    h, w = shown.pixels.shape[:2]
    volume_shape = tuple(int(s) for s in image.array.shape[:3]) if spec.dimension == "3D" else None
    return SynthSample(
        manifest_path=sample.manifest_path,
        subject_id=sample.subject_id,
        image_size=(int(w), int(h)),
        read=dict(sample.read),
        read_path=sample.read_path,
        label=sample.label,
        modality=sample.modality,
        extra=dict(sample.extra),
        oracle_extra=dict(sample.oracle_extra),
        source_stem=sample.source_stem,
        volume_shape=volume_shape,  # type: ignore[arg-type]
        spacing=spacing,
        slice_index=slice_index,
        frame_index=sample.read.get("frame"),
        mask=mask,
    )


def write_truth(
    root: Path, spec: DatasetSpec, truth: dict[int, SynthSample], failures: dict[int, str] | None = None
) -> dict[str, Any]:
    """Write the GT label maps and return the ground-truth document of the decodable samples.

    Args:
        root: Dataset folder.
        spec: Catalogue entry.
        truth: Decodable samples by manifest index.
        failures: Expected failures by manifest index (``expected_failures``; None leaves the key out).
    """
    order = sorted(truth)
    doc: dict[str, Any] = ground_truth(spec, [truth[i] for i in order])
    doc["samples"] = {str(i): sample_truth(i, spec, truth[i]) for i in order}
    if failures is not None:
        doc["expected_failures"] = {str(i): reason for i, reason in sorted(failures.items())}
    for i in order:
        mask = truth[i].mask
        if mask is not None:
            write_pillow(root / "VLM" / "gt_geometry" / f"{i}.png", np.asarray(mask, dtype=np.uint8))
    return doc


@dataclass(eq=False)
class RealSuite:
    """A suite of real files: what it supplies, and its commands (names, catalogue, build).

    Args:
        kind: What a dataset of it is called in an error (``"realfiles dataset"``).
        registry: Dataset name -> entry with ``spec`` and ``build(RealContext) -> samples``.
        authors_root: The root the manifests pretend the data came from.
        source_versions: The versions of the packages the pixels come from (for ``provenance.json``).
        geometry: One sample's ground truth (default: `geometry_sample`).
    """

    kind: str
    registry: Mapping[str, Any]
    authors_root: str
    source_versions: Callable[[], Mapping[str, str]]
    geometry: Callable[[Path, DatasetSpec, Any], SynthSample] = geometry_sample
    #: Whether a sample may be marked as possibly undecodable (the build summary counts such samples).
    expects_failures: ClassVar[bool] = True

    def names(self, only: list[str] | None = None) -> list[str]:
        """Registered dataset names in catalogue order, optionally restricted to ``only``.

        Raises:
            KeyError: An unknown name (the message lists the valid ones).
        """
        return select_names(list(self.registry), only, self.kind)

    def catalogue(self) -> str:
        """The catalogue as the Markdown table docs/benchmark.md embeds (the bundled columns)."""
        from testbed.synth.catalogue import catalogue_markdown

        return catalogue_markdown([self.registry[n].spec for n in self.names()])

    def truth_document(
        self, root: Path, spec: DatasetSpec, truth: dict[int, SynthSample], failures: dict[int, str]
    ) -> dict[str, Any]:
        """The ground-truth document (after writing the GT label maps)."""
        return write_truth(root, spec, truth, failures)

    def provenance(self, ctx: RealContext, samples: list[RealSample]) -> dict[str, str]:
        """``provenance.json``'s ``files``: each copied file and its source."""
        return dict(sorted(ctx.copied))

    def build_dataset(self, out: Path, name: str) -> BuiltRealDataset:
        """Write one dataset under ``out/<name>``.

        Raises:
            RuntimeError: A sample not marked as possibly undecodable cannot be read by ``medio``.
        """
        import medio

        entry = self.registry[name]
        root = out / name
        if root.exists():
            shutil.rmtree(root)  # stale files would break byte-for-byte reproducibility
        start = time.perf_counter()
        ctx = RealContext(root=root)
        samples: list[RealSample] = list(entry.build(ctx))
        truth: dict[int, SynthSample] = {}
        failures: dict[int, str] = {}
        for i, s in enumerate(samples):
            if not (root / s.manifest_path).is_file():
                raise RuntimeError(f"{name}: manifest path {s.manifest_path} was not written")
            try:
                truth[i] = self.geometry(root, entry.spec, s)
            except medio.MedioError as exc:
                if s.expected_failure is None:
                    what = f"{name}: medio cannot read sample {i} ({s.manifest_path})"
                    raise RuntimeError(f"{what}: {exc}") from exc
                failures[i] = f"{s.expected_failure} ({type(exc).__name__})"
        if not truth:
            raise RuntimeError(f"{name}: no decodable sample")
        write_text(
            root / "VLM" / "random.txt",
            "".join(f"{i} {self.authors_root}/{name}/{s.manifest_path}\n" for i, s in enumerate(samples)),
        )
        doc = self.truth_document(root, entry.spec, truth, failures)
        write_text(root / "VLM" / f"ground_truth_{name}.json", json.dumps(doc, indent=2, ensure_ascii=False))
        write_text(
            root / "VLM" / "provenance.json",
            json.dumps(
                {"packages": self.source_versions(), "files": self.provenance(ctx, samples)},
                indent=2,
                sort_keys=True,
            ),
        )
        return BuiltRealDataset(entry.spec, root, samples, truth, failures, time.perf_counter() - start)

    def write_oracle(self, ds: BuiltRealDataset, oracle: str) -> None:
        """Write the perfect prediction of ``ds`` as run ``VLM/<oracle>/``."""
        from testbed.synth.oracle import write_oracle

        write_oracle(ds.root, ds.spec, ds.truth, oracle)

    def build(
        self, out: str | Path, *, only: list[str] | None = None, oracle: str | None = None
    ) -> list[BuiltRealDataset]:
        """Write the suite under ``out`` (one folder per dataset).

        Args:
            out: Benchmark root (created if needed).
            only: Restrict to these dataset names.
            oracle: When set, also write the perfect prediction as run ``VLM/<oracle>/`` (nothing for the
                expected failures, and ``data_volume.total`` = the decodable samples).

        Returns:
            The built datasets in catalogue order.

        Raises:
            KeyError: An unknown dataset name.
            RuntimeError: A file that should decode does not (a reader bug), or a package lacks a file.
        """
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        built = []
        for name in self.names(only):
            ds = self.build_dataset(out, name)
            if oracle:
                self.write_oracle(ds, oracle)
            log.info(
                "wrote %s (%d samples, %d expected failures) in %.2fs",
                name,
                len(ds.samples),
                len(ds.failures),
                ds.seconds,
            )
            built.append(ds)
        return built


REALFILES = RealSuite("realfiles dataset", REGISTRY, REALFILES_AUTHORS_ROOT, source_versions)
# The suite's commands by the names the rest of the project calls them.
realfiles_names = REALFILES.names
realfiles_catalogue = REALFILES.catalogue
build_realfiles = REALFILES.build
