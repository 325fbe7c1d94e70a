"""Videos (``.avi``, ``.mp4`` ...) via PyAV: frame count, fps, and frame k without decoding the whole file."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from medio._axes import check_size
from medio.errors import CorruptFile, KeyNotFound, UnsupportedFormat
from medio.types import MedImage, Meta


def _open(path: Path) -> Any:
    import av

    try:
        container = av.open(str(path))
    except (av.FFmpegError, OSError, ValueError) as exc:
        raise CorruptFile(path, f"cannot open video ({exc})") from exc
    if not container.streams.video:
        container.close()
        raise UnsupportedFormat(path, "the container has no video stream")
    return container


def _rate(stream: Any) -> float | None:
    rate = stream.average_rate or stream.guessed_rate or stream.base_rate
    return float(rate) if rate else None


def _count_frames(container: Any, stream: Any) -> int:
    """Frame count from the header, else by demuxing packets (no decoding)."""
    if stream.frames:
        return int(stream.frames)
    count = sum(1 for packet in container.demux(stream) if packet.size)
    container.seek(0)
    return count


def _frame_number(frame: Any, stream: Any, fps: float | None) -> int | None:
    if frame.pts is None or not fps or stream.time_base is None:
        return None
    start = stream.start_time or 0
    return round(float((frame.pts - start) * stream.time_base) * fps)


def _decode_one(path: Path, container: Any, stream: Any, k: int, fps: float | None) -> Any:
    """Seek to the key frame before ``k`` and decode forward; fall back to decoding from the start."""
    if k > 0 and fps and stream.time_base:
        target = int(Fraction(k) / Fraction(fps).limit_denominator(100000) / stream.time_base) + (
            stream.start_time or 0
        )
        try:
            container.seek(target, stream=stream, backward=True, any_frame=False)
            for frame in container.decode(stream):
                number = _frame_number(frame, stream, fps)
                if number is None or number > k:
                    break
                if number == k:
                    return frame
        except Exception:
            pass
        container.seek(0)
    for i, frame in enumerate(container.decode(stream)):
        if i == k:
            return frame
    raise KeyNotFound(path, f"frame {k} not found: the stream ended earlier")


def read_video(path: str | Path, *, frame: int | None = None) -> MedImage:
    """Read one frame (``frame=k``) or every frame of a video as RGB.

    Args:
        path: The file.
        frame: Frame index (0-based); ``None`` decodes all frames (bounded by medio's memory cap).

    Returns:
        ``(T, H, W, 3)`` uint8 (``T = 1`` when ``frame`` is given); ``meta.n_frames``, ``meta.fps``,
        ``meta.frame_index``.

    Raises:
        CorruptFile: Unreadable container or stream.
        KeyNotFound: ``frame`` out of range.
        ImageTooLarge: Decoding every frame would exceed the memory cap.
    """
    import av

    path = Path(path)
    container = _open(path)
    try:
        stream = container.streams.video[0]
        fps = _rate(stream)
        n_frames = _count_frames(container, stream)
        if frame is not None and not 0 <= frame < n_frames:
            raise KeyNotFound(path, f"frame {frame} out of range: the video has {n_frames} frame(s)")
        if frame is not None:
            frames = [_decode_one(path, container, stream, frame, fps).to_ndarray(format="rgb24")]
        else:
            check_size(path, (n_frames, stream.height, stream.width, 3), "uint8")
            frames = [f.to_ndarray(format="rgb24") for f in container.decode(stream)]
        # Read before closing: PyAV refuses every container property once it is closed.
        header = {"codec": stream.codec_context.name, "duration_s": _duration(container, stream)}
    except av.FFmpegError as exc:
        raise CorruptFile(path, f"cannot decode video ({exc})") from exc
    finally:
        container.close()
    if not frames:
        raise CorruptFile(path, "the video stream holds no decodable frame")
    arr = np.stack(frames)
    meta = Meta(
        format="video",
        path=str(path),
        axes="TYXC",
        photometric="RGB",
        n_frames=n_frames,
        fps=fps,
        frame_index=frame,
        spacing=(1.0 / fps if fps else 1.0, 1.0, 1.0, 1.0),
        header=header,
    )
    return MedImage(arr, meta)


def _duration(container: Any, stream: Any) -> float | None:
    if stream.duration is not None and stream.time_base is not None:
        return float(stream.duration * stream.time_base)
    if container.duration is not None:
        return float(container.duration) / 1_000_000
    return None


def summarize_video(path: str | Path) -> dict[str, Any]:
    """For `medio.inspect`: ``n_frames`` (counted by demuxing when the header lacks them), ``fps``, ``size``
    ``[w, h]``, ``shape``, ``codec``, ``duration_s``, from the container header; ``CorruptFile`` when
    unreadable.
    """
    import av

    path = Path(path)
    container = _open(path)
    try:
        stream = container.streams.video[0]
        return {
            "n_frames": _count_frames(container, stream),
            "fps": _rate(stream),
            "size": [stream.width, stream.height],
            "shape": [stream.height, stream.width, 3],
            "codec": stream.codec_context.name,
            "duration_s": _duration(container, stream),
        }
    except av.FFmpegError as exc:
        raise CorruptFile(path, f"cannot read video header ({exc})") from exc
    finally:
        container.close()
