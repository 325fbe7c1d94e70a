"""A minimal Chrome DevTools Protocol client over aiohttp's websocket (aiohttp is already installed as a
dependency of litellm), driving the system Chromium headless. Never downloads a browser."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import shutil
import subprocess
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp

CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--remote-debugging-port=0",
    "--window-size=1400,1000",
)


def find_chromium() -> str | None:
    """The system Chromium (``/usr/bin/chromium`` or one on PATH), or None."""
    for name in ("/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


class Page:
    """One page target: send commands, collect console errors."""

    def __init__(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        self.ws = ws
        self.errors: list[str] = []
        self.events: dict[str, asyncio.Event] = {}
        self._next = 0
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self._reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        async for msg in self.ws:
            data = json.loads(msg.data)
            if "id" in data and data["id"] in self._pending:
                self._pending.pop(data["id"]).set_result(data)
                continue
            method = data.get("method", "")
            params = data.get("params", {})
            if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                self.errors.append(
                    "console: " + " ".join(str(a.get("value", a)) for a in params.get("args", []))
                )
            elif method == "Runtime.exceptionThrown":
                self.errors.append("exception: " + json.dumps(params.get("exceptionDetails", {}))[:500])
            elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
                entry = params["entry"]
                self.errors.append(f"log: {entry.get('text')} {entry.get('url', '')}")
            self.events.setdefault(method, asyncio.Event()).set()

    async def send(self, method: str, **params: Any) -> dict[str, Any]:
        """Send a command and return its ``result`` (raises on a protocol error)."""
        self._next += 1
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[self._next] = future
        await self.ws.send_str(json.dumps({"id": self._next, "method": method, "params": params}))
        reply = await asyncio.wait_for(future, 30)
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        return dict(reply.get("result", {}))

    async def evaluate(self, expression: str) -> Any:
        """Evaluate JavaScript in the page and return its JSON value."""
        result = await self.send(
            "Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True
        )
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    async def navigate(self, url: str) -> None:
        """Load ``url`` and wait for its load event."""
        self.events.pop("Page.loadEventFired", None)
        loaded = self.events.setdefault("Page.loadEventFired", asyncio.Event())
        await self.send("Page.navigate", url=url)
        await asyncio.wait_for(loaded.wait(), 30)

    async def key(self, key: str) -> None:
        """Press and release one key (``"j"``, ``"ArrowDown"``)."""
        codes = {"j": 74, "k": 75, "ArrowDown": 40, "ArrowUp": 38}
        for kind in ("keyDown", "keyUp"):
            await self.send(
                "Input.dispatchKeyEvent",
                type=kind,
                key=key,
                windowsVirtualKeyCode=codes.get(key, 0),
                text=key if len(key) == 1 and kind == "keyDown" else "",
            )

    async def screenshot(self, path: Path) -> None:
        """Save a PNG of the viewport."""
        data = await self.send("Page.captureScreenshot", format="png")
        path.write_bytes(base64.b64decode(data["data"]))


@contextlib.asynccontextmanager
async def open_page(chromium: str, profile_dir: Path) -> AsyncIterator[Page]:
    """Start headless Chromium on about:blank and yield its page, with Runtime/Log/Page events enabled."""
    profile_dir.mkdir(parents=True, exist_ok=True)
    log_path = profile_dir.parent / f"{profile_dir.name}-chromium.log"
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile_dir}", "about:blank"],
            stdout=subprocess.DEVNULL,
            stderr=log,
        )
    try:
        port_file = profile_dir / "DevToolsActivePort"
        # The browser test took 2-18 s alone on a 2-core machine whose speed varies, and a 30 s limit on
        # Chromium's start failed once beside the rest of a clean-clone CI run (the tests allow 90 s in all).
        limit = 60
        deadline = time.monotonic() + limit
        while not (port_file.is_file() and port_file.read_text().strip()):
            if time.monotonic() > deadline or proc.poll() is not None:
                code = proc.returncode
                why = f"exited with {code}" if code is not None else f"no port in {limit} s"
                tail = log_path.read_text(errors="replace").strip().splitlines()[-1:] or ["(no output)"]
                raise RuntimeError(f"chromium did not open its DevTools port ({why}): {tail[0]}")
            await asyncio.sleep(0.05)
        port = int(port_file.read_text().split()[0])
        async with aiohttp.ClientSession() as http:
            async with http.get(f"http://127.0.0.1:{port}/json/list") as resp:
                targets = await resp.json()
            url = next(t["webSocketDebuggerUrl"] for t in targets if t.get("type") == "page")
            async with http.ws_connect(url, max_msg_size=0) as ws:
                page = Page(ws)
                for domain in ("Page", "Runtime", "Log"):
                    await page.send(f"{domain}.enable")
                yield page
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
