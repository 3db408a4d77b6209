"""Wallpaper Engine export mapping (core Scene → records → bytes): the real puppets read back with the same
records, a wide MDLV0023 puppet walked field by field by the table in support/wepuppet.py (not the codec), and a
puppet built in code deforming like matrices built independently from its raw records."""
from __future__ import annotations

import numpy as np
import pytest

from skinbridge.core.skinning import evaluate_animation, skin_mesh
from skinbridge.io_wepuppet.puppet import convert, mdl

from support import wepuppet as ws
from support.wepuppet import reference_deform, to_blender


@pytest.mark.parametrize("name", ["blacryu_goose_t_puppet.mdl", "blacryu_d2r_Hood_puppet.mdl",
                                  "blacryu_d2r_Wanderer_4096_DXT5_puppet.mdl", "blacryu_Arwing_static.mdl"])
def test_real_models_through_the_core_scene_write_back_the_same_records(testdata, name):
    data = (testdata / "wepuppet" / name).read_bytes()
    m = mdl.read(data)
    scene, _ = convert.to_scene(m, "x", textures=False)
    out, warnings = convert.from_scene(scene)
    written = convert.write_model(out)
    assert not warnings and len(written) == len(data) == 1 << 20
    back = mdl.read(written)
    assert back.tag == m.tag and [s.tag for s in back.sections] == [s.tag for s in m.sections]
    ws.assert_same_records(m, back)
    assert [x.format for x in back.meshes] == [x.format for x in m.meshes]
    assert [x.materials for x in back.meshes] == [x.materials for x in m.meshes]


def test_wide_puppet_walks_field_by_field_and_reads_back_equal():
    scene, local, _ = ws.built_puppet()
    attachments = [("Attachment", 1, ws.rot("z", 0.5) @ np.diag([1.0, 1, 1, 1]))]
    model, warnings = convert.from_scene(scene, wide=True, attachments=attachments)
    data = convert.write_model(model)
    assert not warnings
    walked = ws.walk(data)
    assert walked["version"] == 23 and walked["end"] == len(data) and data[-1] == 0  # the end tag, no padding
    assert walked["sections"] == ["MDLS0001", "MDAT0001", "MDLA0001"]
    mesh = walked["meshes"][0]
    assert mesh["format"] == mdl.FORMAT_WIDE and len(mesh["vertices"]) == 12
    back = mdl.read(data)
    rec = back.meshes[0].vertices
    assert rec.dtype.itemsize == 80
    assert [v["position"] for v in mesh["vertices"]] == [tuple(p) for p in rec["position"].tolist()]
    assert [v["joints"] for v in mesh["vertices"]] == [tuple(j) for j in rec["joints"].tolist()]
    pos = np.array([v["position"] for v in mesh["vertices"]])
    assert np.allclose(mesh["bbox"], np.concatenate([pos.min(0), pos.max(0)]))
    for i, b in enumerate(walked["bones"]):
        assert np.allclose(convert.column_major(b["matrix"]), local[i], atol=1e-4)
    assert walked["bones"][0]["name"] == "" and walked["bones"][1]["props"] == '{"a":"1 0 0"}'
    assert walked["attachments"][0]["name"] == "Attachment" and walked["attachments"][0]["bone"] == 1
    clip = walked["clips"][0]
    assert (clip["id"], clip["name"], clip["length"], len(clip["tracks"])) == (77, "Wave", 8, 3)
    assert clip["events"] == [(2.0, '{"frame":2,"name":"tick"}')]
    # equal to the narrow write of the same scene, record for record
    narrow = mdl.read(convert.write_model(convert.from_scene(scene)[0]))
    ws.assert_same_records(narrow, back)


def test_built_puppet_written_and_read_back_deforms_like_independent_matrices():
    scene, _, built = ws.built_puppet()
    model, _ = convert.from_scene(scene)
    back = mdl.read(convert.write_model(model))
    assert back.tag == "MDLV0013" and back.meshes[0].format == mdl.FORMAT_NARROW
    again, _ = convert.to_scene(back, "again", textures=False)
    assert np.abs(np.asarray(back.animations.clips[0].samples) - built.animations.clips[0].samples).max() < 1e-4
    mesh = again.meshes[0]
    clip = back.animations.clips[0]
    e = np.asarray(clip.samples)[..., 3:6]
    assert (np.ptp(e, axis=1) > 0.05).all()  # every bone keyed on all three Euler axes
    assert (np.ptp(np.asarray(clip.samples)[..., 6:8], axis=1) > 0.01).all()  # non-uniform scale
    diag = float(np.linalg.norm(np.ptp(mesh.positions, axis=0)))
    for k in range(clip.length + 1):
        ours = skin_mesh(mesh, again.skeleton, evaluate_animation(again.skeleton, again.animations[0],
                                                                  k / float(clip.fps)))
        assert np.abs(ours - to_blender(reference_deform(built, built.animations.clips[0], k))).max() <= 1e-4 * diag


def test_hostile_shaped_v23_model_keeps_its_versions_and_tables_through_the_core_scene():
    """A model with MDLS0002 tables, MDLA0003 blocks, MDMP, MDLE and an unknown tag (the hostile suite's base)
    mapped and written back: same tags in the same order, the same raw tables and blocks."""
    from support.hostile import hostile_wepuppet

    data = hostile_wepuppet.build_model().bytes()
    m = mdl.read(data)
    scene, _ = convert.to_scene(m, "x", textures=False)
    out, warnings = convert.from_scene(scene)
    back = mdl.read(convert.write_model(out))
    assert [s.tag for s in back.sections] == [s.tag for s in m.sections]
    assert back.skeleton.tables == m.skeleton.tables and back.skeleton.version == 2
    assert back.animations.clips[0].blocks == m.animations.clips[0].blocks
    assert back.animations.clips[0].reference == m.animations.clips[0].reference
    assert back.section("ZZZZ0001") == m.section("ZZZZ0001")
    assert back.section("MDLE0002").tobytes() == m.section("MDLE0002").tobytes()
    ws.assert_same_records(m, back)


def test_export_refuses_what_wallpaper_engine_would_misread():
    from skinbridge.core.errors import ExportError

    scene, _, _ = ws.built_puppet()
    scene.meshes[0].weights[5] = (0.5, 0.2, 0, 0)
    with pytest.raises(ExportError, match="vertex 5: bone weights sum to 0.7"):
        convert.from_scene(scene)
    scene, _, _ = ws.built_puppet()
    scene.meshes[0].positions[3, 1] = np.nan
    with pytest.raises(ExportError, match="vertex 3: position is not finite"):
        convert.from_scene(scene)
    scene, _, _ = ws.built_puppet()
    scene.meshes[0].joints[2, 0] = 7
    with pytest.raises(ExportError, match="vertex 2: bone index"):
        convert.from_scene(scene)
