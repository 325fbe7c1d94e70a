"""Provider faults: 30 % of model calls answered with 429, 500 or a timeout."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from fault_builders import N_SAMPLES, USAGE, make_agent, png_dataset, png_task, standard_steps

from testbed.fakeserver import Delay, FakeServer, Fault, TurnScript, with_faults


def test_thirty_percent_provider_faults_lose_no_sample_and_every_retry_is_counted(tmp_path: Path) -> None:
    """Expect: all 4 concurrent candidates finish ``ok`` with every sample's image and JSON written
    (0 samples lost); ``usage.calls`` equals the scripted turns; ``usage.retries`` equals the faulted
    requests the server saw; tokens are charged once per successful call."""
    root = png_dataset(tmp_path / "tiny")
    steps = standard_steps()
    faults = (Fault(429, "slow down"), Fault(500, "boom"), Delay(1.0))  # the delay outlives the 0.3 s timeout
    server = FakeServer(with_faults(TurnScript(steps), rate=0.3, faults=faults, seed=11)).start()
    try:
        agent = make_agent(server, timeout_s=0.3)
        base = png_task(root, tmp_path / "c0")
        tasks = [base.for_candidate(k, tmp_path / f"c{k}") for k in range(4)]

        async def run_all():
            return await asyncio.gather(*(agent.generate(t) for t in tasks))

        candidates = asyncio.run(run_all())
        time.sleep(1.2)  # let timed-out requests finish on the server side before counting them
        requests = len(server.chat_requests)
    finally:
        server.stop()
    assert [c.status for c in candidates] == ["ok"] * 4, [c.reason for c in candidates]
    for c in candidates:
        for i in range(N_SAMPLES):
            assert (c.output_dir / "images" / f"{i}.png").is_file()
            assert (c.output_dir / "standardized_annotations" / f"{i}.json").is_file()
        assert (c.output_dir / "data_meta.json").is_file()
        assert c.usage.calls == len(steps)
        assert c.usage.prompt_tokens == USAGE[0] * len(steps)
    retries = sum(c.usage.retries for c in candidates)
    assert retries > 0
    assert retries == requests - sum(c.usage.calls for c in candidates)
