"""Issue 31 item 1 and 3: every MMD morph a slider. A PMX our writer makes from Luka with one morph of every
kind added (tests/support/mmd_extras.py): each slider at 1.0 shows what the record describes, computed here
from the record (bone pose, material colour, UVs, group and flip members); with every slider back at 0 the
export is byte-identical; VMD morph keys drive the sliders and come back byte-identical; vertex, bone and
group morphs deform and pose as babylon-mmd's runtime does; each morph kind edited in Blender (bone, material,
UV, additional UV, group, flip) exports changed in that morph's record and nothing else."""
from __future__ import annotations

import json
import pathlib
import subprocess

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from skinbridge.io_pmx.blender_side import blender_io  # noqa: E402
from skinbridge.io_pmx.blender_side import blender_morphs  # noqa: E402
from skinbridge.io_pmx.blender_side import blender_motion_export, blender_motion_import  # noqa: E402
from skinbridge.io_pmx.model import pmx  # noqa: E402
from skinbridge.io_pmx.motion import vmd  # noqa: E402
from support import mmd_extras  # noqa: E402
from support.bytes_compare import assert_same_bytes  # noqa: E402
from support.tools import JS, NODE_MODULES, node_with_babylon  # noqa: E402

pytestmark = pytest.mark.blender

SCALE = 0.08
SWAP = np.array([[1.0, 0, 0], [0, 0, 1], [0, 1, 0]])  # MMD ⇄ Blender axes (docs/mmd.md §4)


@pytest.fixture(scope="module")
def written(testdata, tmp_path_factory):
    path = tmp_path_factory.mktemp("morphs") / "luka_morphs.pmx"
    path.write_bytes(mmd_extras.luka_with_every_morph(testdata / "pmx" / mmd_extras.LUKA))
    return path


@pytest.fixture
def model(clean_scene, written):
    result = blender_io.import_pmx(bpy.context, str(written), physics=False)
    arm = result.armature
    mesh = next(ob for ob in result.objects if ob.type == "MESH")
    return arm, mesh, pmx.read(written.read_bytes())


def _quat_matrix(q_xyzw) -> np.ndarray:
    x, y, z, w = np.asarray(q_xyzw, np.float64) / np.linalg.norm(q_xyzw)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def _morph(m: pmx.PmxModel, kind: int) -> pmx.PmxMorph:
    return next(x for x in m.morphs if x.name == mmd_extras.EVERY_MORPH[kind])


def _set(arm, kind: int, value: float) -> None:
    arm[blender_morphs.SLIDER_PREFIX + mmd_extras.EVERY_MORPH[kind]] = value
    blender_morphs.apply(arm)


def _pose(arm, name: str) -> np.ndarray:
    bpy.context.view_layer.update()  # the pose matrices follow the pose basis on evaluation
    return np.array(arm.pose.bones[name].matrix, np.float64)


def _expected_pose(arm, m: pmx.PmxModel, name: str) -> np.ndarray:
    """The bone's armature-space pose with the bone morph's offset: moved by the translation and turned by
    the rotation about its head, both in MMD's parent axes (here the unposed parents' = the model's)."""
    morph = _morph(m, pmx.MORPH_BONE)
    b = next(i for i, x in enumerate(m.bones) if x.name == name)
    row = morph.offsets[morph.offsets["bone"] == b][0]
    rest = np.array(arm.data.bones[name].matrix_local, np.float64)
    head = rest[:3, 3].copy()
    turn = np.eye(4)
    turn[:3, :3] = SWAP @ _quat_matrix(row["rotation"]) @ SWAP
    move = np.eye(4)
    move[:3, 3] = SWAP @ row["translation"].astype(np.float64) * SCALE + head
    back = np.eye(4)
    back[:3, 3] = -head
    return move @ turn @ back @ rest


def _colour(mat) -> np.ndarray:
    bsdf = next(n for n in mat.node_tree.nodes if n.type == "BSDF_PRINCIPLED")
    return np.array([*bsdf.inputs["Base Color"].default_value[:3], bsdf.inputs["Alpha"].default_value])


def _uv(mesh) -> np.ndarray:
    out = np.empty(len(mesh.data.loops) * 2, np.float32)
    mesh.data.uv_layers.active.data.foreach_get("uv", out)
    return out.reshape(-1, 2)


def _attr(mesh, name: str) -> np.ndarray:
    out = np.empty(len(mesh.data.vertices) * 4, np.float32)
    mesh.data.attributes[name].data.foreach_get("value", out)
    return out.reshape(-1, 4)


def test_every_morph_is_a_keyable_slider(model):
    arm, mesh, m = model
    for kind, name in mmd_extras.EVERY_MORPH.items():
        prop = blender_morphs.SLIDER_PREFIX + name
        assert arm[prop] == 0.0, name
        assert arm.keyframe_insert(f'["{prop}"]', frame=1), name
    vertex = [x.name for x in m.morphs if x.kind == pmx.MORPH_VERTEX]
    assert [kb.name for kb in mesh.data.shape_keys.key_blocks][1:] == vertex
    assert not any(blender_morphs.SLIDER_PREFIX + n in arm for n in vertex)


def test_bone_and_group_morphs_pose_their_bones(model):
    arm, mesh, m = model
    keys = mesh.data.shape_keys.key_blocks
    rest = {name: _pose(arm, name) for name in mmd_extras.MORPHED_BONES}
    for kind in (pmx.MORPH_BONE, pmx.MORPH_GROUP):
        _set(arm, kind, 1.0)
        for name in mmd_extras.MORPHED_BONES:
            np.testing.assert_allclose(_pose(arm, name), _expected_pose(arm, m, name), atol=1e-5)
        if kind == pmx.MORPH_GROUP:  # あ at its ratio 0.5; its own slider stays 0
            assert keys["あ"].value == pytest.approx(0.5)
            assert blender_morphs.Model(arm).own_weights(blender_morphs.morph_state(arm))[0] == 0
        _set(arm, kind, 0.0)
        for name in mmd_extras.MORPHED_BONES:
            np.testing.assert_array_equal(_pose(arm, name), rest[name])
    assert keys["あ"].value == 0


def test_material_morph_multiplies_and_adds(model):
    arm, mesh, m = model
    mats = mesh.data.materials
    before = [_colour(mats[i]) for i in (0, 1)]
    np.testing.assert_allclose(before[0], m.materials[0].diffuse, atol=1e-6)
    morph = _morph(m, pmx.MORPH_MATERIAL).offsets
    _set(arm, pmx.MORPH_MATERIAL, 1.0)
    np.testing.assert_allclose(_colour(mats[0]), m.materials[0].diffuse * morph["diffuse"][0], atol=1e-6)
    np.testing.assert_allclose(_colour(mats[1]), m.materials[1].diffuse + morph["diffuse"][1], atol=1e-6)
    _set(arm, pmx.MORPH_MATERIAL, 0.5)
    np.testing.assert_allclose(_colour(mats[0]), m.materials[0].diffuse * (1 + (morph["diffuse"][0] - 1) * 0.5),
                               atol=1e-6)
    _set(arm, pmx.MORPH_MATERIAL, 0.0)
    for i in (0, 1):
        np.testing.assert_array_equal(_colour(mats[i]), before[i])


def test_material_morph_colours_the_mmd_shader_and_the_solid_view(model):
    """A material morph shows in what EEVEE and Cycles draw (the MMD Shader's Diffuse Color and Alpha) and in the
    Solid view (`diffuse_color`) as in the BSDF export reads; back at 0 each holds its own value again, bit for
    bit, an edit made on the shader alone included."""
    from skinbridge.io_pmx.blender_side import blender_mmd_material

    arm, mesh, m = model
    mats = mesh.data.materials
    shader = [mat.node_tree.nodes[blender_mmd_material.SHADER_NODE].inputs for mat in mats[:2]]

    def shader_colour(i):
        return np.array([*shader[i]["Diffuse Color"].default_value[:3], shader[i]["Alpha"].default_value])

    shader[1]["Diffuse Color"].default_value = (0.25, 0.5, 0.75, 1.0)  # the user's edit on the shader alone
    before = [(shader_colour(i), np.array(mats[i].diffuse_color)) for i in (0, 1)]
    morph = _morph(m, pmx.MORPH_MATERIAL).offsets
    _set(arm, pmx.MORPH_MATERIAL, 1.0)
    np.testing.assert_allclose(shader_colour(0), m.materials[0].diffuse * morph["diffuse"][0], atol=1e-6)
    np.testing.assert_allclose(np.array(mats[0].diffuse_color), m.materials[0].diffuse * morph["diffuse"][0],
                               atol=1e-6)
    np.testing.assert_allclose(shader_colour(1), before[1][0] + morph["diffuse"][1], atol=1e-6)
    _set(arm, pmx.MORPH_MATERIAL, 0.0)
    for i in (0, 1):
        np.testing.assert_array_equal(shader_colour(i), before[i][0])
        np.testing.assert_array_equal(np.array(mats[i].diffuse_color), before[i][1])


def test_uv_morphs_move_the_uvs(model):
    arm, mesh, m = model
    corner = np.empty(len(mesh.data.loops), np.int64)
    mesh.data.loops.foreach_get("vertex_index", corner)
    base = _uv(mesh)
    morph = _morph(m, pmx.MORPH_UV).offsets
    shift = np.zeros((len(mesh.data.vertices), 2))
    shift[morph["vertex"]] = morph["offset"][:, :2] * (1, -1)  # the file's v runs down
    _set(arm, pmx.MORPH_UV, 1.0)
    np.testing.assert_allclose(_uv(mesh), base + shift[corner], atol=1e-6)
    _set(arm, pmx.MORPH_UV, 0.0)
    np.testing.assert_allclose(_uv(mesh), base, atol=1e-6)
    for j, kind in enumerate(range(pmx.MORPH_UV1, pmx.MORPH_UV4 + 1), 1):
        morph = _morph(m, kind).offsets
        raw = _attr(mesh, f"pmx_add_uv{j}")
        expected = raw.astype(np.float64)
        expected[morph["vertex"]] += morph["offset"]
        _set(arm, kind, 1.0)
        np.testing.assert_allclose(_attr(mesh, f"pmx_morph_add_uv{j}"), expected, atol=1e-6)
        np.testing.assert_array_equal(_attr(mesh, f"pmx_add_uv{j}"), raw)  # the file's own set stays
        _set(arm, kind, 0.0)


def test_flip_picks_one_member_and_impulse_is_kept(model):
    arm, mesh, m = model
    keys = mesh.data.shape_keys.key_blocks
    _set(arm, pmx.MORPH_FLIP, 1.0)  # int((2 + 1) · 1) − 1 = 2, past the last: the last member, い
    assert (keys["あ"].value, keys["い"].value) == (0, pytest.approx(1.0))
    _set(arm, pmx.MORPH_FLIP, 0.5)  # int(1.5) − 1 = 0: あ
    assert (keys["あ"].value, keys["い"].value) == (pytest.approx(1.0), 0)
    _set(arm, pmx.MORPH_FLIP, 0.0)
    before = [np.array(pb.matrix_basis) for pb in arm.pose.bones]
    _set(arm, pmx.MORPH_IMPULSE, 1.0)  # physics only: the slider is there, nothing else moves
    assert [kb.value for kb in list(keys)[1:] if kb.value != 0] == []
    assert all(np.array_equal(np.array(pb.matrix_basis), b) for pb, b in zip(arm.pose.bones, before))


def test_sliders_back_at_zero_export_the_same_bytes(model, written, tmp_path):
    arm, mesh, m = model
    for kind in mmd_extras.EVERY_MORPH:
        _set(arm, kind, 1.0)
    shown = (_pose(arm, "頭"), _colour(mesh.data.materials[0]), _uv(mesh))
    out = tmp_path / "moved.pmx"
    blender_io.export_pmx(bpy.context, str(out))  # exported at rest, whatever the sliders show
    assert_same_bytes(out.read_bytes(), written.read_bytes(), pmx.read)
    assert arm[blender_morphs.SLIDER_PREFIX + mmd_extras.EVERY_MORPH[pmx.MORPH_BONE]] == 1.0
    for a, b in zip((_pose(arm, "頭"), _colour(mesh.data.materials[0]), _uv(mesh)), shown):
        np.testing.assert_array_equal(a, b)  # and the model shows its morphs again
    for kind in mmd_extras.EVERY_MORPH:
        _set(arm, kind, 0.0)
    out = tmp_path / "rest.pmx"
    blender_io.export_pmx(bpy.context, str(out))
    assert_same_bytes(out.read_bytes(), written.read_bytes(), pmx.read)


def test_vmd_morph_keys_drive_the_sliders_both_ways(model, tmp_path):
    arm, mesh, m = model
    names = ["あ", *mmd_extras.EVERY_MORPH.values()]
    steps = ((0, 0.0), (10, 1.0), (15, 0.25), (20, 0.0))  # each morph in its own 30 frames
    keys = np.zeros(len(steps) * len(names), vmd.MORPH_KEY)
    for i, name in enumerate(names):
        for j, (frame, weight) in enumerate(steps):
            keys[len(steps) * i + j] = (vmd.encode_name(name), frame + 30 * i, weight)
    motion = vmd.Motion(morph_keys=keys)
    motion.model_name = "巡音ルカ"
    path = tmp_path / "morphs.vmd"
    path.write_bytes(vmd.write(motion))
    acts, warnings = blender_motion_import.import_vmd(bpy.context, [str(path)], arm)
    assert not any("morph" in w for w in warnings), warnings
    act = acts[0]
    bone_slot = next(s for s in act.slots if s.target_id_type == "OBJECT")
    bag = next(b for layer in act.layers for strip in layer.strips for b in strip.channelbags
               if b.slot == bone_slot)
    for i, name in enumerate(mmd_extras.EVERY_MORPH.values(), 1):
        fc = bag.fcurves.find(f'["{blender_morphs.SLIDER_PREFIX}{name}"]')
        assert fc is not None, name
        assert [tuple(k.co) for k in fc.keyframe_points] == [(f + 30 * i, w) for f, w in steps]
    bpy.context.scene.frame_set(10 + 30 * 2)  # the bone morph's key at 1.0, the others at 0: the handlers show it
    np.testing.assert_allclose(_pose(arm, "頭"), _expected_pose(arm, m, "頭"), atol=1e-5)
    out = tmp_path / "back.vmd"
    blender_motion_export.export_vmd(bpy.context, str(out), arm, act)
    assert_same_bytes(out.read_bytes(), path.read_bytes(), vmd.read)


BABYLON_BONES = ["頭", "頭先", "左目", "左腕", "左ひじ", "左手首"]  # the morphed bones and what hangs on them


@pytest.mark.parametrize("kind", [pmx.MORPH_BONE, pmx.MORPH_GROUP])
def test_bone_and_group_sliders_pose_as_babylon_mmd_plays_them(model, written, tmp_path, kind):
    """The slider at 1.0 against babylon-mmd's runtime playing a VMD key of that morph at 1.0: the heads of
    the morphed bones and of what hangs on them within 1e-4 of the model's height."""
    from support.babylon import runtime_positions  # node and babylon-mmd, only for this test

    arm, mesh, m = model
    name = mmd_extras.EVERY_MORPH[kind]
    motion = vmd.Motion(morph_keys=np.array([(vmd.encode_name(name), 0, 1.0)], vmd.MORPH_KEY))
    path = tmp_path / "key.vmd"
    path.write_bytes(vmd.write(motion))
    theirs = runtime_positions(written, path, [0.0], BABYLON_BONES)[0]
    _set(arm, kind, 1.0)
    bpy.context.view_layer.update()
    world = np.array(arm.matrix_world)
    heads = np.array([(world @ np.append(np.array(arm.pose.bones[n].head), 1.0))[:3] for n in BABYLON_BONES])
    ours = heads @ SWAP / SCALE  # Blender metres → MMD units (the swap is its own inverse)
    height = float(np.ptp(m.vertices["position"][:, 1]))
    assert np.abs(ours - theirs).max() <= 1e-4 * height, np.abs(ours - theirs).max() / height
    rest = np.array([m.bones[next(i for i, b in enumerate(m.bones) if b.name == n)].position for n in
                     BABYLON_BONES])
    assert np.abs(theirs - rest).max() > 0.1  # the morph moved them


VERTEX_CASES = ({"あ": 1.0}, {"まばたき": 0.5, "い": 0.25}, {mmd_extras.EVERY_MORPH[pmx.MORPH_GROUP]: 1.0})


def _babylon_deformed(model_path, cases) -> np.ndarray:
    """(cases, vertices, 3) positions in MMD units as babylon-mmd's runtime deforms the model at each case's
    morph weights (tests/js/mmd_runtime_morph.mjs: Babylon's own morph targets, influences and skinning)."""
    out = pathlib.Path(model_path).with_suffix(".f32")
    done = subprocess.run([node_with_babylon(), str(JS / "mmd_runtime_morph.mjs"), str(NODE_MODULES),
                           str(model_path), json.dumps(cases, ensure_ascii=False), str(out)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout[done.stdout.index("{"):])
    assert report["missing"] == []
    return np.fromfile(out, "<f4").astype(np.float64).reshape(len(cases), report["vertices"], 3)


def _blender_deformed(mesh) -> np.ndarray:
    """The evaluated mesh's vertices (shape keys, then the armature) in MMD axes and units."""
    evaluated = mesh.evaluated_get(bpy.context.evaluated_depsgraph_get())
    me = evaluated.to_mesh()
    try:
        co = np.empty(len(me.vertices) * 3, np.float32)
        me.vertices.foreach_get("co", co)
    finally:
        evaluated.to_mesh_clear()
    world = np.array(mesh.matrix_world, np.float64)
    co = co.reshape(-1, 3).astype(np.float64) @ world[:3, :3].T + world[:3, 3]
    return co @ SWAP / SCALE


def test_vertex_and_group_morphs_deform_as_babylon_mmd_does(model, written):
    """Vertex morphs (one alone, two mixed at partial weights) and the group over a vertex and a bone morph: the
    evaluated Blender mesh against babylon-mmd's runtime at the same weights, every vertex within 1e-4 of the
    model's height."""
    arm, mesh, m = model
    theirs = _babylon_deformed(written, [dict(c) for c in VERTEX_CASES])
    height = float(np.ptp(m.vertices["position"][:, 1]))
    base = m.vertices["position"].astype(np.float64)
    keys = mesh.data.shape_keys.key_blocks
    for case, babylon in zip(VERTEX_CASES, theirs):
        for name, weight in case.items():
            if name in keys:
                keys[name].value = weight
            else:
                arm[blender_morphs.SLIDER_PREFIX + name] = weight
        blender_morphs.apply(arm)
        ours = _blender_deformed(mesh)
        err = np.linalg.norm(ours - babylon, axis=1)
        assert err.max() <= 1e-4 * height, (case, err.max() / height, int(err.argmax()))
        moved = np.linalg.norm(babylon - base, axis=1)
        assert moved.max() > 0.05, case  # the morph did move the mesh (0.4 mm on a 20-unit model would not)
        for name in case:
            if name in keys:
                keys[name].value = 0.0
            else:
                arm[blender_morphs.SLIDER_PREFIX + name] = 0.0
        blender_morphs.apply(arm)


class _Properties:
    """What `layout.operator()` returns: setting a property the operator lacks fails."""

    def __init__(self, idname: str, held) -> None:
        object.__setattr__(self, "where", (idname, set(held)))

    def __setattr__(self, key: str, value) -> None:
        idname, held = self.where
        assert key in held, f"{idname} has no property {key}"


class _Layout:
    """Records what a panel draws."""

    def __init__(self) -> None:
        self.rows: list[tuple] = []

    def column(self, align: bool = False) -> "_Layout":
        return self

    def row(self, align: bool = False) -> "_Layout":
        return self

    def operator(self, idname: str, text: str = "", icon: str = "") -> object:
        assert icon in bpy.types.UILayout.bl_rna.functions["label"].parameters["icon"].enum_items.keys(), icon
        category, _, name = idname.partition(".")
        held = getattr(getattr(bpy.ops, category), name).get_rna_type().properties.keys()  # registered
        self.rows.append(("operator", idname))
        return _Properties(idname, held)

    def label(self, text: str = "") -> None:
        self.rows.append(("label", text))

    def prop(self, data, path: str, text: str = "", slider: bool = False) -> None:
        self.rows.append(("prop", data.path_resolve(path) if path.startswith("[") else getattr(data, path), text))


def test_morphs_panel_lists_every_slider_by_mmd_panel(model):
    arm, mesh, m = model
    panel_class = blender_morphs.VIEW3D_PT_skinbridge_mmd_morphs
    assert (panel_class.bl_space_type, panel_class.bl_region_type, panel_class.bl_category) == (
        "VIEW_3D", "UI", "SkinBridge")
    assert getattr(bpy.types, panel_class.__name__, None) is panel_class  # registered with the add-on
    context = type("Context", (), {"active_object": mesh})()  # the mesh selected: its armature's morphs
    assert panel_class.poll(context)
    fake = type("Panel", (), {"layout": _Layout()})()
    arm[blender_morphs.SLIDER_PREFIX + mmd_extras.EVERY_MORPH[pmx.MORPH_UV]] = 0.75
    panel_class.draw(fake, context)
    rows = fake.layout.rows
    assert [r[2] for r in rows if r[0] == "prop"] == [x.name for p in range(5) for x in m.morphs if x.panel == p]
    assert [r[1] for r in rows if r[0] == "label"] == [blender_morphs.PANELS[p] for p in sorted(
        {x.panel for x in m.morphs})]
    assert ("prop", 0.75, mmd_extras.EVERY_MORPH[pmx.MORPH_UV]) in rows
    bone_morph = rows.index(("prop", 0.0, mmd_extras.EVERY_MORPH[pmx.MORPH_BONE]))
    assert rows[bone_morph + 1] == ("operator", "skinbridge.mmd_bone_morph_from_pose")
    material_morph = rows.index(("prop", 0.0, mmd_extras.EVERY_MORPH[pmx.MORPH_MATERIAL]))
    assert rows[material_morph + 1] == ("operator", "skinbridge.mmd_material_morph_from_colour")
    for kind in range(pmx.MORPH_UV, pmx.MORPH_UV4 + 1):  # each UV morph: from the UVs, an offset on selected
        at = next(i for i, r in enumerate(rows) if r[0] == "prop" and r[2] == mmd_extras.EVERY_MORPH[kind])
        assert rows[at + 1:at + 3] == [("operator", "skinbridge.mmd_uv_morph_from_uvs"),
                                       ("operator", "skinbridge.mmd_uv_morph_offset")], kind
    for kind in (pmx.MORPH_GROUP, pmx.MORPH_FLIP):
        at = rows.index(("prop", 0.0, mmd_extras.EVERY_MORPH[kind]))
        assert rows[at + 1] == ("operator", "skinbridge.mmd_morph_member_ratio"), kind


def _armature_matrix(arm, name: str, t, q_xyzw) -> np.ndarray:
    """The armature-space matrix of bone `name` moved by MMD translation `t` and turned by MMD rotation `q`
    about its head (parents at rest)."""
    rest = np.array(arm.data.bones[name].matrix_local, np.float64)
    head = rest[:3, 3].copy()
    out = np.eye(4)
    out[:3, :3] = SWAP @ _quat_matrix(q_xyzw) @ SWAP
    out[:3, 3] = SWAP @ np.asarray(t, np.float64) * SCALE + head - out[:3, :3] @ head
    return out @ rest


def test_bone_morph_edited_from_a_pose_exports_changed_and_nothing_else(model, written, tmp_path):
    arm, mesh, m = model
    name = mmd_extras.EVERY_MORPH[pmx.MORPH_BONE]
    _set(arm, pmx.MORPH_BONE, 1.0)  # the morph shown; the user then moves the head elsewhere
    want_t, want_q = np.array([0.25, -0.5, 1.0]), np.array([0.0, np.sin(np.pi / 12), 0.0, np.cos(np.pi / 12)])
    arm.pose.bones["頭"].matrix = _armature_matrix(arm, "頭", want_t, want_q).T.tolist()  # Matrix: by columns
    bpy.context.view_layer.objects.active = arm
    assert bpy.ops.skinbridge.mmd_bone_morph_from_pose(morph=name) == {"FINISHED"}
    assert arm[blender_morphs.SLIDER_PREFIX + name] == 1.0
    np.testing.assert_allclose(_pose(arm, "頭"), _armature_matrix(arm, "頭", want_t, want_q), atol=1e-5)
    out = tmp_path / "edited.pmx"
    blender_io.export_pmx(bpy.context, str(out))
    got = pmx.read(out.read_bytes())
    morph = next(x for x in got.morphs if x.name == name).offsets
    head = next(i for i, b in enumerate(m.bones) if b.name == "頭")
    assert len(morph) == 2  # 頭 and 左腕, as before: no other bone was posed
    row = morph[morph["bone"] == head][0]
    np.testing.assert_allclose(row["translation"], want_t, atol=5e-5)  # 4 µm: float32 pose matrices
    np.testing.assert_allclose(row["rotation"], want_q, atol=1e-6)
    # nothing else changed: the input with this one row replaced is the exported file, byte for byte
    old = _morph(m, pmx.MORPH_BONE).offsets
    assert old[old["bone"] != head].tobytes() == morph[morph["bone"] != head].tobytes()
    old[old["bone"] == head] = row
    assert_same_bytes(out.read_bytes(), pmx.write(m), pmx.read)


def test_material_morph_edited_from_a_colour_exports_changed_and_nothing_else(model, written, tmp_path):
    arm, mesh, m = model
    name = mmd_extras.EVERY_MORPH[pmx.MORPH_MATERIAL]
    _set(arm, pmx.MORPH_MATERIAL, 0.5)
    wanted = np.array([0.2, 0.4, 0.6, 0.8])
    bsdf = next(n for n in mesh.data.materials[0].node_tree.nodes if n.type == "BSDF_PRINCIPLED")
    bsdf.inputs["Base Color"].default_value = (*wanted[:3], 1.0)
    bsdf.inputs["Alpha"].default_value = wanted[3]
    bpy.context.view_layer.objects.active = arm
    assert bpy.ops.skinbridge.mmd_material_morph_from_colour(morph=name) == {"FINISHED"}
    np.testing.assert_allclose(_colour(mesh.data.materials[0]), wanted, atol=1e-6)  # shown as set
    _set(arm, pmx.MORPH_MATERIAL, 0.0)
    np.testing.assert_allclose(_colour(mesh.data.materials[0]), m.materials[0].diffuse, atol=1e-7)
    out = tmp_path / "edited.pmx"
    blender_io.export_pmx(bpy.context, str(out))
    got = next(x for x in pmx.read(out.read_bytes()).morphs if x.name == name).offsets
    base = m.materials[0].diffuse.astype(np.float64)
    # multiply at weight 0.5: base · (1 + (f − 1) · 0.5) = wanted, so f = 1 + (wanted / base − 1) / 0.5
    np.testing.assert_allclose(got["diffuse"][0], 1 + (wanted / base - 1) / 0.5, rtol=1e-6)
    old = _morph(m, pmx.MORPH_MATERIAL).offsets
    assert old[1:].tobytes() == got[1:].tobytes()  # the add row on material 1 was not touched
    old["diffuse"][0] = got["diffuse"][0]
    assert_same_bytes(out.read_bytes(), pmx.write(m), pmx.read)


def test_long_control_and_repeated_morph_names_still_get_sliders(clean_scene, written, tmp_path):
    m = pmx.read(written.read_bytes())
    bone, material, uv = (_morph(m, kind) for kind in (pmx.MORPH_BONE, pmx.MORPH_MATERIAL, pmx.MORPH_UV))
    bone.name = "長い名前" * 8  # 96 UTF-8 bytes, over Blender's 63 for a property name
    material.name = "a\x00b\x07"
    uv.name = material.name
    path = tmp_path / "names.pmx"
    path.write_bytes(pmx.write(m))
    arm = blender_io.import_pmx(bpy.context, str(path), physics=False).armature
    sliders = blender_morphs.Model(arm).sliders
    names = {blender_morphs.Model(arm).morphs[k].name: p for k, p in sliders.items() if k in (
        m.morphs.index(bone), m.morphs.index(material))}
    assert names[bone.name] == (blender_morphs.SLIDER_PREFIX + bone.name).encode()[:63].decode("utf-8", "ignore")
    assert names[material.name] == blender_morphs.SLIDER_PREFIX + "a_b_"
    assert sliders[m.morphs.index(uv)] == blender_morphs.SLIDER_PREFIX + "a_b_.002"
    assert all(p in arm for p in sliders.values())
    arm[names[bone.name]] = 1.0
    assert blender_morphs.apply(arm)
    out = tmp_path / "back.pmx"
    arm[names[bone.name]] = 0.0
    blender_io.export_pmx(bpy.context, str(out))
    assert_same_bytes(out.read_bytes(), path.read_bytes(), pmx.read)


def _exported_with(m: pmx.PmxModel, tmp_path, edits: dict[int, np.ndarray]) -> None:
    """Export the scene; the file equals `m` with the offsets of each edited morph (by kind) replaced by the
    exported ones, byte for byte, after each exported record matched `edits` (the rows the test expects)."""
    out = tmp_path / "edited.pmx"
    blender_io.export_pmx(bpy.context, str(out))
    got = pmx.read(out.read_bytes())
    for kind, want in edits.items():
        rows = _morph(got, kind).offsets
        assert rows.dtype == want.dtype and len(rows) == len(want), kind
        for field in want.dtype.names:
            np.testing.assert_allclose(rows[field], want[field], atol=2e-6, err_msg=f"{kind} {field}")
        _morph(m, kind).offsets = rows
    assert_same_bytes(out.read_bytes(), pmx.write(m), pmx.read)


def _corners_of(mesh, v: int) -> np.ndarray:
    corner = np.empty(len(mesh.data.loops), np.int64)
    mesh.data.loops.foreach_get("vertex_index", corner)
    return np.flatnonzero(corner == v)


def test_uv_morph_edited_from_the_uvs_exports_changed_and_nothing_else(model, tmp_path):
    """The UV morph at 0.5: one listed vertex's UVs moved further, one unlisted vertex's UVs moved; "UV Morph
    from UVs" makes the morph give them (offset += change / 0.5, v down; a new row for the new vertex)."""
    arm, mesh, m = model
    name = mmd_extras.EVERY_MORPH[pmx.MORPH_UV]
    _set(arm, pmx.MORPH_UV, 0.5)
    listed, unlisted = 9, 10  # the fixture lists every third vertex
    uv = _uv(mesh)
    for v, move in ((listed, (0.125, 0.0625)), (unlisted, (-0.25, 0.5))):
        uv[_corners_of(mesh, v)] += move
    mesh.data.uv_layers.active.data.foreach_set("uv", uv.reshape(-1))
    bpy.context.view_layer.objects.active = arm
    assert bpy.ops.skinbridge.mmd_uv_morph_from_uvs(morph=name) == {"FINISHED"}
    np.testing.assert_allclose(_uv(mesh), uv, atol=1e-6)  # shown as set
    _set(arm, pmx.MORPH_UV, 0.0)
    want = np.concatenate([_morph(m, pmx.MORPH_UV).offsets, pmx.empty_records(
        pmx.MORPH_OFFSETS[pmx.MORPH_UV], 1)])
    row = int(np.flatnonzero(want["vertex"] == listed)[0])
    want["offset"][row, :2] += np.array([0.125, -0.0625]) / 0.5
    want["vertex"][-1], want["offset"][-1] = unlisted, (-0.5, -1.0, 0, 0)
    _exported_with(m, tmp_path, {pmx.MORPH_UV: want})


def test_additional_uv_morphs_edited_export_changed_and_nothing_else(model, tmp_path):
    """Additional UV 1 at 0.5: its shown set (pmx_morph_add_uv1) changed on a listed vertex, stored from it;
    additional UV 3: an offset set on the vertices selected (one listed, one not)."""
    arm, mesh, m = model
    _set(arm, pmx.MORPH_UV1, 0.5)
    shown = _attr(mesh, "pmx_morph_add_uv1")
    change = np.array([0.1, 0.2, -0.3, 0.4], np.float32)
    shown[6] += change
    mesh.data.attributes["pmx_morph_add_uv1"].data.foreach_set("value", shown.reshape(-1))
    bpy.context.view_layer.objects.active = arm
    assert bpy.ops.skinbridge.mmd_uv_morph_from_uvs(morph=mmd_extras.EVERY_MORPH[pmx.MORPH_UV1]) == {"FINISHED"}
    np.testing.assert_allclose(_attr(mesh, "pmx_morph_add_uv1"), shown, atol=1e-6)
    _set(arm, pmx.MORPH_UV1, 0.0)
    first = _morph(m, pmx.MORPH_UV1).offsets.copy()
    first["offset"][first["vertex"] == 6] += change / 0.5
    select = np.zeros(len(mesh.data.vertices), bool)
    select[[3, 4]] = True
    mesh.data.vertices.foreach_set("select", select)
    offset = (0.5, -0.25, 0.125, 1.0)
    name = mmd_extras.EVERY_MORPH[pmx.MORPH_UV3]
    assert bpy.ops.skinbridge.mmd_uv_morph_offset(morph=name, offset=offset) == {"FINISHED"}
    third = np.concatenate([_morph(m, pmx.MORPH_UV3).offsets, pmx.empty_records(
        pmx.MORPH_OFFSETS[pmx.MORPH_UV3], 1)])
    third["offset"][third["vertex"] == 3] = offset
    third["vertex"][-1], third["offset"][-1] = 4, offset
    _exported_with(m, tmp_path, {pmx.MORPH_UV1: first, pmx.MORPH_UV3: third})


def test_group_and_flip_member_factors_edited_export_changed_and_nothing_else(model, tmp_path):
    arm, mesh, m = model
    keys = mesh.data.shape_keys.key_blocks
    bpy.context.view_layer.objects.active = arm
    group, flip = (mmd_extras.EVERY_MORPH[k] for k in (pmx.MORPH_GROUP, pmx.MORPH_FLIP))
    assert bpy.ops.skinbridge.mmd_morph_member_ratio(morph=group, member="0", ratio=0.75) == {"FINISHED"}
    assert bpy.ops.skinbridge.mmd_morph_member_ratio(morph=flip, member="1", ratio=0.5) == {"FINISHED"}
    _set(arm, pmx.MORPH_GROUP, 1.0)
    assert keys["あ"].value == pytest.approx(0.75)  # あ now at 0.75 in the group
    _set(arm, pmx.MORPH_GROUP, 0.0)
    _set(arm, pmx.MORPH_FLIP, 1.0)  # the last member, い, at its new factor
    assert (keys["あ"].value, keys["い"].value) == (0, pytest.approx(0.5))
    _set(arm, pmx.MORPH_FLIP, 0.0)
    edits = {kind: _morph(m, kind).offsets.copy() for kind in (pmx.MORPH_GROUP, pmx.MORPH_FLIP)}
    edits[pmx.MORPH_GROUP]["ratio"][0] = 0.75
    edits[pmx.MORPH_FLIP]["ratio"][1] = 0.5
    _exported_with(m, tmp_path, edits)
