"""A Wallpaper Engine project imported into Blender and exported back: unchanged, every file of its folder comes
back byte-identical; a layer moved in Blender, animation layers reweighted and sped up and a puppet's mesh edited change
only their own scene.json values and the puppet's .mdl."""
from __future__ import annotations

import json

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from skinbridge import formats  # noqa: E402
from skinbridge.io_wepuppet.project import blender_io as blender_project  # noqa: E402
from skinbridge.io_wepuppet.puppet import mdl  # noqa: E402

from support.wepuppet import make_project  # noqa: E402

pytestmark = pytest.mark.blender


def _files(folder) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def _layers(result) -> dict:
    return {json.loads(ob[blender_project.LAYER_PROP])["name"]: ob for ob in result.layers}


def test_an_unchanged_project_exports_byte_identical(clean_scene, testdata, tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    make_project(src, testdata)
    assert bpy.ops.import_scene.skinbridge_weproject(filepath=str(src / "project.json")) == {"FINISHED"}
    out = tmp_path / "out"
    assert bpy.ops.export_scene.skinbridge_weproject(filepath=str(out / "project.json")) == {"FINISHED"}
    assert _files(out) == _files(src)
    again = tmp_path / "again"
    written, _ = formats.get("weproject").get("export_target")(bpy.context, str(again), "project", None)
    assert sorted(written) == sorted(str(again / p) for p in _files(src)) and _files(again) == _files(src)


def test_changes_made_in_blender_are_written_and_nothing_else(clean_scene, testdata, tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    make_project(src, testdata)
    result = blender_project.import_project(bpy.context, str(src / "project.json"))
    goose = _layers(result)["goose"]
    goose.matrix_world.translation.x += 1.25  # 125 scene pixels to the right
    goose.animation_data.nla_tracks["walk"].strips[0].influence = 0.75
    goose.animation_data.nla_tracks["hop"].strips[0].scale = 0.25  # rate 2 → 4
    mesh = next(ob for ob in goose.children if ob.type == "MESH")
    mesh.data.vertices[0].co.z += 0.5  # 50 pixels up, in the puppet's own space
    bpy.context.view_layer.objects.active = goose
    out = tmp_path / "out"
    written, warnings = blender_project.export_project(bpy.context, str(out / "project.json"))
    before, after = _files(src), _files(out)
    assert sorted(after) == sorted(before) and sorted(written) == sorted(str(out / p) for p in before)
    changed = sorted(p for p in before if before[p] != after[p])
    assert changed == ["models/goose_t_puppet.mdl", "scene.json"]
    old, new = json.loads(before["scene.json"]), json.loads(after["scene.json"])
    for a, b in zip(old["objects"], new["objects"]):
        if a["name"] != "goose":
            assert a == b
    goose_old, goose_new = (next(o for o in d["objects"] if o["name"] == "goose") for d in (old, new))
    assert goose_new["origin"] == "825.50000 300.25000 0.00000"
    assert goose_new["animationlayers"][0]["blend"] == 0.75
    assert {k: v for k, v in goose_new.items() if k not in ("origin", "animationlayers")} == \
        {k: v for k, v in goose_old.items() if k not in ("origin", "animationlayers")}
    assert goose_new["animationlayers"][1] == {**goose_old["animationlayers"][1], "rate": 4.0}
    changed_lines = [(a, b) for a, b in zip(before["scene.json"].splitlines(), after["scene.json"].splitlines())
                     if a != b]
    assert len(changed_lines) == 3 and len(before["scene.json"].splitlines()) == len(after["scene.json"].splitlines())
    m_old, m_new = mdl.read(before["models/goose_t_puppet.mdl"]), mdl.read(after["models/goose_t_puppet.mdl"])
    p_old, p_new = (np.asarray(m.meshes[0].vertices["position"], np.float64) for m in (m_old, m_new))
    assert np.abs(p_new[0] - p_old[0] - [0, 50, 0]).max() < 1e-3 and np.array_equal(p_new[1:], p_old[1:])
