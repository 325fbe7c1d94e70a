"""A fake OpenAI-compatible chat-completions server on 127.0.0.1, for offline tests and demos.

It implements ``POST /v1/chat/completions`` (non-streaming), ``GET /v1/models`` (the id in
``served_model``) and, when ``model_path`` is set, llama.cpp's ``GET /props``, and answers from a script,
so the LiteLLM agent is exercised through the real LiteLLM/OpenAI client path:
``model="openai/<name>", api_base=server.url, api_key="sk-fake"``. Every request body is recorded for
assertions, with the time spent serving it, so framework overhead can be measured net of server time.
"""

from __future__ import annotations

import contextlib
import json
import re
import socket
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from testbed.fakeserver.script import Delay, Fault, Garbage, Reply, Script, Step

__all__ = ["FakeServer", "RecordedRequest"]


@dataclass(frozen=True)
class RecordedRequest:
    """One request the server received.

    Attributes:
        serial: Arrival order (0-based).
        path: The URL path.
        body: The parsed JSON body (None when it was not JSON).
        headers: Request headers (the ``authorization`` header is dropped so keys are never kept).
        server_s: Seconds spent serving it, scripted delays and latency excluded.
    """

    serial: int
    path: str
    body: dict[str, Any] | None
    headers: dict[str, str]
    server_s: float


#: Tokens an image part costs in the estimate (a <= 512 px image at OpenAI's high detail: 85 + 170 per tile).
IMAGE_TOKENS = 255
_DATA_URL = re.compile(r"data:image/[a-z0-9.+-]+;base64,[A-Za-z0-9+/=]+")


def _estimate_tokens(obj: Any) -> int:
    # About four characters per token, the usual rule of thumb; deterministic so replays compare equal.
    # An inline image is priced as providers price one (a fixed count), not by the length of its base64.
    text = json.dumps(obj, sort_keys=True, default=str)
    images = len(_DATA_URL.findall(text))
    return max(1, len(_DATA_URL.sub("", text)) // 4 + IMAGE_TOKENS * images)


def completion_body(request: Mapping[str, Any], reply: Reply, serial: int) -> dict[str, Any]:
    """Build the chat-completion JSON for a scripted reply.

    Args:
        request: The request body (for the model name and the token estimate).
        reply: The scripted assistant message.
        serial: The request number (for the response id).

    Returns:
        An OpenAI ``chat.completion`` object.
    """
    message: dict[str, Any] = {"role": "assistant", "content": reply.content}
    if reply.tool_calls:
        message["tool_calls"] = [dict(c) for c in reply.tool_calls]
    if reply.usage is not None:
        prompt, completion = reply.usage
    else:
        prompt, completion = _estimate_tokens(request.get("messages", [])), _estimate_tokens(message)
    return {
        "id": f"chatcmpl-fake-{serial}",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": str(request.get("model", "fake")),
        "choices": [
            {"index": 0, "message": message, "finish_reason": "tool_calls" if reply.tool_calls else "stop"}
        ],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
    }


def _dump(obj: Any) -> bytes:
    return json.dumps(obj).encode("utf-8")


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    request_queue_size = 1024
    owner: FakeServer

    def server_bind(self) -> None:
        self.socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        super().server_bind()

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that hangs up mid-request (a run stopping its workers, a killed process) is how runs end,
        # not a server fault: socketserver would print its traceback into the stderr of whoever hosts the
        # server, a command run in the same process included.
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        # Keep test output quiet; the server records requests itself.
        return

    def setup(self) -> None:
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def do_GET(self) -> None:
        owner = self.server.owner
        if self.path.rstrip("/").endswith("/models"):
            served = owner.served_model or "fake"
            self._send(200, {"object": "list", "data": [{"id": served, "object": "model"}]})
        elif self.path.rstrip("/").endswith("/props") and owner.model_path is not None:
            self._send(200, {"model_path": owner.model_path})
        else:
            self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})

    def do_POST(self) -> None:
        start = time.perf_counter()
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        owner = self.server.owner
        headers = {
            k.lower(): v for k, v in self.headers.items() if k.lower() not in ("authorization", "api-key")
        }
        serial = owner._next_serial()
        if not self.path.rstrip("/").endswith("/chat/completions") or not isinstance(body, dict):
            self._send(404 if isinstance(body, dict) else 400, {"error": {"message": "bad request"}})
            owner._record(RecordedRequest(serial, self.path, body, headers, time.perf_counter() - start))
            return
        step: Step = owner.script(body, serial)
        waited = 0.0
        if owner.latency_s > 0:
            time.sleep(owner.latency_s)
            waited += owner.latency_s
        while isinstance(step, Delay):
            time.sleep(step.seconds)
            waited += step.seconds
            step = step.then
        retry_after: float | None = None
        if isinstance(step, Fault):
            status, data = step.status, _dump({"error": {"message": step.message, "type": "injected"}})
            retry_after = step.retry_after
        elif isinstance(step, Garbage):
            status, data = 200, step.body.encode("utf-8")
        else:
            answer = completion_body(body, step, serial)
            if owner.served_model is not None:  # a real server names the model it serves, not the one asked
                answer["model"] = owner.served_model
            status, data = 200, _dump(answer)
        # Record before answering: once the client has the answer, the request must be visible to assertions.
        owner._record(RecordedRequest(serial, self.path, body, headers, time.perf_counter() - start - waited))
        # A delay fault intends the client to time out and hang up before the answer.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self._send_raw(status, data, "application/json", retry_after)

    def _send(self, status: int, obj: Any) -> None:
        self._send_raw(status, _dump(obj), "application/json")

    def _send_raw(self, status: int, data: bytes, ctype: str, retry_after: float | None = 0.0) -> None:
        self.send_response(status)
        self.send_header("content-type", ctype)
        self.send_header("content-length", str(len(data)))
        if status == 429 and retry_after is not None:
            self.send_header("retry-after", f"{retry_after:g}")
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()


class FakeServer:
    """A scripted OpenAI-compatible server in a background thread.

    Args:
        script: Answers each request (see `testbed.fakeserver.script`).
        latency_s: Extra delay added to every answer.
        host: Interface to bind (loopback only by default).
        port: TCP port (0 picks a free one).

    Example:
        >>> with FakeServer(TurnScript([Reply(content="hi")])) as server:  # doctest: +SKIP
        ...     litellm.completion(model="openai/x", api_base=server.url, api_key="sk-fake", messages=[...])
    """

    def __init__(
        self, script: Script, *, latency_s: float = 0.0, host: str = "127.0.0.1", port: int = 0
    ) -> None:
        self.script = script
        self.latency_s = latency_s
        #: The model id ``/v1/models`` reports and answers carry (None: ``fake``, answers echo the request);
        #: set it between runs to play a server that swapped its weights behind the same port.
        self.served_model: str | None = None
        #: llama.cpp's ``/props`` ``model_path`` (None: no ``/props``, as before).
        self.model_path: str | None = None
        self._httpd = _Server((host, port), _Handler)
        self._httpd.owner = self
        self._lock = threading.Lock()
        self._serial = 0
        self._requests: list[RecordedRequest] = []
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """The ``api_base`` to give LiteLLM (``http://127.0.0.1:<port>/v1``)."""
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received so far, in completion order."""
        with self._lock:
            return list(self._requests)

    @property
    def chat_requests(self) -> list[dict[str, Any]]:
        """The JSON bodies of the chat-completion requests received so far, in arrival order."""
        done = sorted(self.requests, key=lambda r: r.serial)
        return [
            r.body for r in done if r.body is not None and r.path.rstrip("/").endswith("/chat/completions")
        ]

    def reset(self) -> None:
        """Forget the recorded requests."""
        with self._lock:
            self._requests.clear()

    def start(self) -> FakeServer:
        """Serve in a daemon thread.

        Returns:
            The server itself.
        """
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="fake-openai", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket."""
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> FakeServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _next_serial(self) -> int:
        with self._lock:
            serial = self._serial
            self._serial += 1
            return serial

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(request)
