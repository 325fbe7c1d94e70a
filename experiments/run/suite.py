"""Where the benchmark of a run comes from: the bundled, the realfiles or the foreign suite (generated once
into a cache folder, under a file lock so parallel jobs of a sweep do not race) or a folder on disk; plus the
dataset filter and ``k/n`` sharding."""

from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import os
import shutil
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from benchmark.discover import Dataset, discover
from core.user_cache import cache_root

__all__ = [
    "NoDatasetsError",
    "benchmark_root",
    "ensure_bundled_suite",
    "ensure_replica_suite",
    "ensure_testbed_suite",
    "format_families",
    "parse_shard",
    "select_datasets",
]

log = logging.getLogger(__name__)

COMPLETE_MARKER = ".complete"


class NoDatasetsError(RuntimeError):
    """A benchmark root holds no dataset (no folder with ``VLM/random.txt``); says where we looked."""


def benchmark_root(benchmark: Mapping[str, Any]) -> Path:
    """The benchmark root: ``benchmark.root`` when set, else the bundled, the realfiles
    (``benchmark=realfiles``), the foreign (``benchmark=foreign``) or the replica (``benchmark=replica``)
    suite, generated on first use.

    Args:
        benchmark: The ``benchmark`` node (`experiments.run.plan.RunSettings.benchmark`).
    """
    if benchmark.get("root"):
        return Path(str(benchmark["root"])).expanduser()
    if benchmark.get("suite") in ("realfiles", "foreign"):
        return ensure_testbed_suite(str(benchmark["suite"]), benchmark.get("cache_dir"))
    if benchmark.get("suite") == "replica":
        return ensure_replica_suite(benchmark.get("source"), benchmark.get("cache_dir"))
    size, seed = str(benchmark.get("size", "small")), int(benchmark.get("seed", 0))
    samples = benchmark.get("samples")
    return ensure_bundled_suite(
        size, seed, benchmark.get("cache_dir"), None if samples is None else int(samples)
    )


def ensure_bundled_suite(
    size: str = "small", seed: int = 0, cache_dir: str | Path | None = None, samples: int | None = None
) -> Path:
    """Return the bundled suite's root, generating it first if it is not in the cache yet.

    Args:
        size: ``small`` or ``full``.
        seed: The suite seed.
        cache_dir: Cache folder (default: `cache_root`).
        samples: Samples per dataset instead of the size's (a pilot on a few samples, e.g. with a slow
            local model); None: the size's.

    Returns:
        ``<cache>/suite-<size>-<seed>`` (``suite-<samples>samples-<seed>`` with ``samples``).

    Raises:
        ValueError: ``samples`` outside 1..500.
    """
    if samples is not None and not 1 <= int(samples) <= 500:
        raise ValueError(f"benchmark.samples={samples}: expected 1 to 500 samples per dataset")

    def build(out: Path) -> None:
        # Imported only to generate: the generator pulls in every format writer (~1 s), which a run over an
        # already cached suite (every run after the first, every reselection) does not need.
        from testbed.synth.suite import generate_suite

        generate_suite(out, size=size, seed=seed, samples=samples)  # type: ignore[arg-type]

    key = f"suite-{size}-{seed}" if samples is None else f"suite-{int(samples)}samples-{seed}"
    shown = f"{size}" if samples is None else f"{samples} samples per dataset"
    return _cached_suite(key, build, f"the bundled suite ({shown}, seed {seed})", cache_dir)


def ensure_testbed_suite(name: str, cache_dir: str | Path | None = None) -> Path:
    """Return the realfiles or the foreign suite's root (``benchmark=realfiles|foreign``), building it first
    if it is not cached.

    The cache key covers what the suite's bytes depend on: the versions of the packages whose test files,
    pixels and writers make it (``testbed.<name>.sources.source_versions``: pydicom and nibabel for
    realfiles) and the source of its builder and of ``medio`` (the ground truth is rendered with it).

    Args:
        name: ``realfiles`` or ``foreign``.
        cache_dir: Cache folder (default: `cache_root`).

    Returns:
        ``<cache>/<name>-<key>``.
    """
    import importlib

    import medio

    package = importlib.import_module(f"testbed.{name}")
    versions = importlib.import_module(f"testbed.{name}.sources").source_versions()
    key = _source_key([json.dumps(versions, sort_keys=True)], package, medio)
    return _cached_suite(f"{name}-{key}", getattr(package, f"build_{name}"), f"the {name} suite", cache_dir)


def ensure_replica_suite(source: str | Path | None = None, cache_dir: str | Path | None = None) -> Path:
    """Return the replica suite's root (``benchmark=replica``), building it first if it is not cached.

    The key covers the material (its ``MANIFEST.sha256``), the builder's source (``testbed.replica`` and the
    ``testbed.synth`` writers it uses) and the versions of the packages that write the containers.

    Args:
        source: The replica material (default: ``$MEDSTRAT_SHARED/mdsbench/replica``, else
            ``../shared/mdsbench/replica`` beside the checkout).
        cache_dir: Cache folder (default: `cache_root`).

    Returns:
        ``<cache>/replica-<key>``.

    Raises:
        ReplicaSourceError: No material where it looked (one line naming the places; exit 2 from the CLI).
    """
    import dataclasses
    import sys

    import testbed.replica
    import testbed.synth
    from testbed.replica import ReplicaBuild, build_replica, find_replica_source, source_digest
    from testbed.replica.build import package_versions

    material = find_replica_source(source)
    versions = [source_digest(material), json.dumps(package_versions(), sort_keys=True)]
    key = _source_key(versions, testbed.replica, testbed.synth)

    built: list[ReplicaBuild] = []

    def build(out: Path) -> None:
        built.append(build_replica(out, material))

    root = _cached_suite(f"replica-{key}", build, "the replica suite", cache_dir)
    if built:  # built now, not found in the cache: name the cached folder, not the temporary one
        print(dataclasses.replace(built[0], root=root).summary(), file=sys.stderr)
    return root


def _source_key(texts: Sequence[str], *packages: ModuleType) -> str:
    """A cache key over ``texts`` and the source files of ``packages`` (12 hex digits)."""
    digest = hashlib.sha256("".join(texts).encode())
    for package in packages:
        for path in sorted(Path(str(package.__file__)).parent.glob("*.py")):
            digest.update(path.name.encode() + path.read_bytes())
    return digest.hexdigest()[:12]


def _cached_suite(key: str, build: Callable[[Path], Any], what: str, cache_dir: str | Path | None) -> Path:
    """Build a suite once into ``<cache>/<key>`` under a file lock (parallel jobs of a sweep wait)."""
    base = Path(cache_dir).expanduser() if cache_dir else cache_root()
    target = base / key
    if (target / COMPLETE_MARKER).is_file():
        return target
    base.mkdir(parents=True, exist_ok=True)
    with open(base / f".{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # the second job of a sweep waits here, then finds the marker
        if not (target / COMPLETE_MARKER).is_file():
            # INFO: a one-time, expected step, not something to act on (the run's log file keeps it).
            log.info("generating %s into %s", what, target)
            tmp = base / f".{key}.tmp{os.getpid()}"
            shutil.rmtree(tmp, ignore_errors=True)
            build(tmp)
            (tmp / COMPLETE_MARKER).write_text("ok\n", encoding="utf-8")
            shutil.rmtree(target, ignore_errors=True)
            os.replace(tmp, target)
    return target


def parse_shard(shard: str | None) -> tuple[int, int] | None:
    """``"k/n"`` (1 ≤ k ≤ n) → ``(k, n)``; None for no sharding.

    Raises:
        ValueError: A malformed shard.
    """
    if shard in (None, "", "null"):
        return None
    try:
        k, n = (int(x) for x in str(shard).split("/"))
    except ValueError:
        raise ValueError(f"benchmark.shard must look like k/n (e.g. 1/4), got {shard!r}") from None
    if not 1 <= k <= n:
        raise ValueError(f"benchmark.shard {shard!r}: need 1 <= k <= n")
    return k, n


def _names(value: Any) -> list[str] | None:
    if value in (None, "", "null"):
        return None
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    return [str(v) for v in value]


def select_datasets(
    root: Path,
    names: Iterable[str] | str | None = None,
    shard: str | None = None,
    *,
    samples: int | None = None,
) -> list[Dataset]:
    """The datasets of a run: discovered under ``root``, filtered by name, then this job's shard, each cut to
    its first ``samples`` manifest entries.

    Args:
        root: The benchmark root.
        names: Dataset names to keep (a list or a comma-separated string).
        shard: ``"k/n"``: keep every n-th dataset starting at the k-th (in sorted order).
        samples: ``benchmark.samples``: keep the first N manifest entries of each dataset (None: all). The
            bundled suite is generated with N samples instead (`ensure_bundled_suite`), so there it cuts
            nothing.

    Returns:
        The datasets, sorted by name.

    Raises:
        NoDatasetsError: Nothing found (the message names the folder searched).
        BenchmarkError: ``root`` is missing or a requested name does not exist (the message lists the valid
        ones).
    """
    wanted: Sequence[str] | None = _names(names)
    found = discover(root, names=wanted)
    if not found:
        raise NoDatasetsError(
            f"no datasets under {Path(root).absolute()} (looked for folders holding "
            "VLM/random.txt at any depth)"
        )
    parsed = parse_shard(shard)
    if parsed is not None:
        k, n = parsed
        found = [d for i, d in enumerate(found) if i % n == k - 1]
    if samples is not None:
        found = [d.first(samples) for d in found]
    return found


def format_families(roots: Iterable[Path]) -> set[str]:
    """The medio format families the files under these dataset folders need, by their names
    (`medio.libraries.families_for`).

    The run preloads only these before its worker threads start: importing every format library (pandas,
    SimpleITK, scipy.io, PyAV ...) cost a run over two small datasets a quarter of its CPU time. A file the
    names do not tell is read safely anyway (its libraries are imported under medio's import lock).

    Args:
        roots: The datasets' folders (listed; no file is opened).

    Returns:
        Family names for `medio.preload`.
    """
    from medio.libraries import families_for

    return families_for(name for root in roots for _, _, files in os.walk(root) for name in files)
