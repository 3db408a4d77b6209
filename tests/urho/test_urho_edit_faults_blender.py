"""The Urho3D faults the edit campaign found (issue 46, docs/testing.md §6), each edit made with bpy as
`bench/edits` makes it and exported with File › Export's defaults; the files before and after read with our
codec. Before the fixes: an added mesh switched the file from UMDL to UMD2 (and took the bone mappings and
collision data of a skinned model with it); the model imported twice was written as one model holding both; a
deleted face rewrote the other vertices with less precision; a renamed bone or a moved rest wrote the whole
clip again (rotations [1, 0, 0, 0] as [1, -0, -0, -0], key times in their last bits); a shape key added to a
bone-less UMD2 model was lost."""
from __future__ import annotations

import pathlib
import sys

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from skinbridge.blender import ops_common  # noqa: E402
from skinbridge.io_urhox.model import umd2  # noqa: E402
from skinbridge.io_urhox.motion import uani  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "bench"))
import edit_kinds  # noqa: E402

pytestmark = pytest.mark.blender

DEFAULT_LEG = bpy.app.version >= (5, 2)  # the default leg runs every case; the 4.5 and 5.0 legs the first one


def _import(path) -> None:
    assert bpy.ops.import_scene.skinbridge_urhox(filepath=str(path)) == {"FINISHED"}


def _export(path) -> None:
    assert bpy.ops.export_scene.skinbridge_urhox(filepath=str(path)) == {"FINISHED"}


def _mesh():
    return next(o for o in bpy.context.scene.objects if o.type == "MESH")


def _activate(obj, mode: str) -> None:
    if bpy.context.object is not None and bpy.context.object.mode != "OBJECT":
        bpy.ops.object.mode_set(mode="OBJECT")
    for o in bpy.context.view_layer.objects:
        o.select_set(False)
    obj.select_set(True)
    bpy.context.view_layer.objects.active = obj
    bpy.ops.object.mode_set(mode=mode)


def _rows(vb: umd2.VertexBuffer) -> list[bytes]:
    data = np.ascontiguousarray(vb.vertices)
    return [data[i:i + 1].tobytes() for i in range(len(data))]


def _without_vertices(m: umd2.Model) -> bytes:
    """The model's bytes with its vertex and index buffers, geometries, bounds and centres left out: what an edit
    of the mesh leaves alone (magic, bones with their collision data, morphs)."""
    m.vertex_buffers, m.index_buffers, m.geometries = [], [], []
    m.bbox_min = m.bbox_max = np.zeros(3, np.float32)
    m.centers = np.zeros((0, 3), np.float32)
    return umd2.write(m)


@pytest.mark.parametrize("name", ["Box.mdl", "Ninja.mdl"] if DEFAULT_LEG else ["Box.mdl"])
def test_an_added_mesh_keeps_the_files_layout(clean_scene, testdata, tmp_path, name):
    """A cube added beside Box (bone-less UMDL) or Ninja (skinned UMDL, empty bone mappings, bones without
    collision data): the file stays UMDL with its element mask, its vertices come first byte for byte, its
    geometries keep their (empty) bone mappings, and its bones their collision data; the cube is a geometry more."""
    src = testdata / "urho3d" / name
    before = umd2.read(src.read_bytes())
    _import(src)
    bpy.ops.mesh.primitive_cube_add(size=0.2, location=(1.0, 0, 0))
    out = tmp_path / name
    _export(out)
    after = umd2.read(out.read_bytes())
    assert after.magic == "UMDL"
    vb, was = after.vertex_buffers[0], before.vertex_buffers[0]
    assert vb.legacy_mask == was.legacy_mask
    n = len(was.vertices)
    assert len(vb.vertices) > n and _rows(vb)[:n] == _rows(was)
    assert len(after.geometries) == len(before.geometries) + 1
    for g, h in zip(after.geometries, before.geometries):
        assert g.bone_mapping.tolist() == h.bone_mapping.tolist()
    assert _without_vertices(after) == _without_vertices(before)


@pytest.mark.default_leg
def test_a_model_imported_twice_exports_as_it_was(clean_scene, testdata, tmp_path):
    """Box imported twice: the export writes the selected copy (the second import's, as after File › Import),
    the file's bytes, not one model of 48 vertices; with no copy selected it names both and writes nothing."""
    src = testdata / "urho3d" / "Box.mdl"
    _import(src)
    _import(src)
    out = tmp_path / "Box.mdl"
    _export(out)
    assert out.read_bytes() == src.read_bytes()
    for o in bpy.context.view_layer.objects:
        o.select_set(False)
    with pytest.raises(RuntimeError, match=r"2 models could be exported \(Box, Box.001\)"):
        bpy.ops.export_scene.skinbridge_urhox(filepath=str(tmp_path / "none.mdl"))
    assert not (tmp_path / "none.mdl").exists()


@pytest.mark.default_leg
@pytest.mark.parametrize("name", ["Ninja.mdl", "Mushroom.mdl"])
def test_deleted_faces_leave_the_other_vertices_exact(clean_scene, testdata, tmp_path, name):
    """Face 0 deleted in Edit Mode (its vertices used by no other face go with it): every vertex left is its file
    row byte for byte, in the file's order (Ninja's positions and UVs were rewritten in their last bits)."""
    src = testdata / "urho3d" / name
    before = umd2.read(src.read_bytes())
    _import(src)
    obj = _mesh()
    faces = len(obj.data.polygons)
    edit_kinds.apply("delete-faces")  # as the campaign deletes it
    assert len(obj.data.polygons) == faces - 1
    out = tmp_path / name
    _export(out)
    after = umd2.read(out.read_bytes())
    was, now = _rows(before.vertex_buffers[0]), _rows(after.vertex_buffers[0])
    assert len(now) < len(was)
    place = {row: i for i, row in enumerate(was)}
    assert all(row in place for row in now), "a vertex left is not a file row"
    assert [place[row] for row in now] == sorted(place[row] for row in now)
    assert _without_vertices(after) == _without_vertices(before)


@pytest.mark.default_leg
def test_a_shape_key_added_to_a_model_without_bones_is_written(clean_scene, testdata, tmp_path):
    """MaterialPreview (UMD2 without bones, read in UrhoX's axes): a shape key moving one vertex is written as a
    morph of that vertex; the vertices stay the file's (it was dropped with a warning)."""
    src = testdata / "urho3d" / "MaterialPreview.mdl"
    before = umd2.read(src.read_bytes())
    _import(src)
    obj = _mesh()
    obj.shape_key_add(name="Basis", from_mix=False)
    key = obj.shape_key_add(name="Edited", from_mix=False)
    i = obj.data.polygons[0].vertices[0]
    key.data[i].co.x += 0.05
    out = tmp_path / "MaterialPreview.mdl"
    _export(out)
    after = umd2.read(out.read_bytes())
    assert [m.name for m in after.morphs] == ["Edited"]
    (buffer,) = after.morphs[0].buffers
    assert buffer.vertices["index"].tolist() == [i]
    assert np.abs(buffer.vertices["position"][0]).max() == pytest.approx(0.05, rel=1e-5)
    assert _rows(after.vertex_buffers[0]) == _rows(before.vertex_buffers[0])


# -- animations ---------------------------------------------------------------------------------------------

def _with_animation(testdata):
    _import(testdata / "urho3d" / "Ninja.mdl")
    arm = next(o for o in bpy.context.scene.objects if o.type == "ARMATURE")
    _activate(arm, "OBJECT")
    assert bpy.ops.import_anim.skinbridge_urhox_ani(filepath=str(testdata / "urho3d" / "Ninja_Idle1.ani")) == \
        {"FINISHED"}
    return arm


def _export_animation(tmp_path) -> uani.Animation:
    out = tmp_path / "out"
    assert bpy.ops.export_anim.skinbridge_urhox_ani(directory=str(out) + "/") == {"FINISHED"}
    return (out / "Animations" / "Ninja_Idle1.ani").read_bytes()


def _move_rest(arm, name: str) -> None:
    """The bone's rest moved along x by a tenth of its length, head and tail (Edit Mode, as the campaign does)."""
    d = 0.1 * arm.data.bones[name].length
    _activate(arm, "EDIT")
    arm.data.edit_bones[name].head.x += d
    arm.data.edit_bones[name].tail.x += d
    bpy.ops.object.mode_set(mode="OBJECT")


def _bone(arm) -> str:
    """The bone the campaign edits: the first with a parent."""
    return next(b for b in arm.data.bones if b.parent is not None).name


@pytest.mark.default_leg
def test_a_renamed_bone_changes_only_its_tracks_name(clean_scene, testdata, tmp_path):
    src = testdata / "urho3d" / "Ninja_Idle1.ani"
    arm = _with_animation(testdata)
    name = _bone(arm)
    arm.data.bones[name].name = name + "_renamed"
    got = uani.read(_export_animation(tmp_path))
    renamed = [t for t in got.tracks if t.name == name + "_renamed"]
    assert len(renamed) == 1
    renamed[0].name = name
    assert uani.write(got) == src.read_bytes()


@pytest.mark.default_leg
def test_a_moved_rest_changes_only_that_bones_positions(clean_scene, testdata, tmp_path):
    """The rest of a bone moved along x (head and tail): its track's positions follow; its key times, rotations
    and every other track keep their bytes."""
    before = uani.read((testdata / "urho3d" / "Ninja_Idle1.ani").read_bytes())
    arm = _with_animation(testdata)
    name = _bone(arm)
    children = {b.name for b in arm.data.bones[name].children}
    _move_rest(arm, name)
    after = uani.read(_export_animation(tmp_path))
    assert after.length == before.length and len(after.tracks) == len(before.tracks)
    moved = False
    for a, b in zip(before.tracks, after.tracks):
        assert a.name == b.name and a.times.tobytes() == b.times.tobytes()
        assert a.rotations.tobytes() == b.rotations.tobytes(), a.name
        if a.name == name:
            moved = not np.array_equal(a.positions, b.positions)
        elif a.name not in children:
            assert a.positions.tobytes() == b.positions.tobytes(), a.name
    assert moved



@pytest.mark.default_leg
def test_a_moved_rest_reaches_a_track_with_step_keys(clean_scene, testdata, tmp_path):
    """Ninja_HighJump holds step keys (two keys at one time), so import keeps its tracks' keys to write them back;
    once a bone's rest moved, that bone's kept keys no longer say what Blender plays: its track is made again
    (the move was lost: the file came back unchanged). Other tracks keep their bytes."""
    src = testdata / "urho3d" / "Ninja_HighJump.ani"
    before = uani.read(src.read_bytes())
    _import(testdata / "urho3d" / "Ninja.mdl")
    arm = next(o for o in bpy.context.scene.objects if o.type == "ARMATURE")
    _activate(arm, "OBJECT")
    assert bpy.ops.import_anim.skinbridge_urhox_ani(filepath=str(src)) == {"FINISHED"}
    name = next(t.name for t in before.tracks if t.positions is not None and len(t.positions) > 1
                and arm.data.bones[t.name].parent is not None)
    children = {b.name for b in arm.data.bones[name].children_recursive}
    _move_rest(arm, name)
    out = tmp_path / "out"
    assert bpy.ops.export_anim.skinbridge_urhox_ani(directory=str(out) + "/") == {"FINISHED"}
    after = uani.read((out / "Animations" / "Ninja_HighJump.ani").read_bytes())
    assert [t.name for t in after.tracks] == [t.name for t in before.tracks]
    for a, b in zip(before.tracks, after.tracks):
        if a.name == name:
            assert not np.array_equal(a.positions, b.positions), "the moved rest is not in the file"
        elif a.name not in children:
            assert a.positions is None or a.positions.tobytes() == b.positions.tobytes(), a.name


@pytest.mark.default_leg
def test_a_moved_rest_the_animation_holds_no_position_for_is_said(clean_scene, testdata, tmp_path):
    """A track with rotations only (Mutant's, here made from Ninja_Idle1 by our writer): the engine takes that
    bone's position from the model, so a rest moved leaves the animation as it was, and the export says to export
    the model too (it was silent: the campaign counted the edit lost)."""
    records = uani.read((testdata / "urho3d" / "Ninja_Idle1.ani").read_bytes())
    _import(testdata / "urho3d" / "Ninja.mdl")
    arm = next(o for o in bpy.context.scene.objects if o.type == "ARMATURE")
    # a bone whose head is its own (not its parent's tail): moving it along x turns no other bone
    track = next(t for t in records.tracks if arm.data.bones[t.name].parent is not None
                 and not arm.data.bones[t.name].use_connect)
    track.positions, track.channel_mask = None, track.channel_mask & ~1
    src = tmp_path / "Ninja_Idle1.ani"
    src.write_bytes(uani.write(records))
    _activate(arm, "OBJECT")
    assert bpy.ops.import_anim.skinbridge_urhox_ani(filepath=str(src)) == {"FINISHED"}
    name = track.name
    _move_rest(arm, name)
    out = tmp_path / "out"
    assert bpy.ops.export_anim.skinbridge_urhox_ani(directory=str(out) + "/") == {"FINISHED"}
    after = uani.read((out / "Animations" / "Ninja_Idle1.ani").read_bytes())
    below = {b.name for b in arm.data.bones[name].children_recursive}  # their local rests follow (derived)
    for a, b in zip(records.tracks, after.tracks):
        assert a.name == b.name and (a.positions is None) == (b.positions is None)
        if a.name == name:  # made again from Blender's curves on the new rest: no position, the same turns
            assert np.abs(np.abs((a.rotations * b.rotations).sum(axis=1)) - 1).max() < 1e-6
        elif a.name not in below:
            assert a.rotations.tobytes() == b.rotations.tobytes(), a.name
            assert a.positions is None or a.positions.tobytes() == b.positions.tobytes(), a.name
    warned = ops_common.LAST_OUTCOME.warnings
    assert any(f"the rest of {name}" in w and "holds no position for" in w for w in warned), warned
