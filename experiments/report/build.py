"""Build ``report.html`` and its ``assets/`` folder for a run folder."""

from __future__ import annotations

import logging
import shutil
import time
from pathlib import Path

from core.atomic import atomic_write_text
from experiments.report.assets import CSS, JS
from experiments.report.collect import load_run
from experiments.report.page import render_page
from experiments.report.thumbs import Thumbnailer
from experiments.stored.run_folder import RUN_INFO, read_json

__all__ = ["REPORT_NAME", "build_report", "write_report"]

log = logging.getLogger(__name__)

REPORT_NAME = "report.html"


def build_report(run_dir: str | Path, out_dir: str | Path | None = None) -> Path:
    """Write ``report.html`` and ``assets/`` (stylesheet, script, thumbnails ≤ 256 px, ablation figure).

    The page opens from ``file://`` with no server and no network. Thumbnails are named by the content of
    the image, so candidates that wrote the same image share one file.

    Args:
        run_dir: The run folder written by ``python -m experiments``.
        out_dir: Where to write the report (default: the run folder).

    Returns:
        The path of ``report.html``.

    Raises:
        FileNotFoundError: ``run_dir`` is not a folder.
        OSError: The report cannot be written.
    """
    start = time.perf_counter()
    run_dir = Path(run_dir)
    out = Path(out_dir) if out_dir is not None else run_dir
    run = load_run(run_dir)
    assets = out / "assets"
    assets.mkdir(parents=True, exist_ok=True)
    atomic_write_text(assets / "report.css", CSS)
    atomic_write_text(assets / "report.js", JS)
    ablation = None
    if run.ablation_png is not None:
        shutil.copyfile(run.ablation_png, assets / "ablation.png")
        ablation = "assets/ablation.png"
    thumbs = Thumbnailer(assets, _earlier_thumbnails(run_dir))
    page = render_page(run, thumbs, ablation)
    target = atomic_write_text(out / REPORT_NAME, page)
    n = sum(len(d.samples) for d in run.datasets)
    log.info(
        "report: %s (%d samples, %d thumbnails made, %d copied, %.1f s)",
        target,
        n,
        thumbs.written,
        thumbs.copied,
        time.perf_counter() - start,
    )
    return target


def _earlier_thumbnails(run_dir: Path) -> list[Path]:
    """The thumbnail folder of the run this one reselected (``run.json``: ``reselect.source_run``), if any.

    A reselection shows the source's candidate images again; their thumbnails are named by the image's
    content, so the source's are the very files this report would make.
    """
    info = read_json(run_dir / RUN_INFO)
    source = (info.get("reselect") or {}).get("source_run") if isinstance(info, dict) else None
    return [Path(source) / "assets" / "thumbs"] if isinstance(source, str) else []


def write_report(run_dir: str | Path) -> Path | None:
    """`build_report` for the end of a run: never raises into the run.

    Args:
        run_dir: The run folder.

    Returns:
        The report's path, or None when it could not be written (the reason is logged).
    """
    try:
        return build_report(run_dir)
    except Exception:  # a broken report must never fail a run whose results are already on disk
        log.exception("report: could not write the HTML report for %s", run_dir)
        return None
