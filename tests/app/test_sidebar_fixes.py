"""The safe fixes of the check for a target (README "The SkinBridge tab", docs/blender.md §10): limit weights,
rename to fit and apply scale each change only what their finding names (data compared before and after), and
after each the check no longer lists that finding."""
from __future__ import annotations

import json

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from skinbridge.app import sidebar_fixes  # noqa: E402  (after the bpy check: these modules need Blender)
from skinbridge.blender import armature as barm  # noqa: E402
from skinbridge.blender import compat  # noqa: E402
from support.sidebar import drawn, import_file  # noqa: E402

pytestmark = pytest.mark.blender


def _weights(ob) -> list[dict[str, float]]:
    """Per vertex: group name → weight, as Blender stores them."""
    names = [g.name for g in ob.vertex_groups]
    return [{names[g.group]: g.weight for g in v.groups} for v in ob.data.vertices]


def _check(target: str) -> list[str]:
    """Run the panel's check for `target`; the texts of its findings."""
    props = bpy.context.scene.skinbridge_sidebar
    props.target = target
    assert bpy.ops.skinbridge.check_target() == {"FINISHED"}
    return [f.text for f in props.findings]


def _fix(idname: str, text: str) -> None:
    texts = [f.text for f in bpy.context.scene.skinbridge_sidebar.findings]
    assert sidebar_fixes.fix_of(text) == idname
    category, _, name = idname.partition(".")
    assert getattr(getattr(bpy.ops, category), name)(index=texts.index(text)) == {"FINISHED"}
    assert text not in [f.text for f in bpy.context.scene.skinbridge_sidebar.findings]


def test_limit_weights_keeps_the_largest_of_the_named_vertices_only(clean_scene, testdata):
    import_file(testdata / "urho3d" / "Ninja.mdl")
    ob = bpy.data.objects["Ninja"]
    bones = [g.name for g in ob.vertex_groups][:6]
    for v in range(10):  # six bone weights on the first ten vertices: two over the four a puppet holds
        for k, name in enumerate(bones):
            ob.vertex_groups[name].add([v], 0.05 * (k + 1) + 0.001 * v, "REPLACE")
    before = _weights(ob)
    text = "Ninja: 10 vertices had more than 4 influences; the largest were kept and renormalised"
    assert text in _check("wepuppet")
    drawn(bpy.context)  # the panel draws the fix's button: the stand-in layout checks its operator and index
    _fix("skinbridge.fix_limit_weights", text)
    after = _weights(ob)
    assert after[10:] == before[10:]
    for v in range(10):
        top = dict(sorted(before[v].items(), key=lambda item: -item[1])[:4])
        total = sum(top.values())
        assert after[v].keys() == top.keys()
        assert [after[v][n] for n in top] == pytest.approx([w / total for w in top.values()], abs=1e-6)
    assert not any("influences" in t for t in _check("wepuppet"))


@pytest.fixture
def fox(clean_scene, testdata):
    import_file(testdata / "gltf" / "Fox.glb")
    arm = next(ob for ob in bpy.data.objects if ob.type == "ARMATURE")
    bpy.context.view_layer.objects.active = arm
    return arm


def _location_keys(arm) -> dict[tuple[str, str, int], np.ndarray]:
    out = {}
    for action in bpy.data.actions:
        for bag in compat.channelbags(action):
            for fc in bag.fcurves:
                values = np.array([k.co[1] for k in fc.keyframe_points])
                out[(action.name, fc.data_path, fc.array_index)] = values
    return out


def test_rename_to_fit_renames_the_named_bone_only(fox):
    text = ("bone name 'b_RightUpperArm_06' is longer than the 15 bytes a VMD name holds: PMX and VMD call it "
            "'b_RightUpperArm' (the full name is its English name)")
    mesh = next(ob for ob in bpy.data.objects if ob.type == "MESH")
    bones, groups, keys = [b.name for b in fox.data.bones], [g.name for g in mesh.vertex_groups], _location_keys(fox)
    weights = [sorted(d.values()) for d in _weights(mesh)]
    assert text in _check("pmx")
    _fix("skinbridge.fix_rename_bone", text)
    renamed = {"b_RightUpperArm_06": "b_RightUpperArm"}
    assert [b.name for b in fox.data.bones] == [renamed.get(n, n) for n in bones]
    assert [g.name for g in mesh.vertex_groups] == [renamed.get(n, n) for n in groups]
    assert [sorted(d.values()) for d in _weights(mesh)] == weights
    moved = {(a, p.replace('"b_RightUpperArm_06"', '"b_RightUpperArm"'), i): v for (a, p, i), v in keys.items()}
    after = _location_keys(fox)
    assert after.keys() == moved.keys() and all(np.array_equal(after[k], moved[k]) for k in moved)
    findings = _check("pmx")
    assert not any("'b_RightUpperArm_06'" in t for t in findings)
    assert sum("15 bytes a VMD name holds" in t for t in findings) == 9  # the other nine long names stay


def test_apply_scale_scales_the_model_to_the_height_the_target_wants(fox):
    text = next(t for t in _check("pmx") if t.startswith("the model is "))
    assert text == ("the model is 987.9 MMD units tall, outside the 2–200 MMD models are made at (a 1.6 m "
                    "character is 20): written at 12.5 units per metre; --units-per-metre 0.2531 would make it 20 "
                    "units tall")
    factor = 20 / 987.9
    mesh = next(ob for ob in bpy.data.objects if ob.type == "MESH")

    def world(ob) -> np.ndarray:
        co = np.array([v.co for v in ob.data.vertices])
        m = np.array(ob.matrix_world)
        return co @ m[:3, :3].T + m[:3, 3]

    heads = np.array([fox.matrix_world @ b.head_local for b in fox.data.bones])
    positions, keys, weights = world(mesh), _location_keys(fox), _weights(mesh)
    _fix("skinbridge.fix_apply_scale", text)
    for ob in (fox, mesh):
        assert tuple(ob.scale) == pytest.approx((1, 1, 1), abs=1e-6)
    size = float(np.abs(positions).max())
    assert world(mesh) == pytest.approx(positions * factor, abs=1e-5 * size * factor)
    assert np.array([fox.matrix_world @ b.head_local for b in fox.data.bones]) == pytest.approx(
        heads * factor, abs=1e-5 * size * factor)
    after = _location_keys(fox)
    for key, values in keys.items():
        want = values * factor if key[1].endswith(".location") else values
        assert after[key] == pytest.approx(want, abs=1e-5 * max(1.0, float(np.abs(values).max())))
    assert _weights(mesh) == weights
    assert not any(t.startswith("the model is ") for t in _check("pmx"))


def test_rename_to_fit_renames_a_pmx_bone_where_the_export_reads_its_name(clean_scene, testdata):
    """A bone from a PMX file is written with its file's name (kept with the bone), not Blender's."""
    import_file(testdata / "pmx" / "babylonmmd_constraint_test.pmx")
    arm = next(ob for ob in bpy.data.objects if ob.type == "ARMATURE")
    bone = arm.data.bones[1]
    long = "新規ボーン1の長い名前"  # 21 cp932 bytes
    data = barm.bone_extras(bone)
    data["pmx"].update(name=long, name_e="")
    bone[barm.PROP] = json.dumps(data, ensure_ascii=False)
    short = long.encode("cp932")[:15].decode("cp932", "ignore")
    text = (f"bone name {long!r} is longer than the 15 bytes a VMD name holds: PMX and VMD call it {short!r} "
            "(the full name is its English name)")
    blender_names = [b.name for b in arm.data.bones]
    assert text in _check("pmx")
    _fix("skinbridge.fix_rename_bone", text)
    assert [b.name for b in arm.data.bones] == blender_names
    assert {k: barm.bone_extras(bone)["pmx"][k] for k in ("name", "name_e")} == {"name": short, "name_e": long}
    assert not any("15 bytes" in t for t in _check("pmx"))
