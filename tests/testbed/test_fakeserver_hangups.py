"""A client hanging up mid-request is how runs stop their workers: the fake server keeps serving and writes
nothing into the stderr of the process hosting it (a command run in the same process shares that stderr)."""

from __future__ import annotations

import socket
import struct
import threading
import time
import urllib.request

import pytest

from testbed.fakeserver import FakeServer, Reply, TurnScript


def _hang_up_mid_body(host: str, port: int) -> None:
    with socket.create_connection((host, port)) as sock:
        head = (
            "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            "Content-Length: 4096\r\n\r\n"
        )
        sock.sendall(head.encode() + b'{"model": ')
        time.sleep(0.05)  # the handler is reading the rest of the body
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close with a reset


def test_a_client_that_resets_mid_request_leaves_no_traceback_and_the_server_serves_on(
    capfd: pytest.CaptureFixture[str],
) -> None:
    with FakeServer(TurnScript([Reply(content="ok")])) as server:
        host, port = server.url.split("//", 1)[1].split("/", 1)[0].rsplit(":", 1)
        before = threading.active_count()
        capfd.readouterr()
        _hang_up_mid_body(host, int(port))
        deadline = time.monotonic() + 10
        while threading.active_count() > before and time.monotonic() < deadline:
            time.sleep(0.02)  # the handler thread has met the reset and ended
        assert threading.active_count() <= before
        with urllib.request.urlopen(server.url + "/models", timeout=10) as answer:
            assert answer.status == 200
        _, err = capfd.readouterr()
    assert err == "", err
