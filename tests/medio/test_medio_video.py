"""Videos via PyAV: frame count, fps, and one frame decoded on request."""

from __future__ import annotations

import numpy as np
import pytest

import medio


def _write_video(path, codec: str, n: int = 12, fps: int = 10):
    import av

    with av.open(str(path), "w") as container:
        stream = container.add_stream(codec, rate=fps)
        stream.width, stream.height = 32, 24
        stream.pix_fmt = "yuvj420p" if codec == "mjpeg" else "yuv420p"
        if codec == "mpeg4":
            stream.options = {"g": "4"}  # a key frame every 4 frames, so seeking has somewhere to land
        for i in range(n):
            arr = np.full((24, 32, 3), (20 * i) % 256, np.uint8)
            for packet in stream.encode(av.VideoFrame.from_ndarray(arr, format="rgb24")):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)


@pytest.mark.parametrize(("name", "codec"), [("clip.mp4", "mpeg4"), ("clip.avi", "mjpeg")])
def test_video_frame_k_count_and_fps(tmp_path, name, codec):
    path = tmp_path / name
    _write_video(path, codec)
    image = medio.read(path, frame=7)
    assert image.array.shape == (1, 24, 32, 3) and image.meta.axes == "TYXC"
    assert image.meta.n_frames == 12 and image.meta.fps == pytest.approx(10.0)
    assert abs(float(image.array.mean()) - 140) < 8  # frame 7 was filled with 20 * 7
    shown = medio.render(image)
    assert shown.info["frame"] == 7 and shown.pixels.shape == (24, 32, 3)
    summary = medio.inspect(path)
    assert summary["n_frames"] == 12 and summary["size"] == [32, 24]


def test_whole_video_render_defaults_to_the_middle_frame(tmp_path):
    path = tmp_path / "clip.avi"
    _write_video(path, "mjpeg", n=6)
    image = medio.read(path)
    assert image.array.shape[0] == 6
    shown = medio.render(image)
    assert shown.info["frame"] == 3
    assert medio.render(image, frame=5).info["frame"] == 5


def test_video_frame_out_of_range(tmp_path):
    path = tmp_path / "clip.mp4"
    _write_video(path, "mpeg4", n=3)
    with pytest.raises(medio.KeyNotFound, match="frame 3 out of range"):
        medio.read(path, frame=3)
