"""Wallpaper Engine textures through Blender: a padded texture is cropped to its header's image size; an
unchanged texture is written from its own bytes; a changed one keeps its format (R8, RG88, RGBA8888), flags
and LZ4, and a format we cannot encode (DXT) becomes RGBA8888 with a warning; the project's crop offset is
written again. Small `.tex` files from our writer."""
from __future__ import annotations

import json

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from skinbridge.io_wepuppet.puppet import blender_io, convert  # noqa: E402
from skinbridge.io_wepuppet.texture import blender_io as texture_io, tex  # noqa: E402

from support.bytes_compare import assert_same_bytes  # noqa: E402
from support.wepuppet import grey_picture  # noqa: E402

pytestmark = pytest.mark.blender


def _write(tmp_path, name: str, t: tex.Texture) -> tuple:
    path = tmp_path / name
    path.write_bytes(tex.write(t))
    return path, path.read_bytes()


def _blender_rgba(img) -> np.ndarray:
    return texture_io.rgba_of(img)


def test_padded_texture_is_cropped_to_the_header_size(clean_scene, tmp_path):
    padded = grey_picture(8, 12)
    t = tex.from_rgba(padded, levels=1)
    t.image_width, t.image_height = 10, 6  # a 10×6 picture padded to 12×8
    path, _ = _write(tmp_path, "padded.tex", t)
    img, _ = texture_io.import_texture(bpy.context, str(path))
    assert tuple(img.size) == (10, 6)
    assert np.array_equal(_blender_rgba(img), padded[:6, :10])
    assert tex.image_pixels(tex.read(path.read_bytes())).shape == (6, 10, 4)


@pytest.mark.parametrize("fmt", [tex.FORMAT_R8, tex.FORMAT_RG88, tex.FORMAT_RGBA8888])
def test_texture_unchanged_is_written_from_its_bytes_and_changed_keeps_its_format(clean_scene, tmp_path, fmt):
    t = tex.from_rgba(grey_picture(64, 64), lz4=True, flags=3, fmt=fmt)
    assert t.images[0][0].lz4 == 1
    path, data = _write(tmp_path, "mask.tex", t)
    img, _ = texture_io.import_texture(bpy.context, str(path))
    out = tmp_path / "out.tex"
    assert texture_io.export_texture(img, str(out)) == []
    assert_same_bytes(out.read_bytes(), data, tex.read)
    px = np.array(img.pixels[:], np.float32)
    px[:4] = [1.0, 1.0, 1.0, 1.0]  # the bottom-left pixel (Blender rows run bottom up)
    img.pixels[:] = px
    assert texture_io.export_texture(img, str(out)) == []
    back = tex.read(out.read_bytes())
    assert (back.format, back.flags) == (fmt, 3)
    assert back.images[0][0].lz4 == 1
    assert len(out.read_bytes()) < 2 * len(data)
    assert tuple(tex.image_pixels(back)[63, 0]) == (255, 255, 255, 255)


def test_changed_dxt_texture_becomes_rgba8888_with_a_warning(clean_scene, tmp_path):
    block = bytes([255, 0, 0, 0, 0, 0, 0, 0]) + bytes([0x00, 0xF8, 0x1F, 0x00, 0, 0, 0, 0])  # alpha 255, red
    t = tex.Texture(tex.FORMAT_DXT5, 2, 4, 4, 4, 4, 0, "TEXB0003", -1, images=[[tex.Mip(4, 4, block, 0, 16)]])
    path, data = _write(tmp_path, "dxt.tex", t)
    img, _ = texture_io.import_texture(bpy.context, str(path))
    out = tmp_path / "out.tex"
    assert texture_io.export_texture(img, str(out)) == []
    assert out.read_bytes() == data
    img.pixels[:4] = [0.0, 0.0, 1.0, 1.0]
    warnings = texture_io.export_texture(img, str(out))
    assert len(warnings) == 1 and "DXT5" in warnings[0] and "RGBA8888" in warnings[0]
    back = tex.read(out.read_bytes())
    assert (back.format, back.flags) == (tex.FORMAT_RGBA8888, 2)


def test_project_texture_of_an_unchanged_puppet_is_its_own_file(clean_scene, testdata, tmp_path):
    folder = testdata / "wepuppet"
    blender_io.import_wepuppet(bpy.context, str(folder / "blacryu_goose_t_puppet.mdl"))
    written, _ = blender_io.export_target(bpy.context, str(tmp_path), "goose_t", None)
    out = tmp_path / "materials" / "goose_t.tex"
    assert str(out) in written
    assert_same_bytes(out.read_bytes(), (folder / "blacryu_goose_t.tex").read_bytes(), tex.read)
    assert convert.texture_png(str(out))[:4] == b"\x89PNG"


def test_the_crop_offset_of_the_project_model_json_is_written_again(clean_scene, testdata, tmp_path):
    src = tmp_path / "src" / "models"
    src.mkdir(parents=True)
    (src / "goose_puppet.mdl").write_bytes((testdata / "wepuppet" / "blacryu_goose_t_puppet.mdl").read_bytes())
    (src / "goose.json").write_text('{"autosize": true, "cropoffset": "233 241", "material": "materials/g.json"}')
    blender_io.import_wepuppet(bpy.context, str(src / "goose_puppet.mdl"))
    blender_io.export_target(bpy.context, str(tmp_path / "out"), "goose", None)
    doc = json.loads((tmp_path / "out" / "models" / "goose.json").read_text())
    assert doc["cropoffset"] == "233 241" and doc["puppet"] == "models/goose_puppet.mdl"
