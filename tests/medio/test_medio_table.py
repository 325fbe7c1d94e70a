"""Tables (parquet, CSV, TSV): columns, first rows, and images stored as bytes in a column."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

import medio


def _png_bytes(value: int) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(np.full((5, 6), value, np.uint8)).save(buf, format="PNG")
    return buf.getvalue()


def _parquet(path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table(
        {
            "id": [0, 1, 2],
            "label": ["benign", "malignant", "benign"],
            "image": [_png_bytes(10), _png_bytes(120), _png_bytes(240)],
        }
    )
    pq.write_table(table, path, row_group_size=2)  # row 2 lives in the second row group


def test_parquet_image_bytes_read_by_row_and_column(tmp_path):
    path = tmp_path / "train.parquet"
    _parquet(path)
    image = medio.read(path, key="image", index=2)
    assert image.array.shape == (5, 6) and int(image.array[0, 0]) == 240
    assert image.meta.header["row"] == 2 and image.meta.header["column"] == "image"
    auto = medio.read(path, index=1)  # the image column is found without a key
    assert int(auto.array[0, 0]) == 120 and auto.meta.header["column"] == "image"
    shown = medio.render(image)
    assert shown.info["method"] == "passthrough_uint8" and shown.pixels[0, 0] == 240


def test_parquet_errors_name_the_columns(tmp_path):
    path = tmp_path / "train.parquet"
    _parquet(path)
    with pytest.raises(medio.KeyNotFound, match="not found"):
        medio.read(path, key="pixels")
    with pytest.raises(medio.KeyNotFound, match="row 9 out of range"):
        medio.read(path, key="image", index=9)
    with pytest.raises(medio.UnsupportedFormat, match="holds no encoded image"):
        medio.read(path, key="label", index=0)


def test_inspect_table_shows_columns_and_first_rows(tmp_path):
    path = tmp_path / "train.parquet"
    _parquet(path)
    summary = medio.inspect(path)
    assert summary["columns"] == ["id", "label", "image"] and summary["n_rows"] == 3
    assert summary["head"][1]["label"] == "malignant"
    assert summary["head"][0]["image"].endswith("bytes>")


@pytest.mark.parametrize(("name", "sep"), [("labels.csv", ","), ("labels.tsv", "\t")])
def test_text_tables_summarised_and_base64_images_decoded(tmp_path, name, sep):
    import base64

    path = tmp_path / name
    rows = [f"{i}{sep}case_{i}{sep}{base64.b64encode(_png_bytes(50 * i)).decode()}" for i in range(6)]
    path.write_text(f"id{sep}name{sep}png\n" + "\n".join(rows) + "\n")
    summary = medio.inspect(path)
    assert summary["columns"] == ["id", "name", "png"] and len(summary["head"]) == 5
    image = medio.read(path, key="png", index=3)
    assert int(image.array[0, 0]) == 150
    assert medio.render(image).pixels.shape == (5, 6)


def test_csv_without_image_column_says_so(tmp_path):
    path = tmp_path / "plain.csv"
    path.write_text("a,b\n1,2\n")
    with pytest.raises(medio.KeyNotFound, match="no column holds image bytes"):
        medio.read(path)


def test_parquet_row_deep_inside_a_row_group_is_found(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "many.parquet"
    pq.write_table(
        pa.table({"i": list(range(100)), "img": [_png_bytes(i) for i in range(100)]}), path, row_group_size=50
    )
    assert int(medio.read(path, key="img", index=73).array[0, 0]) == 73
    assert int(medio.read(path, key="img", index=99).array[0, 0]) == 99
