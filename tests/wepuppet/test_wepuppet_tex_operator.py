"""The `.tex` export operator's choice of image, and `.tex` files through the operators (import → export with
no change) coming back byte-identical: the sample texture and small textures from our writer in each format we
read (RGBA8888, RG88, R8, DXT1/3/5, LZ4 on and off, a sprite sheet, older containers, an embedded PNG)."""
from __future__ import annotations

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from skinbridge.core.png import encode_png  # noqa: E402
from skinbridge.io_wepuppet.texture import tex  # noqa: E402

from support.bytes_compare import assert_same_bytes  # noqa: E402
from support.wepuppet import grey_picture  # noqa: E402  (grey blocks R8 and RG88 hold whole)

pytestmark = pytest.mark.blender

FIF_PNG = 13  # FreeImage's number for PNG


def _dxt(fmt: int, lz4: bool) -> tex.Texture:
    """A 16×16 DXT texture of random blocks with its 8×8 and 4×4 mips (LZ4 where it shrinks them)."""
    rng = np.random.default_rng(fmt)
    size = 8 if fmt == tex.FORMAT_DXT1 else 16
    mips = []
    for side in (16, 8, 4):
        raw = rng.integers(0, 4, ((side // 4) ** 2, size), dtype=np.uint8).tobytes()  # few values: LZ4 helps
        packed = tex.lz4_compress(raw) if lz4 else raw
        mips.append(tex.Mip(side, side, packed, int(lz4), len(raw)))
    assert not lz4 or len(mips[0].data) < mips[0].decompressed_size
    return tex.Texture(fmt, 2, 16, 16, 16, 16, 0, "TEXB0003", -1, images=[mips])


def _sprite() -> tex.Texture:
    t = tex.from_rgba(grey_picture(16, 16), levels=2, lz4=True, flags=tex.FLAG_SPRITE | 2)
    t.sprite_tag, t.sprite_size = "TEXS0003", (8, 8)
    t.frames = [tex.Frame(0, np.float32(0.1), (0.0, 0.0, 8.0, 0.0, 0.0, 8.0)),
                tex.Frame(0, np.float32(0.25), (8.0, 0.0, 8.0, 0.0, 0.0, 8.0))]
    return t


def _padded() -> tex.Texture:
    t = tex.from_rgba(grey_picture(16, 16), levels=1, fmt=tex.FORMAT_R8)
    t.image_width, t.image_height = 14, 11
    return t


def _container(name: str) -> tex.Texture:
    t = tex.from_rgba(grey_picture(16, 24), lz4=name != "TEXB0001")
    t.container = name
    return t


def _embedded_png() -> tex.Texture:
    t = tex.from_rgba(np.zeros((8, 8, 4), np.uint8), levels=1)
    t.image_format, t.images[0][0].data = FIF_PNG, encode_png(grey_picture(8, 8), level=1)
    return t


TEXTURES = {
    **{f"{tex.FORMAT_NAMES[f]}_lz4_{lz4}": (lambda f=f, lz4=lz4: tex.from_rgba(grey_picture(32, 48), lz4=lz4, fmt=f))
       for f in tex.ENCODED_FORMATS for lz4 in (False, True)},
    **{f"{tex.FORMAT_NAMES[f]}_lz4_{lz4}": (lambda f=f, lz4=lz4: _dxt(f, lz4))
       for f in (tex.FORMAT_DXT1, tex.FORMAT_DXT3, tex.FORMAT_DXT5) for lz4 in (False, True)},
    "sprite_sheet": _sprite,
    "padded_R8": _padded,
    **{name: (lambda name=name: _container(name)) for name in ("TEXB0001", "TEXB0002", "TEXB0004")},
    "embedded_png": _embedded_png,
}


def _import(path) -> None:
    assert bpy.ops.import_scene.skinbridge_wetex(filepath=str(path)) == {"FINISHED"}


def _export(path, **options) -> None:
    assert bpy.ops.export_scene.skinbridge_wetex(filepath=str(path), **options) == {"FINISHED"}


def test_sample_texture_comes_back_byte_identical_through_the_operators(clean_scene, testdata, tmp_path):
    source = testdata / "wepuppet" / "blacryu_goose_t.tex"
    _import(source)
    out = tmp_path / "goose.tex"
    _export(out)
    assert_same_bytes(out.read_bytes(), source.read_bytes(), tex.read)


@pytest.mark.parametrize("name", sorted(TEXTURES))
def test_our_textures_come_back_byte_identical_through_the_operators(clean_scene, tmp_path, name):
    data = tex.write(TEXTURES[name]())
    assert_same_bytes(tex.write(tex.read(data)), data, tex.read)  # the file is what we meant to make
    source = tmp_path / f"{name}.tex"
    source.write_bytes(data)
    _import(source)
    out = tmp_path / "out" / f"{name}.tex"
    out.parent.mkdir()
    _export(out)
    assert_same_bytes(out.read_bytes(), data, tex.read)


def _two_textures(tmp_path) -> tuple:
    first = tex.write(tex.from_rgba(grey_picture(8, 8), fmt=tex.FORMAT_R8))
    second = tex.write(tex.from_rgba(grey_picture(16, 8), lz4=True))
    for name, data in (("first.tex", first), ("second.tex", second)):
        (tmp_path / name).write_bytes(data)
        _import(tmp_path / name)
    return first, second


def test_several_textures_and_none_chosen_are_refused_naming_them(clean_scene, tmp_path):
    _two_textures(tmp_path)
    out = tmp_path / "out.tex"
    with pytest.raises(RuntimeError, match="2 images could be exported") as e:
        bpy.ops.export_scene.skinbridge_wetex(filepath=str(out))
    assert "'first'" in str(e.value) and "'second'" in str(e.value)
    assert not out.exists()


def test_the_image_property_chooses_among_several(clean_scene, tmp_path):
    first, second = _two_textures(tmp_path)
    out = tmp_path / "out.tex"
    _export(out, image="second")
    assert_same_bytes(out.read_bytes(), second, tex.read)
    _export(out, image="first")
    assert_same_bytes(out.read_bytes(), first, tex.read)
    with pytest.raises(RuntimeError, match="no image named 'third'.*'first', 'second'"):
        bpy.ops.export_scene.skinbridge_wetex(filepath=str(out), image="third")


def test_the_active_materials_image_wins_over_the_imported_textures(clean_scene, tmp_path):
    _, second = _two_textures(tmp_path)
    me = bpy.data.meshes.new("plane")
    ob = bpy.data.objects.new("plane", me)
    bpy.context.scene.collection.objects.link(ob)
    mat = bpy.data.materials.new("m")
    if mat.node_tree is None:  # Blender 5 gives every new material a node tree
        mat.use_nodes = True
    mat.node_tree.nodes.new("ShaderNodeTexImage").image = bpy.data.images["second"]
    me.materials.append(mat)
    bpy.context.view_layer.objects.active = ob
    out = tmp_path / "out.tex"
    _export(out)
    assert_same_bytes(out.read_bytes(), second, tex.read)


def test_an_only_image_of_no_tex_is_exported_and_no_image_is_refused(clean_scene, tmp_path):
    out = tmp_path / "out.tex"
    with pytest.raises(RuntimeError, match="no image to export"):
        bpy.ops.export_scene.skinbridge_wetex(filepath=str(out))
    img = bpy.data.images.new("painted", 8, 4, alpha=True)
    img.pixels[:] = np.tile([1.0, 0.0, 0.0, 1.0], 32)
    _export(out)
    back = tex.read(out.read_bytes())
    assert (back.image_width, back.image_height) == (8, 4)
    assert tuple(tex.image_pixels(back)[0, 0]) == (255, 0, 0, 255)
