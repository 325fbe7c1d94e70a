"""Find the datasets under a benchmark root: any folder, at any depth, that holds `VLM/random.txt`.

A real MDS-Bench checkout nests them as ``datasets/<group>/<dataset_id>/``; the bundled suite puts them one
level down. Discovery never walks into a dataset's own ``data/`` (raw files, possibly terabytes) or ``VLM/``
folders. A dataset whose manifest is broken is skipped with a logged warning and recorded as a
`DiscoveryProblem`, so one bad folder never hides the others.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from benchmark.errors import BenchmarkError
from benchmark.layout import AGENT_DIR, OutputLayout
from benchmark.manifest import DATA_DIR, MANIFEST_NAME, VLM_DIR, ManifestEntry, parse_manifest

__all__ = ["Dataset", "DiscoveryProblem", "discover", "discover_with_problems"]

logger = logging.getLogger(__name__)


@dataclass
class Dataset:
    """One benchmark dataset folder (``<root>/data/``, ``<root>/VLM/random.txt``, ``<root>/VLM/<run>/``).

    Attributes:
        root: The dataset folder (absolute).
        name: The folder's name, used as the dataset id.
        manifest_path: ``<root>/VLM/random.txt``.
        vlm_dir: ``<root>/VLM``.
        sample_limit: Only the first this many manifest entries are the dataset's samples (a pilot on real
            data, ``benchmark.samples``); None: every entry.
    """

    root: Path
    name: str
    manifest_path: Path
    vlm_dir: Path
    sample_limit: int | None = None
    _entries: list[ManifestEntry] | None = field(default=None, init=False, repr=False, compare=False)

    @classmethod
    def from_root(cls, root: str | Path) -> Dataset:
        """Describe the dataset at ``root`` (its manifest is parsed lazily, on first `entries()`).

        Args:
            root: The dataset folder.

        Returns:
            The dataset.
        """
        path = Path(root).absolute()
        vlm = path / VLM_DIR
        return cls(root=path, name=path.name, manifest_path=vlm / MANIFEST_NAME, vlm_dir=vlm)

    @property
    def data_dir(self) -> Path:
        """The raw-data folder, ``<root>/data``."""
        return self.root / DATA_DIR

    def data_files(self) -> list[str]:
        """Every file below ``data/`` as a dataset-relative POSIX path (``data/...``), sorted: the one
        listing the agents' source search and the validator's evidence both start from.

        Hidden files (``.DS_Store``, AppleDouble ``._x``) are left out; symlinked folders are not followed.
        """
        found: list[str] = []
        for folder, _dirs, names in os.walk(self.data_dir):
            rel = Path(folder).relative_to(self.root).as_posix()
            found.extend(f"{rel}/{n}" for n in names if not n.startswith("."))
        return sorted(found)

    def entries(self) -> list[ManifestEntry]:
        """The manifest entries in index order, parsed once and cached.

        Returns:
            The entries (the cached list; do not mutate it).

        Raises:
            ManifestError: The manifest is missing or malformed.
        """
        if self._entries is None:
            entries = parse_manifest(self.manifest_path, self.root)
            self._entries = entries if self.sample_limit is None else entries[: self.sample_limit]
        return self._entries

    def first(self, samples: int) -> Dataset:
        """This dataset cut to its first ``samples`` manifest entries (in index order): deterministic, so a
        resumed run, the validator and the scorer see the same samples.

        Args:
            samples: How many entries to keep (1 or more).

        Returns:
            A new `Dataset` (this one is unchanged).

        Raises:
            ValueError: ``samples`` below 1.
        """
        if samples < 1:
            raise ValueError(f"{self.name}: a sample limit of {samples}; expected 1 or more")
        return Dataset(self.root, self.name, self.manifest_path, self.vlm_dir, sample_limit=samples)

    @property
    def indices(self) -> list[int]:
        """The sample indices of the manifest, ascending."""
        return [e.index for e in self.entries()]

    def entry(self, index: int) -> ManifestEntry:
        """The manifest entry for one index.

        Args:
            index: A sample index.

        Returns:
            The entry.

        Raises:
            KeyError: The manifest has no such index.
        """
        for e in self.entries():
            if e.index == index:
                return e
        raise KeyError(f"{self.name}: manifest {self.manifest_path} has no index {index}")

    def prediction_dir(self, run_name: str) -> Path:
        """Where a run's outputs live: ``<root>/VLM/<run_name>/agent1_data_organization``.

        Args:
            run_name: A single folder name (the model or strategy name).

        Returns:
            The path (not created).

        Raises:
            LayoutError: ``run_name`` is empty or is not a single plain folder name.
        """
        return OutputLayout.for_run(self.root, run_name).root

    def runs(self) -> list[str]:
        """The runs already written: ``VLM`` sub-folders that hold an ``agent1_data_organization`` folder.

        Returns:
            Their names, sorted (the reference scorer's default model list, SPEC §3.8).
        """
        if not self.vlm_dir.is_dir():
            return []
        return sorted(p.name for p in self.vlm_dir.iterdir() if (p / AGENT_DIR).is_dir())


@dataclass(frozen=True)
class DiscoveryProblem:
    """A dataset folder that discovery skipped, and why.

    Attributes:
        root: The dataset folder.
        error: The error that made it unusable (its ``str`` names the file and line).
    """

    root: Path
    error: BenchmarkError

    @property
    def name(self) -> str:
        """The dataset folder's name."""
        return self.root.name

    @property
    def reason(self) -> str:
        """The full located message, ``"<file>:<line>: <reason>"``."""
        return str(self.error)


def discover_with_problems(
    root: str | Path, *, names: Iterable[str] | None = None
) -> tuple[list[Dataset], list[DiscoveryProblem]]:
    """Find every dataset under ``root`` and report the ones that are broken.

    Each dataset's manifest is parsed (without checking that raw files exist, so a checkout without its raw
    data is still listed); a dataset whose manifest fails is skipped, logged as a warning and returned as a
    problem.

    Args:
        root: A benchmark root, a group folder, or a single dataset folder.
        names: Keep only these dataset names (folder names).

    Returns:
        ``(datasets, problems)``, both sorted by name then path.

    Raises:
        BenchmarkError: ``root`` does not exist or is not a folder, or a name in ``names`` matches no dataset
            (the message lists the available ones).
    """
    base = Path(root).expanduser().absolute()
    if not base.is_dir():
        state = "is not a folder" if base.exists() else "does not exist"
        raise BenchmarkError(base, f"benchmark root {state} (looked for folders holding VLM/{MANIFEST_NAME})")
    wanted = set(names) if names is not None else None
    datasets: list[Dataset] = []
    problems: list[DiscoveryProblem] = []
    folders, lookalikes = _walk(base)
    if lookalikes and wanted is None:
        shown = ", ".join(str(f) for f in lookalikes[:5]) + (
            f" and {len(lookalikes) - 5} more" if len(lookalikes) > 5 else ""
        )
        # One line, so a folder the user meant as a dataset never vanishes from the count without a word.
        logger.warning(
            "skipped %d folder(s) with a %s/ or %s/ folder but no %s/%s (not a dataset): %s",
            len(lookalikes),
            DATA_DIR,
            VLM_DIR,
            VLM_DIR,
            MANIFEST_NAME,
            shown,
        )
    for folder in folders:
        if wanted is not None and folder.name not in wanted:
            continue
        dataset = Dataset.from_root(folder)
        try:
            dataset.entries()
        except BenchmarkError as exc:
            logger.warning("skipping dataset %s: %s", folder, exc)
            problems.append(DiscoveryProblem(folder, exc))
            continue
        datasets.append(dataset)
    if wanted is not None:
        found = {d.name for d in datasets} | {p.name for p in problems}
        missing = sorted(wanted - found)
        if missing:
            available = sorted(f.name for f in folders)
            raise BenchmarkError(
                base, f"no dataset named {', '.join(missing)} (available: {', '.join(available) or 'none'})"
            )
    datasets.sort(key=lambda d: (d.name, str(d.root)))
    for before, after in itertools.pairwise(datasets):
        if before.name == after.name:
            # Both are kept (they are different folders), but anything keyed by dataset name will collide.
            logger.warning("two datasets are named %r: %s and %s", after.name, before.root, after.root)
    problems.sort(key=lambda p: (p.name, str(p.root)))
    return datasets, problems


def discover(root: str | Path, *, names: Iterable[str] | None = None) -> list[Dataset]:
    """Find every usable dataset under ``root`` (broken ones are skipped with a warning).

    Args:
        root: A benchmark root, a group folder, or a single dataset folder.
        names: Keep only these dataset names.

    Returns:
        The datasets, sorted by name.

    Raises:
        BenchmarkError: ``root`` does not exist, or a requested name matches no dataset.
    """
    return discover_with_problems(root, names=names)[0]


def _walk(base: Path) -> tuple[list[Path], list[Path]]:
    """``(datasets, look-alikes)`` under ``base``: folders holding ``VLM/random.txt``, and folders that hold
    a ``data/`` or ``VLM/`` folder without that manifest (what a user most likely meant as a dataset)."""
    found: list[Path] = []
    lookalikes: list[Path] = []
    # Linked folders are followed (a subset of a large benchmark is often a folder of links to its datasets);
    # each real folder is walked once, so a link back to an ancestor (a loop) or a second link to a folder
    # already walked is skipped, and said so in one line.
    seen: set[tuple[int, int]] = set()
    skipped: list[Path] = []
    with contextlib.suppress(OSError):
        seen.add(_identity(base))

    def on_error(exc: OSError) -> None:
        logger.warning("cannot list %s during discovery: %s", exc.filename, exc.strerror or exc)

    for dirpath, dirnames, _ in os.walk(base, onerror=on_error, followlinks=True):
        here = Path(dirpath)
        # Real folders claim their identity before links to them, so a link never hides the folder it names.
        ordered = sorted(dirnames, key=lambda d: (os.path.islink(os.path.join(dirpath, d)), d))
        dirnames[:] = [d for d in ordered if _first_visit(here / d, seen, skipped)]
        if (here / VLM_DIR / MANIFEST_NAME).is_file():
            found.append(here)
            # A dataset's own raw data and run outputs never hold further datasets.
            dirnames[:] = [d for d in dirnames if d not in (DATA_DIR, VLM_DIR)]
        elif any(d in (DATA_DIR, VLM_DIR) for d in dirnames):
            lookalikes.append(here)
            # Its raw data may be huge and holds no dataset of its own.
            dirnames[:] = [d for d in dirnames if d != DATA_DIR]
        # Hidden folders (.git, caches) are not datasets; sorting keeps the walk deterministic.
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
    if skipped:
        shown = ", ".join(f"{p} -> {os.path.realpath(p)}" for p in skipped[:5])
        more = f" and {len(skipped) - 5} more" if len(skipped) > 5 else ""
        logger.warning(
            "skipped %d linked folder(s) leading to a folder already walked (a loop or a second link): %s%s",
            len(skipped),
            shown,
            more,
        )
    return found, lookalikes


def _identity(path: Path) -> tuple[int, int]:
    """The real folder behind ``path`` (links followed), as the kernel names it."""
    st = os.stat(path)
    return st.st_dev, st.st_ino


def _first_visit(path: Path, seen: set[tuple[int, int]], skipped: list[Path]) -> bool:
    """Whether the walk should enter ``path``: False for a link to a folder it has entered or will enter."""
    try:
        key = _identity(path)
    except OSError:
        return True  # gone or unreadable: os.walk reports it through on_error
    if key in seen:
        if path.is_symlink():
            skipped.append(path)
        return False
    seen.add(key)
    return True
