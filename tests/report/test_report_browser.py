"""report.html in headless Chromium (system browser, Chrome DevTools protocol): no console errors, images and
the metrics table render, filters and j/k navigation work; a screenshot is kept as a test artifact."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from cdp import find_chromium, open_page
from report_builders import make_run

from experiments.report import build_report

CHROMIUM = find_chromium()
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no Chromium installed (apt-get install chromium)")


def _artifacts(tmp_path: Path) -> Path:
    folder = Path(os.environ.get("MEDSTRAT_TEST_ARTIFACTS", tmp_path / "artifacts")) / "report"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def test_report_opens_offline_without_console_errors_and_filters_and_navigation_work(tmp_path: Path) -> None:
    """Expect: zero console errors or failed loads; 4 samples shown, 2 after filtering by dataset, 1 after
    filtering by failing E2E; j/k move the current sample among the visible ones; images decode."""
    report = build_report(make_run(tmp_path / "run", ablation=True))
    artifacts = _artifacts(tmp_path)

    async def drive() -> dict[str, object]:
        assert CHROMIUM is not None
        async with open_page(CHROMIUM, tmp_path / "profile") as page:
            await page.navigate(report.resolve().as_uri())
            seen: dict[str, object] = {}
            seen["metrics_rows"] = await page.evaluate("document.querySelectorAll('#metrics tr').length")
            seen["shown0"] = await page.evaluate("document.body.dataset.shown")
            # wait for the first (visible, lazy) images to decode
            for _ in range(100):
                loaded = await page.evaluate(
                    "Array.from(document.images).filter(i => i.complete && i.naturalWidth > 0).length"
                )
                if loaded >= 3:
                    break
                await asyncio.sleep(0.05)
            seen["images_loaded"] = loaded
            await page.screenshot(artifacts / "report_top.png")
            seen["current0"] = await page.evaluate("document.body.dataset.current")
            await page.key("j")
            seen["after_j"] = await page.evaluate("document.body.dataset.current")
            await page.key("ArrowDown")
            seen["after_down"] = await page.evaluate("document.body.dataset.current")
            await page.key("k")
            seen["after_k"] = await page.evaluate("document.body.dataset.current")
            await page.evaluate(
                "(() => { const s = document.getElementById('f-dataset'); s.value = 'beta';"
                " s.dispatchEvent(new Event('change')); })()"
            )
            seen["shown_beta"] = await page.evaluate("document.body.dataset.shown")
            seen["current_beta"] = await page.evaluate("document.body.dataset.current")
            await page.key("j")
            seen["beta_after_j"] = await page.evaluate("document.body.dataset.current")
            await page.evaluate(
                "(() => { for (const [id, v] of [['f-dataset', ''], ['f-fail', 'e2e']]) {"
                " const s = document.getElementById(id); s.value = v;"
                " s.dispatchEvent(new Event('change')); } })()"
            )
            seen["shown_e2e"] = await page.evaluate("document.body.dataset.shown")
            seen["current_e2e"] = await page.evaluate("document.body.dataset.current")
            await page.screenshot(artifacts / "report_filtered.png")
            await asyncio.sleep(0.2)  # late errors (lazy image loads) still arrive
            seen["errors"] = list(page.errors)
            return seen

    seen = asyncio.run(asyncio.wait_for(drive(), 90))
    print(f"\nreport screenshots in {artifacts}")
    assert seen["errors"] == []
    assert seen["metrics_rows"] == 3 and seen["images_loaded"] >= 3
    assert seen["shown0"] == "4" and seen["current0"] == "s-alpha-0"
    assert (seen["after_j"], seen["after_down"], seen["after_k"]) == ("s-alpha-1", "s-beta-0", "s-alpha-1")
    assert (
        seen["shown_beta"] == "2"
        and seen["current_beta"] == "s-beta-0"
        and seen["beta_after_j"] == "s-beta-1"
    )
    assert seen["shown_e2e"] == "1" and seen["current_e2e"] == "s-alpha-1"
    assert (artifacts / "report_top.png").stat().st_size > 10_000
