"""Write the bundled suite: raw data, manifests, ground truth and (optionally) the oracle prediction."""

from __future__ import annotations

import logging
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

# Importing the builder modules registers their datasets; the order here is the catalogue order.
from testbed.synth import build_dicom  # noqa: F401  # isort: skip
from testbed.synth import build_volumes  # noqa: F401  # isort: skip
from testbed.synth import build_bitmaps  # noqa: F401  # isort: skip
from testbed.synth import build_containers  # noqa: F401  # isort: skip
from testbed.synth import build_video  # noqa: F401  # isort: skip
from testbed.synth.groundtruth import write_ground_truth
from testbed.synth.spec import (
    REGISTRY,
    BuildContext,
    Builder,
    DatasetSpec,
    SynthSample,
    dataset_rng,
    select_names,
)
from testbed.synth.write_files import write_text

log = logging.getLogger(__name__)

#: The authors' root the manifests pretend the data came from; loaders re-root it at the "/data/" segment.
FAKE_AUTHORS_ROOT = "/data3/synth/Agent_test/bundled"
SIZES: dict[str, int] = {"small": 10, "full": 20}
#: The largest ``samples`` override: enough to show how costs grow, small enough to build in seconds.
MAX_SAMPLES = 500
Size = Literal["small", "full"]


@dataclass(frozen=True)
class BuiltDataset:
    """What :func:`generate_suite` wrote for one dataset."""

    spec: DatasetSpec
    root: Path
    samples: list[SynthSample]
    seconds: float


def manifest_text(spec: DatasetSpec, samples: list[SynthSample]) -> str:
    """``random.txt`` content: ``<index><sep><authors' absolute path>`` per line (TAB for
    ``tab_manifest``)."""
    sep = "\t" if spec.tab_manifest else " "
    return "".join(
        f"{i}{sep}{FAKE_AUTHORS_ROOT}/{spec.name}/{s.manifest_path}\n" for i, s in enumerate(samples)
    )


def dataset_names(only: list[str] | None = None) -> list[str]:
    """Registered dataset names in catalogue order, optionally restricted to ``only``.

    Raises:
        KeyError: When ``only`` names an unknown dataset (the message lists the valid names).
    """
    return select_names(list(REGISTRY), only, "synthetic dataset")


def write_dataset(out: Path, spec: DatasetSpec, build: Builder, n: int, seed: int) -> BuiltDataset:
    """Run ``build`` into a fresh ``out/<spec.name>``, then write its manifest and ground truth.

    Args:
        out: Benchmark root.
        spec: The dataset's catalogue entry.
        build: Writes the raw files and returns one sample per manifest line.
        n: Manifest samples.
        seed: Suite seed (the builder's generator derives from it and the name).

    Returns:
        The built dataset.

    Raises:
        RuntimeError: The builder returned another number of samples or did not write a manifest path.
    """
    root = out / spec.name
    if root.exists():
        shutil.rmtree(root)  # a stale dataset would leave files that break byte-for-byte reproducibility
    start = time.perf_counter()
    samples = build(BuildContext(root=root, n=n, rng=dataset_rng(seed, spec.name)))
    if len(samples) != n:
        raise RuntimeError(f"builder of {spec.name} returned {len(samples)} samples, expected {n}")
    for s in samples:
        if not (root / s.manifest_path).is_file():
            raise RuntimeError(f"{spec.name}: manifest path {s.manifest_path} was not written")
    write_text(root / "VLM" / "random.txt", manifest_text(spec, samples))
    write_ground_truth(root, spec, samples)
    return BuiltDataset(spec, root, samples, time.perf_counter() - start)


def generate_suite(
    out: str | Path,
    *,
    size: Size = "small",
    seed: int = 0,
    oracle: str | None = None,
    only: list[str] | None = None,
    samples: int | None = None,
) -> list[BuiltDataset]:
    """Write the bundled suite under ``out``.

    Args:
        out: Benchmark root (created if needed); each dataset goes to ``out/<name>``.
        size: ``small`` (10 samples per dataset) or ``full`` (20).
        seed: Suite seed; the same seed writes byte-identical files.
        oracle: When set, also write the perfect prediction as run ``VLM/<oracle>/``.
        only: Restrict to these dataset names.
        samples: Manifest samples per dataset, overriding ``size`` (1 to `MAX_SAMPLES`): datasets of any
            size, to measure what grows with the sample count (``perf/agent_tokens.py``).

    Returns:
        The built datasets in catalogue order.

    Raises:
        KeyError: For an unknown size or dataset name.
        ValueError: ``samples`` is outside 1 to `MAX_SAMPLES`.
    """
    if size not in SIZES:
        raise KeyError(f"unknown size {size!r}; valid sizes: {', '.join(SIZES)}")
    if samples is not None and not 1 <= samples <= MAX_SAMPLES:
        raise ValueError(f"samples must be between 1 and {MAX_SAMPLES}, got {samples}")
    n = SIZES[size] if samples is None else samples
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    built = []
    for name in dataset_names(only):
        entry = REGISTRY[name]
        ds = write_dataset(out, entry.spec, entry.build, n, seed)
        if oracle:
            from testbed.synth.oracle import write_oracle

            write_oracle(ds.root, ds.spec, ds.samples, oracle)
        log.info("wrote %s (%d samples) in %.2fs", name, len(ds.samples), ds.seconds)
        built.append(ds)
    return built
