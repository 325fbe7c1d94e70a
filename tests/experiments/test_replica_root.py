"""``benchmark=replica`` (issue 30): the run finds the replica material where the config says, and stops
with one line naming the folder when it is not there (the CLI maps it to exit 2)."""

from __future__ import annotations

from pathlib import Path

import pytest
from omegaconf import OmegaConf

from benchmark.errors import BenchmarkError
from experiments.run.experiment import benchmark_root
from testbed.replica import ReplicaSourceError


def test_missing_replica_material_is_a_one_line_benchmark_error(tmp_path: Path) -> None:
    cfg = OmegaConf.create(
        {"suite": "replica", "source": str(tmp_path / "absent"), "cache_dir": str(tmp_path)}
    )
    with pytest.raises(ReplicaSourceError) as info:
        benchmark_root(cfg)
    assert isinstance(info.value, BenchmarkError)  # exit 2 through experiments.__main__'s input errors
    message = str(info.value)
    assert str(tmp_path / "absent") in message and "\n" not in message
    assert not list(tmp_path.glob("replica-*"))  # nothing half-built in the cache


def test_the_replica_config_selects_the_replica_suite() -> None:
    conf = OmegaConf.load(Path(__file__).resolve().parents[2] / "conf" / "benchmark" / "replica.yaml")
    assert conf.suite == "replica" and "source" in conf and conf.source is None
