"""Wallpaper Engine mapping (records → core Scene) checked against matrices the test builds itself from the raw
MDLS / MDLA records by docs/wallpaper_engine.md §3: world bind = parent · column-major local bind; local(t) =
T(pos) · Rz·Ry·Rx · S(scale); v' = Σ w · world(t) · world_bind⁻¹ · v."""
from __future__ import annotations

import numpy as np
import pytest

from skinbridge.core.skinning import evaluate_animation, skin_mesh
from skinbridge.io_wepuppet.puppet import convert, mdl

from support.wepuppet import local_pose, mat16, reference_deform, to_blender

HOOD = "blacryu_d2r_Hood_puppet.mdl"
GOOSE = "blacryu_goose_t_puppet.mdl"


@pytest.mark.slow
def test_hood_every_sample_of_both_clips_matches_the_reference(testdata):
    m = mdl.read((testdata / "wepuppet" / HOOD).read_bytes())
    scene, warnings = convert.to_scene(m, "Hood", textures=False)
    assert not warnings
    mesh = scene.meshes[0]
    diag = float(np.linalg.norm(np.ptp(mesh.positions, axis=0)))
    for clip, anim in zip(m.animations.clips, scene.animations):
        assert len(anim.tracks) == 39 and clip.length + 1 == 40
        for k in range(clip.length + 1):
            ours = skin_mesh(mesh, scene.skeleton, evaluate_animation(scene.skeleton, anim, k / float(clip.fps)))
            ref = to_blender(reference_deform(m, clip, k))
            assert np.abs(ours - ref).max() <= 1e-4 * diag, (clip.name, k)
    right = m.animations.clips[0]
    assert right.name == "Wind Right"
    rest = np.asarray(m.meshes[0].vertices["position"], np.float64)
    moved = np.linalg.norm(reference_deform(m, right, 10) - rest, axis=1).max()
    assert abs(moved - 35.4) <= 0.5


def test_goose_clip_is_its_bind_pose_repeated(testdata):
    m = mdl.read((testdata / "wepuppet" / GOOSE).read_bytes())
    clip = m.animations.clips[0]
    s = np.asarray(clip.samples, np.float64)
    assert np.array_equal(s, np.broadcast_to(s[:, :1], s.shape))  # every track constant
    for i, b in enumerate(m.skeleton.bones):
        assert np.allclose(local_pose(s[i, 0]), mat16(b.matrix), atol=1e-4)
    rest = np.asarray(m.meshes[0].vertices["position"], np.float64)
    assert np.abs(reference_deform(m, clip, 17) - rest).max() < 1e-3


def test_static_and_unskinned_models_map_positions_uvs_and_normals(testdata):
    for name, verts, tris, meshes in (("blacryu_d2r_Wanderer_4096_DXT5_puppet.mdl", 446, 762, 1),
                                      ("blacryu_Arwing_static.mdl", 467, 178, 15),
                                      ("blacryu_ps2_cone_low_static_v4.mdl", 20673, 32256, 1)):
        m = mdl.read((testdata / "wepuppet" / name).read_bytes())
        scene, _ = convert.to_scene(m, name, textures=False)
        assert (scene.vertex_count, scene.triangle_count, len(scene.meshes)) == (verts, tris, meshes)
        for rec, cmesh in zip(m.meshes, scene.meshes):
            v = rec.vertices
            assert np.allclose(cmesh.positions, to_blender(v["position"]), atol=1e-7)
            assert np.array_equal(cmesh.uvs[0][1][:, 0], v["uv0"][:, 0])
            assert np.array_equal(cmesh.uvs[0][1][:, 1], np.float32(1) - v["uv0"][:, 1])
            if "normal" in v.dtype.names:
                assert np.allclose(cmesh.normals, to_blender(v["normal"], 1.0), atol=1e-7)
            assert cmesh.extras["we"]["materials"] == rec.materials


def test_texture_found_through_the_material_json_then_beside_the_file(testdata, tmp_path):
    goose_tex = (testdata / "wepuppet" / "blacryu_goose_t.tex").read_bytes()
    mdl_bytes = (testdata / "wepuppet" / GOOSE).read_bytes()
    (tmp_path / "models").mkdir()
    (tmp_path / "materials").mkdir()
    (tmp_path / "models" / "goose_t_puppet.mdl").write_bytes(mdl_bytes)
    (tmp_path / "materials" / "goose_t.json").write_text('{"passes":[{"textures":["deep/goose_t", "mask"]}]}')
    (tmp_path / "materials" / "deep").mkdir()
    (tmp_path / "materials" / "deep" / "goose_t.tex").write_bytes(goose_tex)
    found, why = convert.find_texture(str(tmp_path / "models" / "goose_t_puppet.mdl"), "materials/goose_t.json")
    assert found == str(tmp_path / "materials" / "deep" / "goose_t.tex") and why is None
    (tmp_path / "materials" / "goose_t.json").unlink()
    (tmp_path / "models" / "goose_t.tex").write_bytes(goose_tex)
    found, _ = convert.find_texture(str(tmp_path / "models" / "goose_t_puppet.mdl"), "materials/goose_t.json")
    assert found == str(tmp_path / "models" / "goose_t.tex")
    (tmp_path / "models" / "goose_t.tex").unlink()
    scene, warnings = convert.load(str(tmp_path / "models" / "goose_t_puppet.mdl"), mdl_bytes)
    assert scene.materials[0].base_color_texture is None and any("no texture found" in w for w in warnings)


def test_registry_names_both_specs_and_the_content_decides():
    from skinbridge import formats

    spec = formats.identify(b"MDLV0013\0" + bytes(60), "x.mdl")
    assert spec.name == "wepuppet" and spec.target == "wepuppet" and spec.folder_suffix == "_WE"
    assert formats.identify(b"TEXV0005\0TEXI0001\0", "x.tex").name == "wetex"
    for s in (formats.get("wepuppet"), formats.get("wetex")):
        for capability in s.capabilities:
            if capability not in ("blender_import", "export_target", "demo"):
                assert callable(s.get(capability))
