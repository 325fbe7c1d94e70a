"""Command line: ``medstrat inspect PATH`` and ``medstrat render PATH OUT.png [options]``.

Axes: one convention for both commands. ``inspect`` reports ``shape``/``axes`` in medio's canonical array
order (``(Z, H, W)`` for a volume, ``(H, W)`` for an image, colour last; the on-disk order, e.g. NIfTI's
``XYZT``, is in ``shape_on_disk``), and ``render --axis A`` counts in that same order: ``--axis 0`` slices
along Z (axial for a standard volume), 1 along H, 2 along W. Exit codes: 0 ok, 2 bad input (docs/cli.md).
"""

from __future__ import annotations

import argparse
import json
import logging
from pathlib import Path
from typing import Any

from core.cli_errors import CliError, OneLineParser, cli_main, existing_path
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
    """Return the ``medstrat`` argument parser.

    Returns:
        The parser with ``inspect`` and ``render`` sub-commands.
    """
    parser = OneLineParser(
        prog="medstrat", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
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
    p_render.add_argument(
        "--axis",
        type=int,
        default=0,
        help="slicing axis of a volume, in the order inspect's shape lists (0 = Z, 1 = H, 2 = W)",
    )
    p_render.add_argument("--frame", type=int, default=None, help="frame of a video / multi-frame image")
    p_render.add_argument(
        "--key",
        default=None,
        help="container key: npz member, HDF5 path, MAT variable path, column, CZI channel, ENVI band",
    )
    p_render.add_argument(
        "--index", type=int, default=None, help="item along axis 0 of a container, or table row"
    )
    p_render.add_argument(
        "--series", type=_series, default=None, help="DICOM series UID (or index) in a folder; CZI scene"
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
        # An SR is shown as the image it references: say which (medio.dicom_sr).
        **({"note": image.meta.header["read_note"]} if "read_note" in image.meta.header else {}),
    }


def _inspect(paths: list[str]) -> Any:
    for path in paths:
        existing_path("PATH", path)
    summaries = [inspect(p) for p in paths]
    failed = [s for s in summaries if s.get("error")]
    if len(paths) == 1 and failed:
        raise CliError(f"{paths[0]}: {failed[0]['error']}")
    return summaries[0] if len(summaries) == 1 else summaries


@cli_main("medstrat", expected=(IndexError, ValueError))
def main(argv: list[str] | None = None) -> int:
    """Run the CLI.

    Args:
        argv: Arguments (default ``sys.argv[1:]``).

    Returns:
        0 on success, 2 on a read/render error (one line on stderr, no traceback; docs/cli.md).
    """
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.ERROR, format="%(levelname)s %(message)s"
    )
    if not args.verbose:
        # pydicom logs decoder failures with tracebacks; our one-line error already says what happened.
        logging.getLogger("pydicom").setLevel(logging.CRITICAL)
    if args.command == "inspect":
        result = _inspect(args.path)
    else:
        existing_path("PATH", args.path)
        if Path(args.out).is_dir():
            raise CliError(f"OUT {args.out}: is a folder; expected a .png file path")
        try:
            result = _render(args)
        except (IndexError, ValueError) as exc:
            raise CliError(f"{args.path}: {exc}") from exc
    print(json.dumps(result, indent=2))
    failed = [s for s in result if s.get("error")] if isinstance(result, list) else []
    return 2 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
