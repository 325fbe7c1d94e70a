"""The report's stylesheet and script, written into ``assets/`` beside ``report.html``.

No CDN: the page works offline from ``file://``.

The script filters samples by dataset, task and failing metric, and moves between the visible samples with
j/k or the arrow keys. It keeps its state on ``document.body.dataset`` (``current``, ``shown``) so a headless
browser test can read it.
"""

from __future__ import annotations

__all__ = ["CSS", "JS"]

CSS = """
:root { --fg:#1d2330; --muted:#6b7280; --line:#d9dde5; --bad:#b42318; --ok:#067647; --hi:#fff3b0; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg); margin: 0; }
header, main { padding: 0 24px; }
h1 { font-size: 20px; margin: 16px 0 4px; } h2 { font-size: 17px; margin: 24px 0 8px; }
h3 { font-size: 15px; margin: 0; }
.muted { color: var(--muted); }
.note { background: #fef0c7; padding: 6px 10px; border-radius: 4px; margin: 6px 0; }
table { border-collapse: collapse; margin: 6px 0 12px; }
th, td { border: 1px solid var(--line); padding: 3px 7px; text-align: right; vertical-align: top; }
th:first-child, td:first-child, td.l, th.l { text-align: left; }
th { background: #f3f4f6; }
img#ablation { display: block; max-width: 100%; height: auto; }
td.bad, span.bad { color: var(--bad); font-weight: 600; } td.ok, span.ok { color: var(--ok); }
#filters { position: sticky; top: 0; background: #fff; z-index: 5; border-bottom: 1px solid var(--line);
  padding: 8px 24px; display: flex; gap: 14px; align-items: center; flex-wrap: wrap; }
#filters label { display: flex; gap: 4px; align-items: center; }
.sample { border: 1px solid var(--line); border-radius: 6px; margin: 14px 0; padding: 10px 14px; }
.sample.current { outline: 3px solid #2e90fa; }
.sample.hidden { display: none; }
.gallery { display: flex; gap: 10px; flex-wrap: wrap; margin: 8px 0; }
figure { margin: 0; text-align: center; font-size: 12px; }
figure img, .noimg { width: 160px; height: 160px; object-fit: contain; background: #111;
  border: 2px solid transparent; display: block; image-rendering: pixelated; }
.noimg { color: #eee; display: flex; align-items: center; justify-content: center; padding: 6px; }
figure.chosen img, figure.chosen .noimg { border-color: #2e90fa; }
figure.sel img { border-color: #067647; }
.cols > div { overflow-x: auto; min-width: 0; }
td.l { word-break: break-word; max-width: 420px; text-align: left; }
.cols { display: grid; grid-template-columns: minmax(0, 1.3fr) minmax(0, 1fr); gap: 14px; }
pre { background: #f8f9fb; border: 1px solid var(--line); padding: 8px; overflow: auto; max-height: 420px;
  font-size: 12px; margin: 4px 0; }
mark.diff { background: var(--hi); border-bottom: 2px solid #dc6803; }
details > summary { cursor: pointer; color: #344054; }
kbd { border: 1px solid var(--line); border-radius: 3px; padding: 0 4px; font-size: 12px; }
"""

JS = r"""
(function () {
  "use strict";
  var samples = Array.prototype.slice.call(document.querySelectorAll("section.sample"));
  var selects = {
    dataset: document.getElementById("f-dataset"),
    task: document.getElementById("f-task"),
    fail: document.getElementById("f-fail")
  };
  var counter = document.getElementById("shown");
  var current = -1;

  function visible() {
    return samples.filter(function (s) { return !s.classList.contains("hidden"); });
  }

  function matches(s) {
    var d = selects.dataset.value, t = selects.task.value, f = selects.fail.value;
    if (d && s.dataset.dataset !== d) { return false; }
    if (t && s.dataset.task !== t) { return false; }
    if (f) {
      var fails = (s.dataset.fail || "").split(" ");
      if (f === "any") { return fails[0] !== ""; }
      if (fails.indexOf(f) < 0) { return false; }
    }
    return true;
  }

  function applyFilters(scroll) {
    samples.forEach(function (s) { s.classList.toggle("hidden", !matches(s)); });
    var shown = visible().length;
    counter.textContent = shown + " of " + samples.length + " samples shown";
    document.body.dataset.shown = String(shown);
    var cur = samples[current];
    if (!cur || cur.classList.contains("hidden")) { focusAt(0, scroll); }
  }

  function focusAt(pos, scroll) {
    var vis = visible();
    samples.forEach(function (s) { s.classList.remove("current"); });
    if (vis.length === 0) { current = -1; document.body.dataset.current = ""; return; }
    pos = Math.max(0, Math.min(vis.length - 1, pos));
    var el = vis[pos];
    current = samples.indexOf(el);
    el.classList.add("current");
    document.body.dataset.current = el.id;
    if (scroll !== false) { el.scrollIntoView({ block: "start" }); }
  }

  function step(delta) {
    var vis = visible();
    var pos = vis.indexOf(samples[current]);
    focusAt(pos < 0 ? 0 : pos + delta);
  }

  Object.keys(selects).forEach(function (k) {
    selects[k].addEventListener("change", function () { applyFilters(true); });
  });
  document.addEventListener("keydown", function (ev) {
    var tag = (ev.target && ev.target.tagName) || "";
    if (tag === "INPUT" || tag === "SELECT" || tag === "TEXTAREA" || ev.ctrlKey || ev.metaKey || ev.altKey) {
      return;
    }
    if (ev.key === "j" || ev.key === "ArrowDown" || ev.key === "ArrowRight") { step(1); ev.preventDefault(); }
    else if (ev.key === "k" || ev.key === "ArrowUp" || ev.key === "ArrowLeft") {
      step(-1);
      ev.preventDefault();
    }
  });
  samples.forEach(function (s) {
    s.addEventListener("click", function () { focusAt(visible().indexOf(s), false); });
  });
  Array.prototype.forEach.call(document.querySelectorAll("[data-goto]"), function (a) {
    a.addEventListener("click", function (ev) {
      ev.preventDefault();
      selects.dataset.value = a.getAttribute("data-goto");
      applyFilters(false);
      focusAt(0);
    });
  });
  applyFilters(false);
})();
"""
