"""The sweep folder's own report.html: ablation tables with seeds and cost, both figures, links to every job's
report, what each strategy kept side by side; `medstrat report SWEEP` builds it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from sweep_builders import make_sweep

from experiments.analysis.sweep_report import build_sweep_report, is_sweep

REPO = Path(__file__).resolve().parents[2]


def test_the_sweep_page_has_tables_figures_links_and_samples_side_by_side(tmp_path: Path) -> None:
    sweep = make_sweep(tmp_path / "sweep")
    assert is_sweep(sweep) and not is_sweep(sweep / "0_s0")
    page = build_sweep_report(sweep).read_text()
    assert page.count('<img class="fig"') == 2
    for name in ("ablation.png", "ablation_cost.png", "report.css", "sweep.js"):
        assert (sweep / "assets" / name).is_file(), name
    for job in ("0_s0", "1_s3", "2_s3"):
        assert f'href="{job}/report.html"' in page
    assert 'id="ablation"' in page and 'id="cost"' in page and "wall_s" in page and "seeds" in page
    # 4 samples, one row each, one column per strategy (s3's lowest seed): alpha #0 disagrees, alpha #1 fails
    # in both, the beta samples disagree (s0 was set to fail everywhere).
    assert page.count('<tr class="sample') == 4
    assert page.count('<tr class="sample agree"') == 1
    assert "s3 · seed 0" in page and "s3 · seed 1" not in page


def test_report_cli_on_a_sweep_folder_builds_the_sweep_page(tmp_path: Path) -> None:
    sweep = make_sweep(tmp_path / "sweep")
    done = subprocess.run(
        [sys.executable, "-m", "experiments.report", str(sweep)], cwd=REPO, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == (sweep / "report.html").resolve().as_uri()
    assert "metrics.json is missing" not in (sweep / "report.html").read_text()


def test_the_sweep_page_in_chromium_has_no_errors_and_figures_fit_1400_px(tmp_path: Path) -> None:
    """Expect: zero console errors or failed loads; both figures decoded and within the 1400 px window; no
    horizontal scrolling of the page; the disagreement filter hides the one agreeing sample."""
    import asyncio

    import pytest
    from cdp import find_chromium, open_page

    chromium = find_chromium()
    if chromium is None:
        pytest.skip("no Chromium installed (apt-get install chromium)")
    report = build_sweep_report(make_sweep(tmp_path / "sweep"))

    async def drive() -> dict[str, object]:
        async with open_page(chromium, tmp_path / "profile") as page:
            await page.navigate(report.resolve().as_uri())
            seen: dict[str, object] = {}
            for _ in range(100):
                figs = await page.evaluate(
                    "Array.from(document.querySelectorAll('img.fig')).map(i => [i.complete && "
                    "i.naturalWidth > 0, i.getBoundingClientRect().right, i.getBoundingClientRect().width])"
                )
                if figs and all(f[0] for f in figs):
                    break
                await asyncio.sleep(0.05)
            seen["figs"] = figs
            seen["inner"] = await page.evaluate("window.innerWidth")
            seen["scroll"] = await page.evaluate("document.documentElement.scrollWidth")
            await page.evaluate(
                "(() => { const c = document.getElementById('only-disagree'); c.checked = true;"
                " c.dispatchEvent(new Event('change')); })()"
            )
            seen["visible_rows"] = await page.evaluate(
                "Array.from(document.querySelectorAll('tr.sample'))"
                ".filter(r => r.offsetParent !== null).length"
            )
            await asyncio.sleep(0.2)
            seen["errors"] = list(page.errors)
            return seen

    seen = asyncio.run(asyncio.wait_for(drive(), 90))
    assert seen["errors"] == []
    figs = seen["figs"]
    assert isinstance(figs, list) and len(figs) == 2
    assert all(ok and right <= seen["inner"] and width > 300 for ok, right, width in figs)
    assert seen["scroll"] <= seen["inner"]
    assert seen["visible_rows"] == 3
