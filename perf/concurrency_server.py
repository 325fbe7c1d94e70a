"""The fake provider of `perf/concurrency.py` in a process of its own, stamping when each request arrives.

A real provider does not run inside the client's Python process, so the server of both sides (ours and bare
LiteLLM) is a forked child: its request parsing and threads are not charged to the client's CPU, and its
arrival stamps (``time.perf_counter``, CLOCK_MONOTONIC, shared by all processes) give the model-call phase.
"""

from __future__ import annotations

import multiprocessing
import threading
import time
from collections.abc import Mapping
from typing import Any

from concurrency_replay import Body

from testbed.fakeserver import ByDataset, FakeServer, Step, TurnScript


class Dispatch(ByDataset):
    """One server for every dataset (`testbed.fakeserver.ByDataset`) that also stamps the arrival time of
    every request (the server's clock) for the phase measurement."""

    def __init__(self, scripts: Mapping[str, TurnScript]) -> None:
        super().__init__(scripts)
        self.arrivals: list[float] = []
        self._lock = threading.Lock()

    def __call__(self, request: Mapping[str, Any], serial: int) -> Step:
        """Stamp the arrival, then answer from the dataset's script."""
        with self._lock:
            self.arrivals.append(time.perf_counter())
        return super().__call__(request, serial)


class ServerProcess:
    """The fake server in a forked child process, so its CPU is not spent under the client's GIL.

    A real provider does not run inside the client's Python process; with the server in-process its request
    parsing and threads (~5 ms of CPU per call at 64 connections) would be charged to the client.
    Arrival stamps use ``time.perf_counter`` (CLOCK_MONOTONIC), which all processes share. On exit the
    arrivals and the chat-completion bodies (in arrival order) come back to the parent.
    """

    def __init__(self, dispatch: Dispatch, latency_s: float) -> None:
        self._ctx = multiprocessing.get_context("fork")
        self._parent, child = self._ctx.Pipe()
        self._process = self._ctx.Process(target=self._serve, args=(dispatch, latency_s, child), daemon=True)
        self.url = ""
        self.pid = 0
        self.arrivals: list[float] = []
        self.bodies: list[Body] = []

    @staticmethod
    def _serve(dispatch: Dispatch, latency_s: float, conn: Any) -> None:
        with FakeServer(dispatch, latency_s=latency_s) as server:
            conn.send(server.url)
            conn.recv()  # block until the parent asks to stop
            conn.send((dispatch.arrivals, server.chat_requests))

    def __enter__(self) -> ServerProcess:
        self._process.start()
        self.pid = self._process.pid or 0
        self.url = self._parent.recv()
        return self

    def __exit__(self, *exc: object) -> None:
        self._parent.send("stop")
        self.arrivals, self.bodies = self._parent.recv()
        self._process.join(timeout=30)

    def phase(self, latency_s: float) -> tuple[float, float]:
        """The model-call phase on the server's clock: first arrival, last answer."""
        if not self.arrivals:
            raise RuntimeError("the fake server received no request")
        return min(self.arrivals), max(self.arrivals) + latency_s
