"""Wallpaper Engine puppets and models through Blender: import (counts, positions, UVs, normals, textures,
attachments, clips) and import → export → read back with the same records."""
from __future__ import annotations

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from skinbridge.io_wepuppet import blender_io, convert, mdl  # noqa: E402

import wepuppet_support as ws  # noqa: E402


def _meshes():
    return sorted([ob for ob in bpy.data.objects if ob.type == "MESH"], key=lambda o: o.name)


def _uvs(me) -> np.ndarray:
    corner = np.empty(len(me.loops), np.int32)
    me.attributes[".corner_vert"].data.foreach_get("value", corner)
    uv = np.empty(2 * len(me.loops), np.float32)
    me.uv_layers[0].uv.foreach_get("vector", uv)
    out = np.full((len(me.vertices), 2), np.nan, np.float32)
    out[corner] = uv.reshape(-1, 2)
    return out


def _positions(me) -> np.ndarray:
    p = np.empty(3 * len(me.vertices), np.float32)
    me.attributes["position"].data.foreach_get("vector", p)
    return p.reshape(-1, 3)


@pytest.mark.parametrize("name,verts,tris,objects", [
    ("blacryu_d2r_Wanderer_4096_DXT5_puppet.mdl", 446, 762, 1),
    ("blacryu_Arwing_static.mdl", 467, 178, 15),
    ("blacryu_ps2_cone_low_static_v4.mdl", 20673, 32256, 1)])
def test_static_and_unskinned_models_import(clean_scene, testdata, name, verts, tris, objects):
    path = testdata / "wepuppet" / name
    m = mdl.read(path.read_bytes())
    result = blender_io.import_wepuppet(bpy.context, str(path))
    obs = [ob for ob in result.objects if ob.type == "MESH"]
    assert len(obs) == objects
    assert sum(len(ob.data.vertices) for ob in obs) == verts
    assert sum(len(ob.data.polygons) for ob in obs) == tris
    for ob, rec in zip(obs, m.meshes):
        v = rec.vertices
        assert ws.close(_positions(ob.data), convert.DEFAULT_SCALE * np.stack(
            [v["position"][:, 0], -v["position"][:, 2], v["position"][:, 1]], axis=1).astype(np.float32))
        uv = _uvs(ob.data)
        assert np.array_equal(uv[:, 0], v["uv0"][:, 0]) and np.array_equal(uv[:, 1], np.float32(1) - v["uv0"][:, 1])
        assert blender_io._json_prop(ob)["materials"] == rec.materials
        if "normal" in v.dtype.names:
            cn = np.empty(3 * len(ob.data.loops), np.float32)
            ob.data.attributes["custom_normal"].data.foreach_get("vector", cn)
            corner = np.empty(len(ob.data.loops), np.int32)
            ob.data.attributes[".corner_vert"].data.foreach_get("value", corner)
            want = np.stack([v["normal"][:, 0], -v["normal"][:, 2], v["normal"][:, 1]], axis=1)[corner]
            assert np.abs(cn.reshape(-1, 3) - want).max() <= 1e-5


def test_goose_imports_with_its_texture_and_image_plane_uvs(clean_scene, testdata):
    path = testdata / "wepuppet" / "blacryu_goose_t_puppet.mdl"
    m = mdl.read(path.read_bytes())
    result = blender_io.import_wepuppet(bpy.context, str(path))
    ob = next(o for o in result.objects if o.type == "MESH")
    pos = np.asarray(m.meshes[0].vertices["position"], np.float64)
    uv = _uvs(ob.data)
    assert np.abs(uv - np.stack([(pos[:, 0] + 75) / 150, (pos[:, 1] + 75) / 150], axis=1)).max() < 1e-4
    images = [n.image for n in ob.data.materials[0].node_tree.nodes if n.type == "TEX_IMAGE"]
    assert images and tuple(images[0].size) == (150, 150)
    assert len(result.armature.data.bones) == 24
    act = result.armature.animation_data.action
    assert act.name == "Animation 1" and blender_io._json_prop(act)["length"] == 30


@pytest.mark.parametrize("name", ["blacryu_goose_t_puppet.mdl", "blacryu_d2r_Hood_puppet.mdl"])
def test_puppets_import_and_export_with_the_same_records(clean_scene, testdata, tmp_path, name):
    path = testdata / "wepuppet" / name
    m = mdl.read(path.read_bytes())
    blender_io.import_wepuppet(bpy.context, str(path))
    out = tmp_path / name
    warnings = blender_io.export_wepuppet(bpy.context, str(out))
    data = out.read_bytes()
    assert len(data) == 1 << 20, warnings
    back = mdl.read(data)
    assert back.tag == m.tag and [s.tag for s in back.sections] == [s.tag for s in m.sections]
    ws.assert_same_records(m, back)
    if name.startswith("blacryu_d2r_Hood"):
        assert all(b.name == "" for b in back.skeleton.bones)
