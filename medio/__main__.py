"""Command line: ``python -m medio inspect PATH`` and ``python -m medio render PATH OUT.png [options]``."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from typing import Any

from medio.errors import MedioError
from medio.inspect import inspect
from medio.png import write_png
from medio.read import read
from medio.render import render


def _window(text: str) -> tuple[float, float]:
    try:
        center, width = (float(v) for v in text.split(","))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(
            f"--window expects CENTER,WIDTH (e.g. 40,400), got {text!r}"
        ) from exc
    return center, width


def _series(text: str) -> str | int:
    return int(text) if text.isdigit() else text


def build_parser() -> argparse.ArgumentParser:
    """Return the ``python -m medio`` argument parser.

    Returns:
        The parser with ``inspect`` and ``render`` sub-commands.
    """
    parser = argparse.ArgumentParser(prog="python -m medio", description=__doc__)
    parser.add_argument("-v", "--verbose", action="store_true", help="log warnings and info to stderr")
    sub = parser.add_subparsers(dest="command", required=True)
    p_inspect = sub.add_parser("inspect", help="print a JSON summary of a file or DICOM folder")
    p_inspect.add_argument("path", nargs="+", help="one or more paths (several print a JSON list)")
    p_render = sub.add_parser("render", help="render a file to an 8-bit PNG and print what was done")
    p_render.add_argument("path")
    p_render.add_argument("out", help="output PNG")
    p_render.add_argument(
        "--slice", type=int, default=None, help="slice index along --axis (default: middle)"
    )
    p_render.add_argument("--axis", type=int, default=0, help="slicing axis of a volume (0 = Z)")
    p_render.add_argument("--frame", type=int, default=None, help="frame of a video / multi-frame image")
    p_render.add_argument(
        "--key", default=None, help="container key: npz member, HDF5 path, MAT variable, column"
    )
    p_render.add_argument(
        "--index", type=int, default=None, help="item along axis 0 of a container, or table row"
    )
    p_render.add_argument(
        "--series", type=_series, default=None, help="DICOM series UID (or index) in a folder"
    )
    p_render.add_argument("--volume", type=int, default=None, help="volume of a 4D NIfTI (default 0)")
    p_render.add_argument(
        "--window", type=_window, default=None, help="CENTER,WIDTH overriding header windows"
    )
    p_render.add_argument("--label", action="store_true", help="render as a label map (ids unchanged)")
    return parser


def _render(args: argparse.Namespace) -> dict[str, Any]:
    image = read(
        args.path, key=args.key, index=args.index, frame=args.frame, series=args.series, volume=args.volume
    )
    shown = render(
        image, slice_index=args.slice, axis=args.axis, frame=args.frame, window=args.window, label=args.label
    )
    write_png(shown.pixels, args.out)
    return {
        **shown.info,
        "output": str(args.out),
        "modality": image.meta.modality,
        "format": image.meta.format,
    }


def main(argv: list[str] | None = None) -> int:
    """Run the CLI.

    Args:
        argv: Arguments (default ``sys.argv[1:]``).

    Returns:
        0 on success, 2 on a read/render error (one line on stderr, no traceback).
    """
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.ERROR, format="%(levelname)s %(message)s"
    )
    if not args.verbose:
        # pydicom logs decoder failures with tracebacks; our one-line error already says what happened.
        logging.getLogger("pydicom").setLevel(logging.CRITICAL)
    try:
        if args.command == "inspect":
            summaries = [inspect(p) for p in args.path]
            result: Any = summaries[0] if len(summaries) == 1 else summaries
        else:
            result = _render(args)
    except MedioError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except (IndexError, ValueError) as exc:
        print(f"error: {args.path}: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    try:
        raise SystemExit(main())
    except BrokenPipeError:  # the reader went away (`... | head`): stop quietly, as Unix tools do
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        raise SystemExit(1) from None
