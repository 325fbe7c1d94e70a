"""What a local server needs: its window and slots a wait for it, one request at a time."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from agent_scripts import FAKE_KEY, FAST_RETRY

from agents.model.client import ModelClient
from agents.model.config import ModelConfig
from agents.model.server import EndpointSlots, ServerOptions, discover, is_loopback, window_from_error
from testbed.fakeserver.script import Reply


def _serve(routes: dict[str, Any], port: int = 0) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            body = routes.get(self.path)
            self.send_response(200 if body is not None else 404)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(json.dumps(body if body is not None else {"error": "no"}).encode())

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def test_the_window_and_slots_are_read_where_the_server_says_them() -> None:
    vllm = _serve({"/v1/models": {"data": [{"id": "m", "max_model_len": 4096}]}})
    llamacpp = _serve(
        {
            "/v1/models": {"data": [{"id": "smol"}]},
            "/props": {"default_generation_settings": {"n_ctx": 8192}, "total_slots": 2},
        }
    )
    silent = _serve({"/v1/models": {"data": [{"id": "x"}]}})
    try:
        facts = discover(f"http://127.0.0.1:{vllm.server_port}/v1")
        assert (facts.context_window, facts.slots, facts.models, facts.answered) == (4096, None, ("m",), True)
        facts = discover(f"http://127.0.0.1:{llamacpp.server_port}/v1")
        assert (facts.context_window, facts.slots) == (8192, 2)
        facts = discover(f"http://127.0.0.1:{silent.server_port}/v1")
        assert (facts.context_window, facts.slots, facts.answered) == (None, None, True)
    finally:
        for server in (vllm, llamacpp, silent):
            server.shutdown()


def test_a_server_started_after_the_run_is_waited_for() -> None:
    probe = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    port = probe.server_port
    probe.server_close()  # the port is free: the "server" is not up yet
    assert discover(f"http://127.0.0.1:{port}/v1", wait_s=0).answered is False
    started: list[ThreadingHTTPServer] = []
    timer = threading.Timer(0.8, lambda: started.append(_serve({"/v1/models": {"data": []}}, port)))
    timer.start()
    try:
        begin = time.monotonic()
        facts = discover(f"http://127.0.0.1:{port}/v1", wait_s=10)
        assert facts.answered and 0.7 < time.monotonic() - begin < 8
    finally:
        timer.join()
        for server in started:
            server.shutdown()


@pytest.mark.parametrize(
    ("message", "window"),
    [
        ("This model's maximum context length is 8192 tokens. However, you requested 9100", 8192),
        ("Requested tokens (9001) exceed context window of 4096", 4096),
        ("the request exceeds the available context size (2048 tokens)", 2048),
        ("bad request: unknown field", None),
    ],
)
def test_the_window_is_read_from_each_servers_overflow_message(message: str, window: int | None) -> None:
    assert window_from_error(message) == window


def test_server_options_refuse_what_is_not_a_window_or_a_slot_count() -> None:
    assert ServerOptions.of({"context_window": "auto", "slots": 1, "wait_s": 5}) == ServerOptions(
        None, 1, 5.0
    )
    assert ServerOptions.of(None) is None
    for bad, match in (
        ({"slots": 0}, "slots=0: must be 1 or more"),
        ({"context_window": "big"}, "expected a positive integer or auto"),
        ({"window": 1}, "unknown keys"),
        ({"wait_s": -1}, "cannot be negative"),
    ):
        with pytest.raises(ValueError, match=match):
            ServerOptions.of(bad)
    assert is_loopback("http://127.0.0.1:8080/v1") and is_loopback("http://localhost:1/v1")
    assert not is_loopback("https://api.openai.com/v1") and not is_loopback(None)


def test_one_slot_keeps_one_request_in_flight_and_no_timeout_is_spent_queueing(fake_server) -> None:
    lock = threading.Lock()
    seen = {"now": 0, "most": 0}

    def slow(request: dict[str, Any], serial: int) -> Reply:
        with lock:
            seen["now"] += 1
            seen["most"] = max(seen["most"], seen["now"])
        time.sleep(0.6)  # a one-slot server: each answer takes its time
        with lock:
            seen["now"] -= 1
        return Reply(content="ok", usage=(3, 1))

    server = fake_server(slow)

    def calls(slots: int | None) -> list[Any]:
        seen["most"] = 0
        # 1.0 s per attempt: four requests queued on the server would time out; queued here, none does.
        config = ModelConfig(
            "openai/fake-model", api_base=server.url, api_key=FAKE_KEY, timeout_s=1.0, retry=FAST_RETRY
        )
        client = ModelClient(config, slots=slots)

        async def four() -> list[Any]:
            return await asyncio.gather(
                *(client.complete([{"role": "user", "content": f"q{k}"}], [], {}, k) for k in range(4)),
                return_exceptions=True,
            )

        return asyncio.run(four())

    replies = calls(1)
    assert seen["most"] == 1
    assert all(not isinstance(r, BaseException) and r.retries == 0 for r in replies)
    calls(None)
    assert seen["most"] > 1  # without the slot the server is handed several at once


def test_a_slot_held_by_another_process_is_waited_for(tmp_path: Path) -> None:
    code = (
        "import asyncio, sys, time\n"
        "from pathlib import Path\n"
        "from agents.model.server import EndpointSlots\n"
        "async def main():\n"
        f"    async with EndpointSlots('http://x', 1, Path({str(tmp_path)!r})).hold():\n"
        "        print('held', flush=True)\n"
        "        time.sleep(1.0)\n"
        "asyncio.run(main())\n"
    )
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "held"

        async def take() -> float:
            async with EndpointSlots("http://x", 1, tmp_path).hold() as waited:
                return waited

        assert asyncio.run(take()) > 0.5
    finally:
        child.wait(timeout=10)
    assert child.returncode == 0
