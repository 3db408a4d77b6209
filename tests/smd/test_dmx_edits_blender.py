"""Issue 47, an edited DMX export keeps what was not edited (io_smd/dmx/patch.py, docs/source.md §6.6): each edit
made with bpy as `bench/edits` makes it (`bench/edit_kinds.apply`) on Blender Source Tools' own files (binary 5
and keyvalues2), exported, and the written file compared with the original element by element: the same element
ids, the same encoding and string table, every attribute as it was but the edited ones."""
from __future__ import annotations

import pathlib
import sys

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from skinbridge.blender import compat, ops_common  # noqa: E402
from skinbridge.io_smd.dmx import blender_io as blender_dmx  # noqa: E402
from skinbridge.io_smd.dmx import dmx, kv2  # noqa: E402

pytestmark = [pytest.mark.blender]

ROOT = pathlib.Path(__file__).resolve().parents[2]
BST = ROOT.parent / "shared" / "interop" / "bst_written"
sys.path.insert(0, str(ROOT / "bench"))
import edit_kinds  # noqa: E402

FILES = ["Cube_Armature_binary5.dmx", "Cube_Armature_kv2.dmx"]  # model format 18: `positions`, `normals`, ...
FIELDS = ("positions", "normals", "textureCoordinates", "jointWeights", "jointIndices", "position$0", "normal$0",
          "texcoord$0", "blendweights$0", "blendindices$0")
# per edit: the (element type, attribute) pairs it may change, the element types it may add, and whether element
# names may change (the renamed bone's joint and transforms)
ALLOWED = {
    "move-vertex": ({("DmeVertexData", a) for a in ("position$0", "normal$0", "positions", "normals")}, set(), False),
    "move-bone-rest": ({("DmeTransform", "position"), ("DmeTransform", "orientation")}, set(), False),
    "rename-bone": (set(), set(), True),
    "add-shape-key": ({("DmeMesh", "deltaStates"), ("DmeMesh", "deltaStateWeights"),
                       ("DmeMesh", "deltaStateWeightsLagged"), ("DmElement", "combinationOperator")},
                      {"DmeVertexDeltaData", "DmeCombinationOperator", "DmeCombinationInputControl"}, False),
    "add-mesh": ({("DmeModel", "children"), ("DmeModel", "jointList")},
                 {"DmeDag", "DmeTransform", "DmeMesh", "DmeVertexData", "DmeFaceSet", "DmeMaterial"}, False),
    "delete-faces": ({("DmeVertexData", a + i) for a in FIELDS for i in ("", "Indices")} | {("DmeFaceSet", "faces")},
                     set(), False),
}


def _export(tmp_path) -> tuple[bytes, list[str]]:
    out = tmp_path / "out"
    out.mkdir(exist_ok=True)
    ops_common.LAST_OUTCOME.warnings = []
    paths, warnings = blender_dmx.export_target(bpy.context, str(out), "model", None)
    return pathlib.Path(paths[0]).read_bytes(), warnings


def _changes(a: bytes, b: bytes) -> tuple[set, set, set, int]:
    """(type, attribute) pairs whose value differs in an element of the same id, element types added, elements
    renamed, elements removed."""
    da, db = dmx.read(a), dmx.read(b)
    assert (db.encoding, db.encoding_version, db.format_version) == (da.encoding, da.encoding_version,
                                                                      da.format_version)
    if da.strings is not None:  # the file's string table, in its order, before any string the edit added
        assert db.strings[:len(da.strings)] == da.strings
    by_id = {e.id: e for e in db.elements}
    changed, renamed, removed = set(), set(), 0
    for e in da.elements:
        f = by_id.get(e.id)
        if f is None:
            removed += 1
            continue
        assert f.type == e.type
        if f.name != e.name:
            renamed.add(e.type)
        assert [x.name for x in f.attributes][:len(e.attributes)] == [x.name for x in e.attributes] or \
            e.type == "DmeVertexData"
        for x in e.attributes:
            y = f.get(x.name)
            if y is None or kv2.value_key(x) != kv2.value_key(y):
                changed.add((e.type, x.name))
        changed |= {(e.type, y.name) for y in f.attributes if e.get(y.name) is None}
    ids = {e.id for e in da.elements}
    added = {e.type for e in db.elements if e.id not in ids}
    return changed, added, renamed, removed


@pytest.mark.default_leg
@pytest.mark.parametrize("name", FILES)
@pytest.mark.parametrize("edit", sorted(ALLOWED))
def test_an_edited_bst_file_keeps_what_was_not_edited(clean_scene, tmp_path, name, edit):
    source = (BST / name).read_bytes()
    assert bpy.ops.import_scene.skinbridge_dmx(filepath=str(BST / name)) == {"FINISHED"}
    edit_kinds.apply(edit)
    written, warnings = _export(tmp_path)
    assert not [w for w in warnings if "written anew" in w]
    changed, added, renamed, removed = _changes(source, written)
    attributes, types, names = ALLOWED[edit]
    assert changed and changed <= attributes or edit == "rename-bone" and not changed
    assert added <= types and (added or not types)
    assert removed == 0
    assert bool(renamed) == names and renamed <= {"DmeJoint", "DmeTransform"}


@pytest.mark.parametrize("name", FILES)
def test_an_unchanged_bst_file_comes_back_byte_for_byte(clean_scene, tmp_path, name):
    assert bpy.ops.import_scene.skinbridge_dmx(filepath=str(BST / name)) == {"FINISHED"}
    assert _export(tmp_path)[0] == (BST / name).read_bytes()


def test_a_moved_vertex_changes_one_position_value_and_keeps_the_others_bits(clean_scene, tmp_path):
    """The one edit case every Blender leg runs."""
    name = "Cube_Armature_binary5.dmx"
    source = (BST / name).read_bytes()
    assert bpy.ops.import_scene.skinbridge_dmx(filepath=str(BST / name)) == {"FINISHED"}
    edit_kinds.apply("move-vertex")
    written, _ = _export(tmp_path)
    before = [e for e in dmx.read(source).elements if e.type == "DmeVertexData"][0].value("positions")
    after = [e for e in dmx.read(written).elements if e.type == "DmeVertexData"][0].value("positions")
    rows = np.flatnonzero((before != after).any(axis=1))
    assert len(rows) == 1  # the one Blender vertex: the other seven keep their bits
    assert len(written) == len(source)  # binary: the same layout, one value's bytes differ


@pytest.mark.default_leg
def test_a_model_without_armature_imported_twice_is_written_as_the_file_was(clean_scene, tmp_path):
    """The copy the second import left selected, as for rigged models; none selected: refused, naming them."""
    path = ROOT.parent / "shared" / "testdata" / "dmx" / "bst_Cube_NoArmature.dmx"
    for _ in range(2):
        assert bpy.ops.import_scene.skinbridge_dmx(filepath=str(path)) == {"FINISHED"}
    assert _export(tmp_path)[0] == path.read_bytes()
    for ob in bpy.context.view_layer.objects:
        ob.select_set(False)
    with pytest.raises(blender_dmx.ExportError, match="2 imported DMX models could be exported"):
        _export(tmp_path)


MOTIONS = [("Throw_kv2.dmx", "Dice_binary5.dmx"), ("../../testdata/dmx/bst_ActionFilter_X_Axis.dmx", None)]


def _motion(name: str, model: str | None) -> bytes:
    """The motion imported as `bench/edits` imports it (its model first), its bytes."""
    if model is not None:
        assert bpy.ops.import_scene.skinbridge_dmx(filepath=str(BST / model)) == {"FINISHED"}
    else:  # the file's own skeleton carries it; a visible mesh: the export needs a model beside the motion
        bpy.ops.mesh.primitive_cube_add()
    blender_dmx.load_motion(bpy.context, str(BST / name), None)
    return (BST / name).read_bytes()


def _motion_export(tmp_path) -> tuple[bytes, list[str]]:
    out = tmp_path / "out"
    out.mkdir(exist_ok=True)
    arm = next(o for o in bpy.data.objects if o.type == "ARMATURE")
    paths, warnings = blender_dmx.export_target(bpy.context, str(out), "model", None)
    act = arm.animation_data.action
    return (out / f"{act.name}.dmx").read_bytes(), warnings


@pytest.mark.default_leg
@pytest.mark.parametrize("name, model", MOTIONS)
def test_an_edited_motion_keeps_what_was_not_edited(clean_scene, tmp_path, name, model):
    """A renamed bone renames its joint, transforms and channels only (BST's Throw, whose file holds a bone the
    Dice rig lacks, and ActionFilter on its own skeleton)."""
    source = _motion(name, model)
    edit_kinds.apply("rename-bone")
    written, warnings = _export_motion_checked(tmp_path)
    changed, added, renamed, removed = _changes(source, written)
    assert not changed and not added and not removed and renamed <= {"DmeJoint", "DmeTransform", "DmeChannel"}
    assert renamed >= {"DmeJoint", "DmeChannel"}


def _export_motion_checked(tmp_path) -> tuple[bytes, list[str]]:
    written, warnings = _motion_export(tmp_path)
    assert not [w for w in warnings if "written anew" in w]
    return written, warnings


@pytest.mark.default_leg
@pytest.mark.parametrize("name, model", MOTIONS)
def test_a_moved_key_changes_that_value_only(clean_scene, tmp_path, name, model):
    source = _motion(name, model)
    edit_kinds.apply("key-move")
    written, _ = _export_motion_checked(tmp_path)
    a, b = dmx.read(source), dmx.read(written)
    diffs = [(e.type, x.name, int(np.flatnonzero((np.asarray(x.value) != np.asarray(y.value)).any(axis=-1)).size))
             for e, f in zip(a.elements, b.elements) for x, y in zip(e.attributes, f.attributes)
             if x.type in dmx.FIXED and not np.array_equal(x.value, y.value)]
    assert [e.id for e in a.elements] == [e.id for e in b.elements]
    assert diffs == [("DmeVector3LogLayer", "values", 1)]


@pytest.mark.default_leg
def test_a_scale_key_on_a_motion_is_warned_about(clean_scene, tmp_path):
    name, model = MOTIONS[1]
    source = _motion(name, model)
    edit_kinds.apply("key-add")  # a key on the scale channel, which has none
    written, warnings = _export_motion_checked(tmp_path)
    assert any("scaled (Bone)" in w and "holds no scale" in w for w in warnings)
    assert written == source  # the rest of the motion as the file had it


@pytest.mark.default_leg
def test_a_moved_rest_in_a_keyvalues2_file_changes_that_coordinate_only(clean_scene, tmp_path):
    """BST's cloth test (keyvalues2): bone `left` moved; its transform and base-state transform change the one
    coordinate that moved, every other number keeps its bits (the record names no "bone": bench/edit_kinds.py)."""
    path = ROOT.parent / "shared" / "testdata" / "dmx" / "bst_cloth_test_simple.dmx"
    assert bpy.ops.import_scene.skinbridge_dmx(filepath=str(path)) == {"FINISHED"}
    edit_kinds.apply("move-bone-rest")
    written, warnings = _export(tmp_path)
    assert not [w for w in warnings if "written anew" in w]
    a, b = dmx.read(path.read_bytes()), dmx.read(written)
    diffs = [(e.type, e.name, x.name, np.flatnonzero(np.asarray(x.value) != np.asarray(y.value)).tolist())
             for e, f in zip(a.elements, b.elements) for x, y in zip(e.attributes, f.attributes)
             if x.type in dmx.FIXED and not np.array_equal(x.value, y.value)]
    assert diffs == [("DmeTransform", "left", "position", [2])] * 2
    assert b.encoding == "keyvalues2" and [e.id for e in a.elements] == [e.id for e in b.elements]


@pytest.mark.default_leg
def test_a_key_deleted_from_one_component_is_warned_about(clean_scene, tmp_path):
    """A DMX position key holds x, y and z together: a key deleted from x alone leaves y's and z's there, so the
    motion keeps its key (x as Blender's curve gives it), and the export says so, naming the bone."""
    name, model = MOTIONS[1]
    source = _motion(name, model)
    (arm,) = [o for o in bpy.data.objects if o.type == "ARMATURE"]
    curves = compat.channelbag_for_slot(arm.animation_data.action, arm.animation_data.action_slot).fcurves
    fc = curves.find('pose.bones["Bone"].location', index=0)
    fc.keyframe_points.remove(fc.keyframe_points[len(fc.keyframe_points) // 2])  # the middle key of x only
    fc.update()
    written, warnings = _export_motion_checked(tmp_path)
    assert any("bone 'Bone': its location is keyed in some of its components only" in w for w in warnings)
    assert written == source


@pytest.mark.default_leg
def test_a_key_after_the_end_is_appended_to_its_channel(clean_scene, tmp_path):
    name, model = MOTIONS[1]
    source = _motion(name, model)
    edit_kinds.apply("key-after-end")  # Bone's location x keyed at frame 12, past the clip's 2 frames
    written, _ = _export_motion_checked(tmp_path)
    a, b = dmx.read(source), dmx.read(written)
    assert [e.id for e in a.elements] == [e.id for e in b.elements]
    (frame_a,), (frame_b,) = ([e for e in f.elements if e.type == "DmeTimeFrame"] for f in (a, b))
    assert int(frame_b.value("duration")) == 5000  # 12 frames at 24 fps, in ticks of 1/10000 s
    for e, f in zip(a.elements, b.elements):
        if e.type == "DmeVector3LogLayer":  # the file's keys, then the new one
            assert np.array_equal(f.value("times")[:-1], e.value("times")) and f.value("times")[-1] == 5000
            assert np.array_equal(f.value("values")[:-1], e.value("values"))
