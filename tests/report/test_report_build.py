"""report.html: content of the page, thumbnails, highlighting, filters' data, robustness, CLI."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from PIL import Image
from report_builders import make_run

from experiments.report import build_report, write_report
from experiments.report.jsondiff import differing_paths, flatten, json_html


def test_page_shows_both_metric_profiles_the_dataset_table_and_every_sample(tmp_path: Path) -> None:
    run = make_run(tmp_path / "run")
    page = build_report(run).read_text(encoding="utf-8")
    metrics = page[
        page.index('<table id="metrics">') : page.index("</table>", page.index('<table id="metrics">'))
    ]
    assert "official" in metrics and "strict" in metrics and metrics.count("0.7500") == 22
    assert re.search(r'data-goto="alpha".*data-goto="beta"', page)
    sections = re.findall(r'<section class="sample" id="([^"]+)"', page)
    assert sections == ["s-alpha-0", "s-alpha-1", "s-beta-0", "s-beta-1"]
    # selected + both candidates, the chosen one marked; decision reason and ground truth shown
    alpha0 = page[page.index('id="s-alpha-0"') : page.index('id="s-alpha-1"')]
    assert alpha0.count("<figure") == 3 and "candidate 0 ✓" in alpha0
    assert "validator_max: candidate 0" in alpha0 and "ground truth (expected fields)" in alpha0
    assert "expected_extra" in alpha0


def test_fields_that_differ_across_candidates_are_highlighted_in_the_selected_json(tmp_path: Path) -> None:
    page = build_report(make_run(tmp_path / "run")).read_text(encoding="utf-8")
    alpha1 = page[page.index('id="s-alpha-1"') : page.index('id="s-beta-0"')]
    assert re.search(
        r'<mark class="diff" title="[^"]*tasks\.classification\.label_name">&quot;label-0&quot;', alpha1
    )
    alpha0 = page[page.index('id="s-alpha-0"') : page.index('id="s-alpha-1"')]
    assert "<mark" not in alpha0  # identical candidates: nothing highlighted


def test_thumbnails_are_small_lazy_local_and_stored_once_per_distinct_image(tmp_path: Path) -> None:
    run = make_run(tmp_path / "run")
    page = build_report(run).read_text(encoding="utf-8")
    srcs = re.findall(r'<img src="([^"]+)" loading="lazy"', page)
    assert srcs and all(s.startswith("assets/thumbs/") for s in srcs)
    files = sorted((run / "assets" / "thumbs").glob("*.png"))
    assert len(files) == len(set(srcs)) < len(srcs)  # selected == candidate 0 images share a file
    for path in files:
        with Image.open(path) as img:
            assert max(img.size) <= 256
    assert not re.search(r'(src|href)="(https?:)?//', page)  # nothing fetched from the network


def test_a_reselections_report_copies_the_source_runs_thumbnails_instead_of_making_them(
    tmp_path: Path,
) -> None:
    """A reselected run shows the source's candidate images again: the thumbnails the source's report made
    (named by the image's bytes) are copied; one the source lacks is made."""
    import json

    source = make_run(tmp_path / "source")
    build_report(source)
    made = sorted((source / "assets" / "thumbs").glob("*.png"))
    assert made
    for path in made:  # marked, so that a copy tells itself apart from a thumbnail made again
        path.write_bytes(path.read_bytes() + b"copied")
    missing = made[0]
    missing.unlink()
    run = make_run(tmp_path / "re")
    info = json.loads((run / "run.json").read_text()) if (run / "run.json").is_file() else {}
    (run / "run.json").write_text(json.dumps({**info, "reselect": {"source_run": str(source)}}))
    build_report(run)
    thumbs = {p.name: p.read_bytes() for p in (run / "assets" / "thumbs").glob("*.png")}
    assert sorted(thumbs) == sorted(p.name for p in made)
    assert not thumbs[missing.name].endswith(b"copied")  # made here
    assert all(thumbs[p.name].endswith(b"copied") for p in made[1:])  # copied from the source


def test_an_undecodable_candidate_image_is_a_placeholder_not_a_failed_report(tmp_path: Path) -> None:
    page = build_report(make_run(tmp_path / "run")).read_text(encoding="utf-8")
    beta0 = page[page.index('id="s-beta-0"') : page.index('id="s-beta-1"')]
    assert "image cannot be decoded" in beta0


def test_samples_carry_dataset_task_and_failing_metrics_for_the_filters(tmp_path: Path) -> None:
    page = build_report(make_run(tmp_path / "run")).read_text(encoding="utf-8")
    tags = dict(
        re.findall(r'id="(s-[^"]+)" data-dataset="[^"]+" data-task="[^"]+" data-fail="([^"]*)"', page)
    )
    assert set(tags["s-alpha-1"].split()) >= {"semantic", "content", "e2e"}
    assert "e2e" not in tags["s-beta-1"].split()
    assert 'data-task="detection"' in page and '<option value="e2e">' in page


def test_the_ablation_figure_is_copied_into_assets_when_the_sweep_has_one(tmp_path: Path) -> None:
    run = make_run(tmp_path / "run", ablation=True)
    page = build_report(run).read_text(encoding="utf-8")
    assert 'src="assets/ablation.png"' in page and (run / "assets" / "ablation.png").is_file()


def test_write_report_logs_and_returns_none_instead_of_raising(tmp_path: Path, caplog) -> None:
    assert write_report(tmp_path / "missing") is None
    assert "could not write the HTML report" in caplog.text


def test_a_run_that_died_before_scoring_still_gets_a_report_saying_so(tmp_path: Path) -> None:
    run = make_run(tmp_path / "run")
    (run / "metrics.json").unlink()
    (run / "metrics_strict.json").unlink()
    (run / "samples.jsonl").write_text(
        '{"dataset": "alpha", "index": 0, "scores": {}}\n{"torn', encoding="utf-8"
    )
    page = build_report(run).read_text(encoding="utf-8")
    assert "did not finish scoring" in page and 'id="s-alpha-0"' in page


def test_cli_writes_the_report_and_prints_its_file_uri(tmp_path: Path) -> None:
    run = make_run(tmp_path / "run")
    out = subprocess.run(
        [sys.executable, "-m", "experiments.report", str(run)], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == (run / "report.html").resolve().as_uri()
    bad = subprocess.run(
        [sys.executable, "-m", "experiments.report", str(tmp_path / "nope")], capture_output=True, text=True
    )
    assert bad.returncode == 2 and "no such file or folder" in bad.stderr


def test_json_diff_treats_missing_and_empty_values_as_differences() -> None:
    a = {"x": {"y": 1, "z": []}, "l": [1, 2]}
    b = {"x": {"y": 2, "z": [3]}, "l": [1, 2]}
    assert flatten(a) == {"x.y": 1, "x.z": [], "l[0]": 1, "l[1]": 2}
    assert differing_paths([a, b, None]) == {"x.y", "x.z", "x.z[0]", "l[0]", "l[1]"}
    assert differing_paths([a]) == set()
    assert "&lt;script&gt;" in json_html({"k": "<script>"}, set())  # values are escaped
    assert "truncated" in json_html({"big": "x" * 50_000}, set())


def test_json_diff_tells_values_apart_by_their_json_text_not_python_equality() -> None:
    """1, 1.0 and true are equal in Python but differ as JSON; identical documents differ nowhere."""
    a = {"n": 1, "f": 0.0, "b": True, "s": "x", "e": []}
    b = {"n": 1.0, "f": -0.0, "b": 1, "s": "x", "e": {}}
    assert differing_paths([a, a, a]) == set()
    assert differing_paths([a, dict(a), b]) == {"n", "f", "b", "e"}
    assert differing_paths([a, a, None]) == set(flatten(a))  # a missing annotation differs everywhere
    assert differing_paths([None, None]) == set()
