"""Through Blender: each SMD reference imported and exported again gives the same nodes, triangles, corner
data and links; the animation goes onto the Cube armature and comes back; the VTA becomes a shape key and
comes back in the reference's corner order."""
from __future__ import annotations

import pathlib

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from skinbridge.core.errors import FormatError  # noqa: E402
from skinbridge.io_smd.smd import check  # noqa: E402
from skinbridge.io_smd.smd import convert  # noqa: E402
from skinbridge.io_smd.smd import smd  # noqa: E402
from support.blender_scenes import walking_humanoid  # noqa: E402

pytestmark = pytest.mark.blender

SMD_DIR = pathlib.Path(__file__).resolve().parents[2].parent / "shared" / "testdata" / "smd"
REFS = ["bst_Cube_Armature_ref.smd", "bst_Cube_Armature_GoldSource_ref.smd", "bst_Cube_NoArmature_ref.smd",
        "bst_Curve_Armature_BezierCurve_ref.smd", "bst_Overlapping_DifferentWeights.smd"]


def _close(a, b, what):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    tol = np.maximum(1e-5, 4 * np.spacing(np.abs(b).astype(np.float32)).astype(np.float64))
    bad = np.abs(a - b) > tol
    assert not bad.any(), f"{what}: max difference {np.abs(a - b).max()}"


def _links(t: smd.Triangles):
    return [[(int(b), float(w)) for b, w in zip(t.link_bones[i], t.link_weights[i]) if b >= 0]
            for i in range(len(t.parents))]


@pytest.mark.parametrize("name", REFS)
def test_reference_round_trip(clean_scene, tmp_path, name):
    path = SMD_DIR / name
    original = smd.read(path.read_bytes())
    assert bpy.ops.import_scene.skinbridge_smd(filepath=str(path)) == {"FINISHED"}
    meshes = [o for o in bpy.data.objects if o.type == "MESH"]
    assert len(meshes) == 1
    assert len(meshes[0].data.vertices) == {"bst_Curve_Armature_BezierCurve_ref.smd": 26,
                                            "bst_Overlapping_DifferentWeights.smd": 6}.get(name, 8)
    assert (len([o for o in bpy.data.objects if o.type == "ARMATURE"]) == 0) == ("NoArmature" in name)
    out = tmp_path / name
    assert bpy.ops.export_scene.skinbridge_smd(filepath=str(out)) == {"FINISHED"}
    data = out.read_bytes()
    again = smd.read(data)
    assert (b"\r\n" in data) == (original.newline == "\r\n")
    assert [(n.id, n.name, n.parent) for n in again.nodes] == [(n.id, n.name, n.parent) for n in original.nodes]
    _close(again.skeleton[0].positions, original.skeleton[0].positions, "rest positions")
    _close(convert.euler_to_matrix3(again.skeleton[0].rotations),
           convert.euler_to_matrix3(original.skeleton[0].rotations), "rest rotations")
    t, o = again.triangles, original.triangles
    assert t.materials == o.materials
    _close(t.positions, o.positions, "positions")
    _close(t.normals, o.normals, "normals")
    _close(t.uvs, o.uvs, "uvs")
    assert t.parents.tolist() == o.parents.tolist()
    assert t.link_counts.tolist() == o.link_counts.tolist()
    la, lb = _links(t), _links(o)
    assert [[b for b, _ in x] for x in la] == [[b for b, _ in x] for x in lb]
    assert max((abs(x[1] - y[1]) for u, v in zip(la, lb) for x, y in zip(u, v)), default=0) <= 1e-6
    # these files come from Blender Source Tools: the whole file comes back token by token
    assert check.token_difference(path.read_bytes(), data) is None


def test_animation_onto_the_cube_armature(clean_scene, tmp_path):
    assert bpy.ops.import_scene.skinbridge_smd(filepath=str(SMD_DIR / "bst_Cube_Armature_ref.smd")) == {"FINISHED"}
    anim_path = SMD_DIR / "bst_ActionFilter_X_Axis_anim.smd"
    arms = [o for o in bpy.data.objects if o.type == "ARMATURE"]
    assert bpy.ops.import_scene.skinbridge_smd(filepath=str(anim_path)) == {"FINISHED"}
    assert len([o for o in bpy.data.objects if o.type == "ARMATURE"]) == 1  # no second armature
    act = arms[0].animation_data.action
    assert act is not None and act.name == "bst_ActionFilter_X_Axis_anim"
    from skinbridge.io_smd.smd import blender_io

    written, _ = blender_io.export_animations(bpy.context, str(tmp_path), arms[0], actions=[act])
    again = smd.read(pathlib.Path(written[0]).read_bytes())
    out = tmp_path / "op" / "cube.smd"
    assert bpy.ops.export_scene.skinbridge_smd(filepath=str(out), animations=True) == {"FINISHED"}
    assert (out.parent / "cube.qc").read_text().endswith(
        '$body "cube" "cube.smd"\n$sequence "bst_ActionFilter_X_Axis_anim" "bst_ActionFilter_X_Axis_anim.smd" fps 24\n')
    original = smd.read(anim_path.read_bytes())
    assert [fr.time for fr in again.skeleton] == [0, 1, 2]
    _, pos_a, rot_a = convert.frame_table(again)
    _, pos_o, rot_o = convert.frame_table(original)
    assert np.abs(pos_a - pos_o).max() <= 1e-5
    assert np.abs(convert.euler_to_matrix3(rot_a) - convert.euler_to_matrix3(rot_o)).max() <= 1e-5


def test_animation_with_several_armatures_is_refused(clean_scene):
    for _ in range(2):
        assert bpy.ops.import_scene.skinbridge_smd(filepath=str(SMD_DIR / "bst_Cube_Armature_ref.smd")) == \
            {"FINISHED"}
    for o in bpy.data.objects:
        o.select_set(False)
    bpy.context.view_layer.objects.active = None
    before = len(bpy.data.actions)
    from skinbridge.core.errors import ExportError
    from skinbridge.io_smd.smd import blender_io

    with pytest.raises(ExportError, match="2 armatures"):
        blender_io.import_file(bpy.context, str(SMD_DIR / "bst_ActionFilter_X_Axis_anim.smd"))
    assert len(bpy.data.actions) == before


def test_animation_without_armature_builds_one(clean_scene):
    assert bpy.ops.import_scene.skinbridge_smd(filepath=str(SMD_DIR / "bst_ActionFilter_X_Axis_anim.smd")) == \
        {"FINISHED"}
    arms = [o for o in bpy.data.objects if o.type == "ARMATURE"]
    assert len(arms) == 1 and sorted(arms[0].data.bones.keys()) == ["Bone", "blender_implicit"]


def _cube_with_shape_key():
    """Blender Source Tools' cube and its VTA imported through the operator: (the mesh object, the VTA's path)."""
    assert bpy.ops.import_scene.skinbridge_smd(filepath=str(SMD_DIR / "bst_Cube_NoArmature_ref.smd")) == \
        {"FINISHED"}
    vta = SMD_DIR / "bst_Cube_NoArmature_flex.vta"
    assert bpy.ops.import_scene.skinbridge_smd(filepath=str(vta)) == {"FINISHED"}
    ob = next(o for o in bpy.data.objects if o.type == "MESH")
    return ob, vta


def test_vta_shape_key_and_back(clean_scene, tmp_path):
    ob, vta = _cube_with_shape_key()
    assert [kb.name for kb in ob.data.shape_keys.key_blocks] == ["Basis", "Key 1"]
    out = tmp_path / "cube.smd"
    assert bpy.ops.export_scene.skinbridge_smd(filepath=str(out)) == {"FINISHED"}
    again = smd.read((tmp_path / "cube.vta").read_bytes())
    original = smd.read(vta.read_bytes())
    assert [(f.time, f.comment) for f in again.vertex_animation] == [(0, None), (1, "Key 1")]
    assert again.vertex_animation[1].vertices.tolist() == original.vertex_animation[1].vertices.tolist()
    _close(again.vertex_animation[1].positions, original.vertex_animation[1].positions, "shape positions")


def test_vta_import_shows_the_basis_and_writes_the_same_vta(clean_scene, tmp_path):
    ob, vta = _cube_with_shape_key()
    keys = ob.data.shape_keys.key_blocks
    assert [kb.value for kb in keys[1:]] == [0.0] and not ob.show_only_shape_key
    n = len(ob.data.vertices)
    basis, shown = np.empty(n * 3, np.float32), np.empty(n * 3, np.float32)
    keys[0].points.foreach_get("co", basis)
    ob.evaluated_get(bpy.context.evaluated_depsgraph_get()).data.vertices.foreach_get("co", shown)
    moved = np.empty(n * 3, np.float32)
    keys[1].points.foreach_get("co", moved)
    assert np.abs(moved - basis).max() > 0.5  # the shape does move the cube: showing it would be seen
    assert np.array_equal(shown, basis)
    assert bpy.ops.export_scene.skinbridge_smd(filepath=str(tmp_path / "cube.smd")) == {"FINISHED"}
    assert (tmp_path / "cube.vta").read_bytes() == vta.read_bytes()
    assert [kb.value for kb in keys[1:]] == [0.0]


def test_vta_row_matching_nothing_is_refused(clean_scene, tmp_path):
    assert bpy.ops.import_scene.skinbridge_smd(filepath=str(SMD_DIR / "bst_Cube_Armature_ref.smd")) == \
        {"FINISHED"}
    bad = (SMD_DIR / "bst_Cube_NoArmature_flex.vta").read_bytes().replace(b"\n35 -1.000000 1.000000 1.000000",
                                                                         b"\n35 -7.000000 1.000000 1.000000", 1)
    path = tmp_path / "bad_flex.vta"
    path.write_bytes(bad)
    bpy.context.view_layer.objects.active = next(o for o in bpy.data.objects if o.type == "MESH")
    from skinbridge.io_smd.smd import blender_io

    with pytest.raises(FormatError, match="line 46"):
        blender_io.import_file(bpy.context, str(path))


def test_demo_rows(clean_scene, tmp_path):
    from skinbridge import formats
    from skinbridge.app.options import ConvertOptions

    arm_ob, mesh_ob = walking_humanoid(1)
    rows, _ = formats.get("smd").get("demo")(bpy.context, str(tmp_path), arm_ob, mesh_ob, ConvertOptions(target="smd"))
    assert [r.exporter for r in rows] == ["Valve SMD reference", "Valve SMD animation"]
    assert all(r.ok for r in rows), [r.checked for r in rows]
    assert bpy.context.scene.frame_current == 1


def test_export_target_writes_reference_vta_and_actions(clean_scene, tmp_path):
    from skinbridge import formats
    from skinbridge.app.options import ConvertOptions

    spec = formats.get("smd")
    spec.get("blender_import")(bpy.context, str(SMD_DIR / "bst_Cube_NoArmature_ref.smd"), ConvertOptions())
    spec.get("motion_loader")(bpy.context, str(SMD_DIR / "bst_Cube_NoArmature_flex.vta"), None, ConvertOptions())
    written, _ = spec.get("export_target")(bpy.context, str(tmp_path), "cube", ConvertOptions(target="smd"))
    assert [pathlib.Path(p).name for p in written] == ["cube.smd", "cube.vta", "cube.qc"]
    assert (tmp_path / "cube.vta").read_bytes() == (SMD_DIR / "bst_Cube_NoArmature_flex.vta").read_bytes()
    assert '$model "cube" "cube.smd"\n{\n\tflexfile "cube.vta"\n}\n' in (tmp_path / "cube.qc").read_text()


def test_import_refuses_a_cycle_and_creates_nothing(clean_scene, tmp_path):
    from skinbridge.io_smd.smd import blender_io

    bad = tmp_path / "cycle.smd"
    bad.write_bytes(b'version 1\nnodes\n0 "a" 1\n1 "b" 0\nend\nskeleton\ntime 0\n0 0 0 0 0 0 0\nend\ntriangles\nm\n'
                    b'0 0 0 0 0 0 1 0 0\n0 1 0 0 0 0 1 1 0\n0 0 1 0 0 0 1 0 1\nend\n')
    before = (len(bpy.data.objects), len(bpy.data.meshes), len(bpy.data.armatures))
    with pytest.raises(FormatError, match=r"line [34]: .*cycle"):
        blender_io.import_file(bpy.context, str(bad))
    assert (len(bpy.data.objects), len(bpy.data.meshes), len(bpy.data.armatures)) == before
    with pytest.raises(RuntimeError, match=r"cycle.smd: .*line 3: .*cycle"):  # the operator's ERROR report
        bpy.ops.import_scene.skinbridge_smd(filepath=str(bad))


def test_degenerate_triangle_is_skipped_with_its_corners(clean_scene, tmp_path):
    path = tmp_path / "degenerate.smd"
    path.write_bytes(b'version 1\nnodes\n0 "root" -1\nend\nskeleton\ntime 0\n0 0 0 0 0 0 0\nend\ntriangles\nm\n'
                     b'0 0 0 0 0 0 1 0 0 0\n0 1 0 0 0 0 1 1 0 0\n0 0 1 0 0 0 1 0 1 0\nm\n'
                     b'0 0 0 0 0 0 1 0 0 0\n0 0 0 0 0 0 1 0 0 0\n0 0 1 0 0 0 1 0 1 0\nm\n'
                     b'0 0 1 0 0 0 1 0.5 0.5 0\n0 1 0 0 0 0 1 0.25 0.75 0\n0 1 1 0 0 0 1 1 1 0\nend\n')
    from skinbridge.io_smd.smd import blender_io

    warnings = blender_io.import_file(bpy.context, str(path))
    assert any("degenerate" in w for w in warnings)
    me = next(o for o in bpy.data.objects if o.type == "MESH").data
    assert len(me.polygons) == 2
    uv = np.empty(len(me.loops) * 2, np.float32)
    me.uv_layers[0].uv.foreach_get("vector", uv)
    assert uv.reshape(-1, 2)[3:].tolist() == [[0.5, 0.5], [0.25, 0.75], [1.0, 1.0]]


def test_export_in_the_other_flavour(clean_scene, tmp_path):
    assert bpy.ops.import_scene.skinbridge_smd(filepath=str(SMD_DIR / "bst_Cube_Armature_ref.smd")) == {"FINISHED"}
    out = tmp_path / "gold.smd"
    assert bpy.ops.export_scene.skinbridge_smd(filepath=str(out), flavour="GOLDSRC") == {"FINISHED"}
    data = out.read_bytes()
    gold = (SMD_DIR / "bst_Cube_Armature_GoldSource_ref.smd").read_bytes()
    assert data.count(b"\r\n") == data.count(b"\n")
    # the GoldSrc file of the same cube: each corner on its one bone in the parent column
    assert check.token_difference(gold, data) is None


def test_goldsrc_written_as_source_has_links(clean_scene, tmp_path):
    assert bpy.ops.import_scene.skinbridge_smd(filepath=str(SMD_DIR / "bst_Cube_Armature_GoldSource_ref.smd")) == \
        {"FINISHED"}
    out = tmp_path / "source.smd"
    assert bpy.ops.export_scene.skinbridge_smd(filepath=str(out), flavour="SOURCE") == {"FINISHED"}
    t = smd.read(out.read_bytes()).triangles
    assert b"\r\n" not in out.read_bytes()
    assert set(t.link_counts.tolist()) == {1} and set(t.link_bones[:, 0].tolist()) == {1}
    assert set(t.link_weights[:, 0].tolist()) == {1.0}
