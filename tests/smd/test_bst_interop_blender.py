"""Files Blender Source Tools writes (issue 47), imported into Blender: each model DMX lands where BST's own SMD
of the same scene puts it, vertex for vertex in world space; its shared vertices and polygons stay shared and
polygons through an edit; motions on an armature alone export, keys after the last frame too."""
from __future__ import annotations

import pathlib

import numpy as np
import pytest
from scipy.spatial import cKDTree

bpy = pytest.importorskip("bpy")

from skinbridge import formats  # noqa: E402
from skinbridge.io_smd.dmx import blender_io as blender_dmx  # noqa: E402
from skinbridge.blender import action as bact  # noqa: E402
from skinbridge.blender import compat  # noqa: E402
from skinbridge.io_smd.dmx import convert as dmx_convert  # noqa: E402
from skinbridge.io_smd.dmx import dmx  # noqa: E402
from skinbridge.io_smd.smd import convert as smd_convert  # noqa: E402
from skinbridge.io_smd.smd import smd  # noqa: E402

pytestmark = [pytest.mark.blender]

FULL = bpy.app.version >= (5, 2)  # the default leg runs every case; the 4.5 and 5.0 legs the first of each list


def _cases(items: list) -> list:
    return items if FULL else items[:1]


TOL = 1e-5
# the model DMX written by BST beside its SMD of the same scene (issue 47, must-show 1)
SAME_SCENE = [("AllTypes_binary9.dmx", "AllTypes.smd"), ("Cube_Armature_binary5.dmx", "Cube_Armature.smd"),
              ("Cube_Armature_kv2.dmx", "Cube_Armature.smd"), ("BezierCurve_kv2.dmx", "BezierCurve.smd"),
              ("Dice_binary5.dmx", "Dice.smd")]


def _import(path) -> list:
    """The mesh objects one import made."""
    before = set(bpy.data.objects)
    formats.identify_file(path).get("blender_import")(bpy.context, str(path), None)
    return [o for o in bpy.data.objects if o not in before and o.type == "MESH"]


def _world(objects: list) -> np.ndarray:
    """The objects' vertex positions in world space (the meshes as built: no modifier applied)."""
    out = []
    for ob in objects:
        co = np.empty(len(ob.data.vertices) * 3, np.float32)
        ob.data.vertices.foreach_get("co", co)
        m = np.array(ob.matrix_world, np.float64)
        out.append(co.reshape(-1, 3).astype(np.float64) @ m[:3, :3].T + m[:3, 3])
    return np.concatenate(out)


def _farthest(a: np.ndarray, b: np.ndarray) -> float:
    """How far the point of `a` farthest from every point of `b` lies from its nearest one."""
    return float(cKDTree(b).query(a)[0].max())


@pytest.mark.parametrize("model, smd", _cases(SAME_SCENE))
def test_bst_dmx_lands_where_bst_smd_of_the_same_scene_does(clean_scene, interop, model, smd):
    dmx_points = _world(_import(interop / "bst_written" / model))
    smd_points = _world(_import(interop / "bst_written" / smd))
    assert _farthest(dmx_points, smd_points) <= TOL and _farthest(smd_points, dmx_points) <= TOL


def _export(tmp_path, name: str) -> bytes:
    out = tmp_path / name
    out.mkdir()
    paths, _ = blender_dmx.export_target(bpy.context, str(out), "model", None)
    return pathlib.Path(paths[0]).read_bytes()


def _faces(data: bytes) -> tuple[int, list[int]]:
    """Position values of the file's one mesh and the corner count of each face."""
    f = dmx.read(data)
    (vertex_data,) = {id(e): e for e in f.elements if e.type == "DmeVertexData"}.values()
    sizes = []
    for e in f.elements:
        if e.type == "DmeFaceSet":
            faces = np.asarray(e.value("faces"))
            sizes += (np.diff(np.concatenate([[-1], np.flatnonzero(faces == -1)])) - 1).tolist()
    return len(vertex_data.value("position$0", vertex_data.value("positions"))), sizes


@pytest.mark.parametrize("name", _cases(["Cube_Armature_binary5.dmx", "Cube_Armature_kv2.dmx"]))
def test_bst_cube_is_8_vertices_and_6_quads_and_writes_them_back_edited(clean_scene, interop, tmp_path, name):
    path = interop / "bst_written" / name
    (ob,) = _import(path)
    assert len(ob.data.vertices) == 8 and [len(p.vertices) for p in ob.data.polygons] == [4] * 6
    assert _faces(path.read_bytes()) == (8, [4] * 6)
    assert _export(tmp_path, "same") == path.read_bytes()  # unchanged: the file's own bytes
    ob.data.vertices[0].co.z += 0.25  # one vertex moves every face at it, the surface stays closed
    moved = _export(tmp_path, "moved")
    assert moved != path.read_bytes() and _faces(moved) == (8, [4] * 6)


MOTIONS = [("smd", "smd/bst_ActionFilter_X_Axis_anim.smd"), ("dmx", "dmx/bst_ActionFilter_X_Axis.dmx")]


def _last_frame(fmt: str, data: bytes) -> float:
    """The last frame of the one motion a written file holds (the scene's 24 fps)."""
    if fmt == "smd":
        return float(max(fr.time for fr in smd.read(data).skeleton))
    (anim,) = dmx_convert.to_scene(dmx.read(data), "x")[0].animations
    return anim.length * 24


@pytest.mark.parametrize("fmt, name", _cases(MOTIONS))
def test_an_armature_alone_exports_its_motion_and_a_key_after_its_last_frame(clean_scene, testdata, tmp_path, fmt,
                                                                              name):
    """BST's walkn (an armature with actions, no mesh) exports as BST does; the import leaves no manual frame
    range, so a key added after the last frame is written."""
    path = testdata / name
    formats.identify_file(path).get("motion_loader")(bpy.context, str(path), None, None)
    (arm,) = [o for o in bpy.data.objects if o.type == "ARMATURE"]
    assert not [o for o in bpy.data.objects if o.type == "MESH"]
    act = arm.animation_data.action
    assert not act.use_frame_range
    export = getattr(bpy.ops.export_scene, f"skinbridge_{fmt}")
    (tmp_path / "same").mkdir()
    assert export(filepath=str(tmp_path / "same" / f"model.{fmt}")) == {"FINISHED"}
    assert (tmp_path / "same" / f"{act.name}.{fmt}").read_bytes() == path.read_bytes()
    fc = next(iter(compat.channelbag_for_slot(act, arm.animation_data.action_slot).fcurves))
    last = max(k.co.x for k in fc.keyframe_points)
    fc.keyframe_points.insert(last + 10, fc.evaluate(last) + 0.1)
    (tmp_path / "after").mkdir()
    assert export(filepath=str(tmp_path / "after" / f"model.{fmt}")) == {"FINISHED"}
    assert _last_frame(fmt, (tmp_path / "after" / f"{act.name}.{fmt}").read_bytes()) == pytest.approx(last + 10)


def _materials(data: bytes) -> set[tuple[str, str]]:
    return {(e.name, e.value("mtlName")) for e in dmx.read(data).elements if e.type == "DmeMaterial"}


def test_edited_export_writes_the_material_names_and_folder_the_file_has(clean_scene, interop, tmp_path):
    """AllTypes' 6 meshes share 4 materials in `models/`: one Blender material each, and an edited export
    writes `models/uv` again even where Blender named the material `uv.001` (a material `uv` was there)."""
    bpy.data.materials.new("uv")
    path = interop / "bst_written" / "AllTypes_binary9.dmx"
    meshes = _import(path)
    used = {m.name for ob in meshes for m in ob.data.materials}
    assert used == {"uv.001", "Wrinkle", "no_material", "White"}
    meshes[0].data.vertices[0].co.z += 0.25
    assert _materials(_export(tmp_path, "moved")) == _materials(path.read_bytes())
    bpy.data.materials["White"].name = "Black"  # a renamed material: its new name, in the file's folder
    assert ("Black", "models/Black") in _materials(_export(tmp_path, "renamed"))


@pytest.mark.parametrize("name", _cases(["AllTypes.smd", "BezierCurve.smd", "Cube_Armature.smd", "Dice.smd"]))
def test_bst_smd_comes_back_byte_for_byte_unchanged(clean_scene, interop, tmp_path, name):
    """BST lists a corner's weight links in its own order: the export, whose order differs, keeps the file."""
    path = interop / "bst_written" / name
    _import(path)
    out = tmp_path / "out"
    out.mkdir()
    assert bpy.ops.export_scene.skinbridge_smd(filepath=str(out / name)) == {"FINISHED"}
    assert (out / name).read_bytes() == path.read_bytes()


def test_a_dmx_mesh_without_weights_is_written_without_them(clean_scene, interop, tmp_path):
    """BST's Dice: its mesh has no weights and its one bone is the vertex animation's; an edited export writes
    the mesh without weights again rather than on that bone."""
    path = interop / "bst_written" / "Dice_binary5.dmx"
    (ob,) = _import(path)
    assert not ob.vertex_groups
    assert _export(tmp_path, "same") == path.read_bytes()
    ob.data.shape_keys.key_blocks[0].data[0].co.z += 0.25  # the basis key: what the export reads
    f = dmx.read(_export(tmp_path, "moved"))
    assert f.format_version == 18  # the file with the edit in it (io_smd/dmx/patch.py)
    (data,) = [e for e in f.elements if e.type == "DmeVertexData"]
    assert int(data.value("jointCount")) == 0 and data.get("jointWeights") is None
    assert data.get("blendweights$0") is None


def _corner_fields(data: bytes) -> dict[str, np.ndarray]:
    """Each cloth / paint / balance field's value at every face corner of the file, sorted (the corners'
    order is the writer's)."""
    f = dmx.read(data)
    (vd,) = {id(e): e for e in f.elements if e.type == "DmeVertexData"}.values()
    corners = np.concatenate([np.asarray(e.value("faces")) for e in f.elements if e.type == "DmeFaceSet"])
    corners = corners[corners >= 0]
    out = {}
    for name in vd.value("vertexFormat"):
        if name.startswith(("cloth_enable", "VertexPaint", "balance")):
            values = np.asarray(vd.value(name), np.float64).reshape(len(vd.value(name)), -1)
            rows = values[np.asarray(vd.value(name + "Indices"))[corners]]
            out[name] = rows[np.lexsort(rows.T[::-1])]
    return out


def test_cloth_paint_and_balance_maps_are_kept_and_written_back(clean_scene, testdata, interop, tmp_path):
    assert any("balance$0" in ob.data.attributes for ob in _import(interop / "bst_written" / "AllTypes_binary9.dmx"))
    bpy.ops.wm.read_factory_settings(use_empty=True)
    path = testdata / "dmx" / "bst_cloth_test_simple.dmx"
    (ob,) = _import(path)
    want = _corner_fields(path.read_bytes())
    assert want and set(want) <= set(ob.data.attributes.keys())
    keys = ob.data.shape_keys
    (keys.key_blocks[0].data if keys else ob.data.vertices)[0].co.z += 0.25
    written = _export(tmp_path, "moved")
    assert dmx.read(written).format_version == 22  # written from Blender
    got = _corner_fields(written)
    assert got.keys() == want.keys() and all(np.allclose(got[k], want[k], atol=1e-6) for k in want)


def test_an_edited_motion_writes_the_rest_rotation_without_negative_zeros(clean_scene, testdata, tmp_path):
    """BST's ActionFilter motion with a key moved: its `blender_implicit` rows (0 0 0 in the file) come back
    as zeros, not -0 (which `skinbridge diff` rightly names a change)."""
    path = testdata / "smd" / "bst_ActionFilter_X_Axis_anim.smd"
    formats.identify_file(path).get("motion_loader")(bpy.context, str(path), None, None)
    (arm,) = [o for o in bpy.data.objects if o.type == "ARMATURE"]
    act = arm.animation_data.action
    bag = compat.channelbag_for_slot(act, arm.animation_data.action_slot)
    fc = next(f for f in bag.fcurves if f.data_path == 'pose.bones["Bone"].location' and f.array_index == 1)
    fc.keyframe_points[1].co.y += 0.1
    fc.update()
    assert bpy.ops.export_scene.skinbridge_smd(filepath=str(tmp_path / "model.smd")) == {"FINISHED"}
    written = smd.read((tmp_path / f"{act.name}.smd").read_bytes())
    rows = np.concatenate([fr.rotations[fr.bones == 0] for fr in written.skeleton])
    assert len(rows) == 3 and not np.signbit(rows).any()


@pytest.mark.parametrize("name", _cases(["Throw_kv2.dmx", "AllTypes_ArmatureAction_kv2.dmx"]))
def test_bst_keyvalues2_motion_poses_as_the_file_says(clean_scene, interop, name):
    """BST's keyvalues2 motions (refused before issue 47) import as one action whose keys pose every bone as
    the file's own channels do."""
    path = interop / "bst_written" / name
    scene, _ = dmx_convert.load(str(path), path.read_bytes())
    formats.identify_file(path).get("blender_import")(bpy.context, str(path), None)
    (arm,) = [o for o in bpy.data.objects if o.type == "ARMATURE"]
    (anim,) = scene.animations
    got, _ = bact.read_action(bpy.context, arm, arm.animation_data.action)
    rate = anim.extras["fps"]
    seconds = np.arange(int(round(anim.length * rate)) + 1) / rate
    want = smd_convert.animation_locals(scene.skeleton, anim, seconds)
    have = smd_convert.animation_locals(scene.skeleton, got, seconds)
    assert len(seconds) > 1 and np.abs(have - want).max() <= TOL * max(1.0, float(np.abs(want[..., :3, 3]).max()))


def test_an_edited_motion_keeps_the_files_comments_and_untouched_rows(clean_scene, testdata, tmp_path):
    """A key added after the last frame of a motion whose file opens with a comment (as Crowbar's do) and
    spells its rows its own way (BST's `0 0 0`, `-0.000000`): the comment and every untouched row come back as
    the file has them, the new frames after them."""
    source = b"// Created by Crowbar 0.74\n" + (testdata / "smd" / "bst_ActionFilter_X_Axis_anim.smd").read_bytes()
    path = tmp_path / "walk.smd"
    path.write_bytes(source)
    formats.identify_file(path).get("motion_loader")(bpy.context, str(path), None, None)
    (arm,) = [o for o in bpy.data.objects if o.type == "ARMATURE"]
    bag = compat.channelbag_for_slot(arm.animation_data.action, arm.animation_data.action_slot)
    fc = next(f for f in bag.fcurves if f.data_path == 'pose.bones["Bone"].location' and f.array_index == 1)
    fc.keyframe_points.insert(12, 0.5)
    (tmp_path / "out").mkdir()
    assert bpy.ops.export_scene.skinbridge_smd(filepath=str(tmp_path / "out" / "model.smd")) == {"FINISHED"}
    written = (tmp_path / "out" / "walk.smd").read_bytes()
    assert written.startswith(b"// Created by Crowbar 0.74\nversion 1\n")
    old, new = smd.read(source), smd.read(written)
    assert len(new.skeleton) == 13
    for a, b in zip(old.skeleton, new.skeleton):
        for x, y in ((a.positions, b.positions), (a.rotations, b.rotations)):
            assert np.array_equal(x, y) and np.array_equal(np.signbit(x), np.signbit(y))


def test_an_smd_imported_twice_writes_its_material_names_without_blenders_suffix(clean_scene, interop, tmp_path):
    """The second import of BST's Cube gets Blender's `no_material.001`; its export writes the file's name."""
    path = interop / "bst_written" / "Cube_Armature.smd"
    _import(path)
    _import(path)
    assert sorted(m.name for m in bpy.data.materials) == ["no_material", "no_material.001"]
    second = [o for o in bpy.data.objects if o.type == "ARMATURE"][1]
    for ob in bpy.context.view_layer.objects:
        ob.select_set(ob == second)
    bpy.context.view_layer.objects.active = second
    assert bpy.ops.export_scene.skinbridge_smd(filepath=str(tmp_path / "model.smd")) == {"FINISHED"}
    assert set(smd.read((tmp_path / "model.smd").read_bytes()).triangles.materials) == {"no_material"}


def test_a_vta_onto_a_mesh_that_has_its_shapes_updates_them(clean_scene, testdata, tmp_path):
    """BST's Cube as DMX (its shape `Key 1` a delta state), then BST's VTA of the same Cube: the one key is
    updated, not copied as `Key 1.001`, and the VTA written back holds the basis and that one shape."""
    (ob,) = _import(testdata / "dmx" / "bst_Cube_NoArmature.dmx")
    names = [k.name for k in ob.data.shape_keys.key_blocks]
    vta = testdata / "smd" / "bst_Cube_NoArmature_flex.vta"
    formats.identify_file(vta).get("motion_loader")(bpy.context, str(vta), None, None)
    assert [k.name for k in ob.data.shape_keys.key_blocks] == names == ["Basis", "Key 1"]
    assert bpy.ops.export_scene.skinbridge_smd(filepath=str(tmp_path / "model.smd")) == {"FINISHED"}
    assert len(smd.read((tmp_path / "model.vta").read_bytes()).vertex_animation) == 2


def test_a_mesh_added_to_a_plain_reference_goes_under_the_files_node(clean_scene, testdata, tmp_path):
    """A plain reference whose one node is BST's `blender_implicit` (the shared Cube with its node so named)
    and a mesh added beside it: the export keeps the file's node rather than making `root`."""
    path = tmp_path / "cube.smd"
    path.write_bytes((testdata / "smd" / "bst_Cube_NoArmature_ref.smd").read_bytes().replace(
        b'0 "root" -1', b'0 "blender_implicit" -1'))
    _import(path)
    bpy.ops.mesh.primitive_cube_add(location=(5, 0, 0))
    assert bpy.ops.export_scene.skinbridge_smd(filepath=str(tmp_path / "model.smd")) == {"FINISHED"}
    written = smd.read((tmp_path / "model.smd").read_bytes())
    assert [n.name for n in written.nodes] == ["blender_implicit"] and len(written.triangles) == 24
