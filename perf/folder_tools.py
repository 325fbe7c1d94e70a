"""What the folder tools cost on large trees: ms per call of ``list_dir``, ``tree``, ``find``, ``grep`` and
``table_head``, called exactly as the agent dispatches them (`ToolBox.run` with the model's JSON).

Builds, in a temporary folder, a flat tree (N empty images and one label table sorting last) and a nested
one (F folders of N/F empty DICOM slices and the table in a last folder), then times each call (median of
``--repeats``, after one warm-up call, so the page cache is warm as it is in a running agent) and prints the
size of each answer in characters, which is what the model pays for.

    PYTHONPATH=. python perf/folder_tools.py [--files 10000] [--folders 100] [--repeats 5]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

from agents.base import Limits, ManifestEntry, Task
from agents.tools.sandbox import Sandbox
from agents.tools.tools import ToolBox


def _touch(folder: Path, names: list[str]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        os.close(os.open(folder / name, os.O_CREAT | os.O_WRONLY, 0o644))


def _labels(n: int) -> str:
    return "image,label\n" + "".join(f"img_{i:06d}.png,{i % 5}\n" for i in range(n))


def _box(root: Path, out: Path) -> ToolBox:
    task = Task(
        root=root,
        name=root.name,
        entries=(ManifestEntry(0, "data/x"),),
        out_dir=out,
        limits=Limits(max_turns=1, max_tool_calls=1, max_tokens=1),
    )
    return ToolBox(task, Sandbox(root, task.output_dir), vision=False)


def _time(box: ToolBox, name: str, args: dict[str, object], repeats: int) -> tuple[float, int, str | None]:
    raw = json.dumps(args)
    result = box.run(name, raw)  # warm-up: the page cache and the imports, as in a running agent
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        result = box.run(name, raw)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000, len(result.text), result.error


def main() -> None:
    """Build both trees and print one row per call."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--folders", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="folder-tools-") as tmp:
        flat = Path(tmp) / "flat"
        _touch(flat / "data", [f"img_{i:06d}.png" for i in range(args.files)])
        (flat / "data" / "zz_labels.csv").write_text(_labels(args.files), encoding="utf-8")
        nested = Path(tmp) / "nested"
        per = max(1, args.files // args.folders)
        for f in range(args.folders):
            _touch(nested / "data" / f"P{f:04d}", [f"slice_{s:04d}.dcm" for s in range(per)])
        (nested / "data" / "zz_meta").mkdir()
        (nested / "data" / "zz_meta" / "labels.csv").write_text(_labels(args.files), encoding="utf-8")
        calls: list[tuple[str, Path, str, dict[str, object]]] = [
            ("flat", flat, "list_dir", {"path": "data"}),
            ("flat", flat, "list_dir", {"path": "data", "offset": args.files - 50}),
            ("flat", flat, "tree", {}),
            ("flat", flat, "find", {"pattern": "*label*"}),
            ("flat", flat, "grep", {"pattern": "img_0000(1|2)"}),
            ("flat", flat, "table_head", {"path": "data/zz_labels.csv"}),
            ("nested", nested, "list_dir", {"path": "data"}),
            ("nested", nested, "tree", {}),
            ("nested", nested, "find", {"pattern": "*label*"}),
            ("nested", nested, "find", {"pattern": "P00*/slice_000*"}),
            ("nested", nested, "grep", {"pattern": "img_0000(1|2)"}),
        ]
        print(f"{args.files:,} files; nested: {args.folders} folders x {per} files; median of {args.repeats}")
        print("| tree | call | ms | answer chars | error |")
        print("|---|---|---|---|---|")
        for label, root, name, call_args in calls:
            ms, chars, error = _time(_box(root, Path(tmp) / "out"), name, call_args, args.repeats)
            shown = ", ".join(f"{k}={v!r}" for k, v in call_args.items())
            print(f"| {label} | {name}({shown}) | {ms:.1f} | {chars:,} | {error or ''} |", flush=True)


if __name__ == "__main__":
    main()
