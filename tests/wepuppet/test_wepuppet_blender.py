"""Wallpaper Engine puppets and models through Blender: import (counts, positions, UVs, normals, textures,
attachments, clips) and import → export → read back with the same records."""
from __future__ import annotations

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from skinbridge.blender import scene as bscene  # noqa: E402
from skinbridge.io_wepuppet.puppet import blender_io, convert, mdl  # noqa: E402
from skinbridge.io_wepuppet.texture import blender_io as texture_io, tex  # noqa: E402

from support import wepuppet as ws  # noqa: E402

pytestmark = pytest.mark.blender


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
        assert ws.close(_positions(ob.data), convert.METRES_PER_UNIT * np.stack(
            [v["position"][:, 0], -v["position"][:, 2], v["position"][:, 1]], axis=1).astype(np.float32))
        uv = _uvs(ob.data)
        assert np.array_equal(uv[:, 0], v["uv0"][:, 0]) and np.array_equal(uv[:, 1], np.float32(1) - v["uv0"][:, 1])
        assert bscene.json_prop(ob, blender_io.PROP)["materials"] == rec.materials
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
    assert act.name == "Animation 1" and bscene.json_prop(act, blender_io.PROP)["length"] == 30


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


def _evaluate_clip_in_blender(arm_ob, mesh_ob, act, clip: mdl.Clip, k: int) -> np.ndarray:
    from skinbridge.blender import action as baction
    from skinbridge.blender.mesh import evaluated_world_positions

    baction.assign(arm_ob, act)
    scene = bpy.context.scene
    frame = k * baction.fps_of(scene) / float(clip.fps)
    scene.frame_set(int(np.floor(frame)), subframe=float(frame - np.floor(frame)))
    return evaluated_world_positions(mesh_ob)


def _check_deformation(result, m: mdl.Model, tolerance_of_diagonal: float = 1e-4, every: int = 1,
                       reference: mdl.Model | None = None) -> None:
    from support.wepuppet import reference_deform, to_blender

    arm_ob = result.armature
    mesh_ob = next(o for o in result.objects if o.type == "MESH")
    actions = {bscene.json_prop(a, blender_io.PROP)["index"]: a for a in bpy.data.actions}
    rest = to_blender(m.meshes[0].vertices["position"])
    diag = float(np.linalg.norm(np.ptp(rest, axis=0)))
    for c, clip in enumerate(m.animations.clips):
        for k in range(0, clip.length + 1, every):
            ours = _evaluate_clip_in_blender(arm_ob, mesh_ob, actions[c], clip, k)
            ref = to_blender(reference_deform(reference or m, (reference or m).animations.clips[c], k))
            assert np.abs(ours - ref).max() <= tolerance_of_diagonal * diag, (clip.name, k)


@pytest.mark.slow
def test_hood_deforms_in_blender_like_the_reference_at_every_sample(clean_scene, testdata):
    path = testdata / "wepuppet" / "blacryu_d2r_Hood_puppet.mdl"
    m = mdl.read(path.read_bytes())
    result = blender_io.import_wepuppet(bpy.context, str(path))
    _check_deformation(result, m)


def test_built_puppet_exported_read_back_and_imported_deforms_like_the_reference(clean_scene, tmp_path):
    from skinbridge.blender import scene as bscene

    from skinbridge.blender import action as baction

    scene, _, built = ws.built_puppet()
    first = bscene.build_scene(bpy.context, scene, "built")
    act, _ = baction.build_action(first.armature, scene.animations[0], baction.fps_of(bpy.context.scene))
    act[blender_io.PROP] = '{"index": 0, "fps": 12.0, "length": 8}'
    baction.assign(first.armature, act)
    out = tmp_path / "built_puppet.mdl"
    blender_io.export_wepuppet(bpy.context, str(out))
    back = mdl.read(out.read_bytes())
    clip = back.animations.clips[0]
    assert back.meshes[0].format == mdl.FORMAT_NARROW and clip.length == 8 and float(clip.fps) == 12.0
    assert (np.ptp(np.asarray(clip.samples)[..., 3:6], axis=1) > 0.05).all()
    bpy.ops.wm.read_factory_settings(use_empty=True)
    result = blender_io.import_wepuppet(bpy.context, str(out))
    _check_deformation(result, back, reference=built)  # the matrices of the records the test built


def test_attachments_become_bone_parented_empties_and_the_wide_export_walks(clean_scene, tmp_path):
    scene, _, built = ws.built_puppet()
    attach = ws.rot("z", 0.5)
    attach[:3, 3] = (0.05, 0.02, 0.0)  # core units: 5 px, 2 px
    model, _ = convert.from_scene(scene, attachments=[("Hand", 1, attach)])
    path = tmp_path / "attached_puppet.mdl"
    path.write_bytes(convert.write_model(model))
    written = mdl.read(path.read_bytes())
    result = blender_io.import_wepuppet(bpy.context, str(path))
    empties = [ob for ob in result.objects if ob.type == "EMPTY"]
    assert [(e.name, e.parent_type, e.parent_bone) for e in empties] == [("Hand", "BONE", "b1")]
    result.armature.data.pose_position = "REST"  # the clip's first sample is not the bind pose
    bpy.context.view_layer.update()
    world = np.array(empties[0].matrix_world)
    result.armature.data.pose_position = "POSE"
    bind = convert.to_core_matrix(convert.world_binds(written.skeleton)[1], convert.METRES_PER_UNIT, True)
    assert np.abs(world - bind @ attach).max() < 1e-6
    out = tmp_path / "wide_puppet.mdl"
    blender_io.export_wepuppet(bpy.context, str(out), layout_format="WIDE")
    data = out.read_bytes()
    walked = ws.walk(data)
    assert walked["version"] == 23 and walked["sections"] == ["MDLS0001", "MDAT0001", "MDLA0001"]
    assert len(walked["meshes"][0]["vertices"]) == 12 and mdl.read(data).meshes[0].vertices.dtype.itemsize == 80
    assert walked["attachments"][0]["name"] == "Hand" and walked["attachments"][0]["bone"] == 1
    assert np.allclose(walked["attachments"][0]["matrix"], written.attachments[0].matrix, atol=1e-5)
    ws.assert_same_records(written, mdl.read(data))


def test_operators_import_export_and_texture(clean_scene, testdata, tmp_path):
    path = testdata / "wepuppet" / "blacryu_goose_t_puppet.mdl"
    assert bpy.ops.import_scene.skinbridge_wepuppet(filepath=str(path)) == {"FINISHED"}
    assert len([o for o in bpy.data.objects if o.type == "ARMATURE"]) == 1
    out = tmp_path / "goose_puppet.mdl"
    assert bpy.ops.export_scene.skinbridge_wepuppet(filepath=str(out), project_files=True) == {"FINISHED"}
    assert mdl.read(out.read_bytes()).meshes[0].materials == ["materials/goose.json"]
    written = tex.read((tmp_path / "materials" / "goose.tex").read_bytes())
    assert (written.image_width, written.image_height) == (150, 150)
    assert bpy.ops.import_scene.skinbridge_wetex(filepath=str(testdata / "wepuppet" / "blacryu_goose_t.tex")) == \
        {"FINISHED"}
    img = bpy.data.images["blacryu_goose_t"]
    assert tuple(img.size) == (150, 150) and img.packed_file is not None
    px = np.empty(150 * 150 * 4, np.float32)
    img.pixels.foreach_get(px)
    ours = tex.mip_pixels(tex.read((testdata / "wepuppet" / "blacryu_goose_t.tex").read_bytes()))
    assert np.array_equal(np.round(px.reshape(150, 150, 4)[::-1] * 255).astype(np.uint8), ours)


def test_static_model_exports_back_with_its_meshes_materials_and_normals(clean_scene, testdata, tmp_path):
    path = testdata / "wepuppet" / "blacryu_Arwing_static.mdl"
    m = mdl.read(path.read_bytes())
    blender_io.import_wepuppet(bpy.context, str(path))
    out = tmp_path / "arwing.mdl"
    blender_io.export_wepuppet(bpy.context, str(out))
    back = mdl.read(out.read_bytes())
    assert back.tag == "MDLV0013" and len(back.meshes) == 15 and len(out.read_bytes()) == 1 << 20
    by_material = {tuple(x.materials): x for x in back.meshes}
    for rec in m.meshes:
        got = by_material[tuple(rec.materials)]
        assert got.format == mdl.FORMAT_STATIC and len(got.vertices) == len(rec.vertices)
        assert np.array_equal(np.asarray(got.indices, np.int64), np.asarray(rec.indices, np.int64))
        assert ws.close(got.vertices["position"], rec.vertices["position"])
        n = np.asarray(rec.vertices["normal"], np.float64)
        assert np.abs(got.vertices["normal"] - n / np.linalg.norm(n, axis=1, keepdims=True)).max() < 1e-5


def test_texture_whose_mips_are_image_files_loads_as_a_packed_image(clean_scene, tmp_path):
    from skinbridge.core.png import encode_png

    rgba = np.zeros((6, 10, 4), np.uint8)
    rgba[..., 0] = np.arange(10) * 25
    rgba[..., 3] = 255
    png = encode_png(rgba)
    t = tex.Texture(tex.FORMAT_RGBA8888, 0, 16, 8, 10, 6, 0, "TEXB0003", 13,  # FreeImage's PNG
                    images=[[tex.Mip(10, 6, png, 0, len(png))]])
    path = tmp_path / "as_png.tex"
    path.write_bytes(tex.write(t))
    img, warnings = texture_io.import_texture(bpy.context, str(path))
    assert not warnings and tuple(img.size) == (10, 6) and img.packed_file is not None
    px = np.empty(10 * 6 * 4, np.float32)
    img.pixels.foreach_get(px)
    assert np.array_equal(np.round(px.reshape(6, 10, 4)[::-1] * 255).astype(np.uint8), rgba)


def test_code_built_wave_puppet_project_imports_with_its_texture_and_deforms_right(clean_scene, tmp_path):
    import json

    from skinbridge.io_wepuppet.puppet import sample

    model, texture = sample.wave_puppet()
    (tmp_path / "models").mkdir()
    (tmp_path / "materials").mkdir()
    (tmp_path / "models" / "wave_puppet.mdl").write_bytes(convert.write_model(model))
    (tmp_path / "materials" / "wave.tex").write_bytes(tex.write(texture))
    (tmp_path / "materials" / "wave.json").write_text(json.dumps({"passes": [{"textures": ["wave"]}]}))
    result = blender_io.import_wepuppet(bpy.context, str(tmp_path / "models" / "wave_puppet.mdl"))
    assert not result.warnings
    ob = next(o for o in result.objects if o.type == "MESH")
    images = [n.image for n in ob.data.materials[0].node_tree.nodes if n.type == "TEX_IMAGE"]
    assert tuple(images[0].size) == (256, 128)
    _check_deformation(result, mdl.read((tmp_path / "models" / "wave_puppet.mdl").read_bytes()), every=4)


@pytest.mark.parametrize("image_format,data,reason", [
    (tex.FIF_GIF, b"GIF89a\x04\x00\x04\x00", "screen flags: needs 1 bytes, 0 left"),  # a GIF cut short
    (13, b"\x89PNG\r\n\x1a\n" + b"\x00" * 8, "not one Blender reads")])  # a PNG cut short loads as 0×0
def test_texture_operator_refuses_an_image_blender_cannot_read(clean_scene, tmp_path, image_format, data, reason):
    t = tex.from_rgba(np.zeros((4, 4, 4), np.uint8), levels=1)
    t.image_format, t.images[0][0].data = image_format, data
    path = tmp_path / "anim.tex"
    path.write_bytes(tex.write(t))
    images = set(bpy.data.images)
    with pytest.raises(RuntimeError, match=reason) as e:
        bpy.ops.import_scene.skinbridge_wetex(filepath=str(path))
    assert len(str(e.value).strip().splitlines()) == 1
    assert set(bpy.data.images) == images
