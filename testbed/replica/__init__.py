"""The replica suite (``benchmark=replica``): real MDS-Bench datasets rebuilt from the replica material
(``shared/mdsbench/replica``) with their real trees and text files, their own manifests and ground truth, and
every binary synthesized in its real container format. Nothing of the material ships with the project.

``medstrat replica OUT [--source DIR]`` writes it; see docs/benchmark.md, "Replica suite".
"""

from testbed.replica.build import BUILD_REPORT, ReplicaBuild, build_replica
from testbed.replica.source import ReplicaSourceError, find_replica_source, source_digest

__all__ = [
    "BUILD_REPORT",
    "ReplicaBuild",
    "ReplicaSourceError",
    "build_replica",
    "find_replica_source",
    "source_digest",
]
