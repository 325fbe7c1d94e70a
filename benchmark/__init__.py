"""The on-disk task format of MDS-Bench, the bundled synthetic suite, and the scorer (`benchmark.score`).

The format layer (this package's top level) reads what a benchmark root holds and writes what a run produces:

- `discover` / `Dataset`: every folder holding ``VLM/random.txt``, at any depth;
- `parse_manifest` / `reroot`: the manifest, authors' absolute paths re-rooted onto ``<dataset>/data/``;
- `OutputLayout`: ``agent1_data_organization/{images, masks, standardized_annotations, data_meta.json}``;
- `atomic_write_json` and friends: writes a reader never sees half-done.

Ground truth is deliberately not re-exported: only the scorer reads it, through `benchmark.groundtruth`.
See docs/benchmark_format.md.
"""

from benchmark.discover import Dataset, DiscoveryProblem, discover, discover_with_problems
from benchmark.errors import BenchmarkError, GroundTruthError, LayoutError, ManifestError
from benchmark.layout import AGENT_DIR, OutputLayout
from benchmark.manifest import DATA_DIR, MANIFEST_NAME, VLM_DIR, ManifestEntry, parse_manifest, reroot
from core.atomic import atomic_write_bytes, atomic_write_json, atomic_write_text

__all__ = [
    "AGENT_DIR",
    "DATA_DIR",
    "MANIFEST_NAME",
    "VLM_DIR",
    "BenchmarkError",
    "Dataset",
    "DiscoveryProblem",
    "GroundTruthError",
    "LayoutError",
    "ManifestEntry",
    "ManifestError",
    "OutputLayout",
    "atomic_write_bytes",
    "atomic_write_json",
    "atomic_write_text",
    "discover",
    "discover_with_problems",
    "parse_manifest",
    "reroot",
]
