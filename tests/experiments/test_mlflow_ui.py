"""``mlflow ui`` from the project's own environment (``pip install "medstrat[tracking-ui]"``) shows a tracked
run of the default store: the server started as docs/experiments.md says, the run's page opened in headless
Chromium (tests/report/cdp.py). Skipped, with the reason, when full MLflow or Chromium is not installed (the
``test`` extra installs full MLflow; ``.ci/run`` installs Chromium)."""

from __future__ import annotations

import asyncio
import contextlib
import importlib.metadata
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "report"))  # the DevTools client of the report's browser tests

from cdp import find_chromium, open_page  # noqa: E402


def _full_mlflow() -> bool:
    """The ``mlflow`` distribution (its UI server) is installed, not only ``mlflow-skinny``."""
    try:
        importlib.metadata.version("mlflow")
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


CHROMIUM = find_chromium()
pytestmark = [
    pytest.mark.heavy,
    pytest.mark.skipif(
        not _full_mlflow(),
        reason='full mlflow (its UI server) not installed: pip install "medstrat[tracking-ui]"',
    ),
    pytest.mark.skipif(CHROMIUM is None, reason="no Chromium installed (apt-get install chromium)"),
]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _plain_env() -> dict[str, str]:
    """A user's shell (no ``MLFLOW_*`` variable) plus the two settings docs/experiments.md gives for a
    laptop: MLflow's server imports litellm, which would otherwise try to fetch its price map from the
    network (three attempts, seconds of back-off; a test reaches loopback only), and MLflow's job runner
    (two more interpreters, a third of the server's CPU here) serves no page this project shows."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")}
    return {**env, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}


def _mlflow_command() -> list[str]:
    """The ``mlflow`` command of this environment (the console script beside this interpreter)."""
    script = Path(sys.executable).parent / "mlflow"
    return [str(script)] if script.is_file() else [sys.executable, "-m", "mlflow"]


@contextlib.contextmanager
def _mlflow_ui(folder: Path, log: Path) -> Iterator[tuple[str, Path]]:
    """(base URL, server log) of ``mlflow ui --backend-store-uri sqlite:///mlflow.db`` started in ``folder``
    on a free loopback port, as the docs say; stopped (its whole process group) afterwards."""
    port = _free_port()
    args = ["ui", "--backend-store-uri", "sqlite:///mlflow.db", "--host", "127.0.0.1", "--port", str(port)]
    args += ["--workers", "1"]  # one page to serve: MLflow's default of four starts three interpreters more
    with log.open("wb") as out:
        server = subprocess.Popen(
            [*_mlflow_command(), *args],
            cwd=folder,
            env=_plain_env(),
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # the server's workers are its children: stopped with it
        )
    base = f"http://127.0.0.1:{port}"
    try:
        yield base, log
    finally:
        with_group = os.getpgid(server.pid) == server.pid
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGTERM) if with_group else server.terminate()
            try:
                server.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(server.pid, signal.SIGKILL) if with_group else server.kill()
                server.wait(10)


def _wait_until_up(base: str, log: Path, limit_s: float = 120) -> float:
    """Seconds until ``/health`` answers; the server's last line on failure."""
    start = time.monotonic()
    while time.monotonic() - start < limit_s:
        try:
            with urllib.request.urlopen(f"{base}/health", timeout=2) as reply:
                if reply.status == 200:
                    return time.monotonic() - start
        except OSError:
            time.sleep(0.25)
    tail = log.read_text(errors="replace").strip().splitlines()[-3:]
    raise AssertionError(f"mlflow ui did not answer in {limit_s:.0f} s: {tail}")


def _page_text(base: str, path: str, profile: Path, needles: tuple[str, ...]) -> tuple[str, Path]:
    """The visible text of ``base + path`` once it holds every needle (or after 60 s), and a screenshot."""
    shot = profile.parent / "mlflow_run_page.png"

    async def drive() -> str:
        assert CHROMIUM is not None
        async with open_page(CHROMIUM, profile) as page:
            await page.navigate(base + path)
            text = ""
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:  # the page is a React app: it fills in after the load event
                text = str(await page.evaluate("document.body.innerText"))
                if all(n in text for n in needles):
                    break
                await asyncio.sleep(0.25)
            await page.screenshot(shot)
            return text

    return asyncio.run(asyncio.wait_for(drive(), 120)), shot


def test_mlflow_ui_from_the_same_environment_shows_a_tracked_run_of_the_default_store(
    tracked_run: tuple[Path, Path], tmp_path: Path
) -> None:
    base, run_dir = tracked_run
    link = json.loads((run_dir / "tracking.json").read_text(encoding="utf-8"))
    macro = json.loads((run_dir / "metrics.json").read_text(encoding="utf-8"))["macro"]

    with _mlflow_ui(base, tmp_path / "mlflow-ui.log") as (url, log):
        up_s = _wait_until_up(url, log)
        path = f"/#/experiments/{link['experiment_id']}/runs/{link['run_id']}"
        text, shot = _page_text(url, path, tmp_path / "profile", (run_dir.name, "official/E2E"))
    print(f"\nmlflow ui answered after {up_s:.1f} s")
    print(f"\nthe run's page in mlflow ui: {shot}")
    assert run_dir.name in text, text[:2000]
    assert "official/E2E" in text and "strict/E2E" in text, text[:2000]
    assert f"{macro['E2E']:g}"[:4] in text, text[:2000]  # the value, as the page rounds it
