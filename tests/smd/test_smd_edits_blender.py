"""The SMD / VTA faults the edit campaign found on Valve Source files (issue 47, docs/testing.md §6), each edit
made with bpy as `bench/edits` makes it (bench/edit_kinds.py) and exported with File › Export's defaults; the
files before and after read with our codec. Before the fixes: a shape key made in Blender went to the VTA beside
the reference without a word (the SMD compared came back unchanged); the file imported twice was written with
both copies (triangles doubled, a VTA's vertices doubled); a renamed bone or a moved rest wrote every other
corner of a Crowbar file again from Blender's float32 (19.678979 → 19.67898); a mesh added beside the file's
dropped its opening comment lines; a scale key, which an SMD bone row cannot hold, was dropped silently."""
from __future__ import annotations

import pathlib
import sys

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from skinbridge.blender import ops_common  # noqa: E402
from skinbridge.io_smd.smd import smd  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "bench"))
import edit_kinds  # noqa: E402
from support.smd_texts import DROPPED_TRIANGLE_REF, RIG3  # noqa: E402

pytestmark = pytest.mark.blender

DEFAULT_LEG = bpy.app.version >= (5, 2)  # the default leg runs every case; the 4.5 and 5.0 legs the first one
SHARED = pathlib.Path(__file__).resolve().parents[2].parent / "shared" / "testdata"
CUBE = SHARED / "smd" / "bst_Cube_NoArmature_ref.smd"  # one node, no links: a plain mesh
CUBE_VTA = SHARED / "smd" / "bst_Cube_NoArmature_flex.vta"
X_AXIS = SHARED / "smd" / "bst_ActionFilter_X_Axis_anim.smd"  # every frame of every bone keyed, no scale
CHARGER = SHARED / "qc" / "health_charger001"  # Crowbar's decompile: a comment line, six-decimal values


def _import(path) -> None:
    assert bpy.ops.import_scene.skinbridge_smd(filepath=str(path)) == {"FINISHED"}


def _export(path) -> list[str]:
    ops_common.LAST_OUTCOME.warnings = []
    assert bpy.ops.export_scene.skinbridge_smd(filepath=str(path)) == {"FINISHED"}
    return list(ops_common.LAST_OUTCOME.warnings)


def test_a_shape_key_made_in_blender_is_written_to_the_vta_and_said(clean_scene, tmp_path):
    """Cube (no VTA): a shape key added moves one corner set in <name>.vta beside the reference, the reference
    keeps its bytes, and the export's warning names the key and the VTA file (the campaign's "refused
    (warned)": the SMD compared cannot hold it). With the file's own VTA imported, its shapes need no word."""
    _import(CUBE)
    touched = edit_kinds.apply("add-shape-key")
    warnings = _export(tmp_path / "Cube.smd")
    assert (tmp_path / "Cube.smd").read_bytes() == CUBE.read_bytes()
    vta = smd.read((tmp_path / "Cube.vta").read_bytes())
    assert [fr.comment for fr in vta.vertex_animation] == [None, "Edited"]
    assert len(vta.vertex_animation[1].vertices) > 0
    said = [w for w in warnings if "Edited" in w]
    assert said == ["shape key(s) Edited written to Cube.vta beside Cube.smd: an SMD reference holds no shape "
                    "keys (a QC names the VTA as the body's flex file)"]
    assert edit_kinds.said(edit_kinds.LOST, touched, warnings) == said[0]
    bpy.ops.wm.read_factory_settings(use_empty=True)
    _import(CUBE)
    _import(CUBE_VTA)
    assert not [w for w in _export(tmp_path / "again" / "Cube.smd") if "shape key" in w]


@pytest.mark.default_leg
def test_a_file_imported_twice_exports_the_selected_copy(clean_scene, tmp_path):
    """Cube (a plain mesh) and its VTA imported twice: the reference and the VTA are written as they were (the
    selected second copy), not with 24 triangles or 72 vertices; with neither copy selected the export names
    both and writes nothing."""
    for _ in range(2):
        _import(CUBE)
        _import(CUBE_VTA)
    _export(tmp_path / "Cube.smd")
    assert (tmp_path / "Cube.smd").read_bytes() == CUBE.read_bytes()
    assert bpy.ops.export_scene.skinbridge_smd(filepath=str(tmp_path / "flex.vta")) == {"FINISHED"}
    assert (tmp_path / "flex.vta").read_bytes() == CUBE_VTA.read_bytes()
    for o in bpy.context.view_layer.objects:
        o.select_set(False)
    with pytest.raises(RuntimeError, match=r"2 models could be exported \(bst_Cube_NoArmature_ref, "
                       r"bst_Cube_NoArmature_ref.001\)"):
        bpy.ops.export_scene.skinbridge_smd(filepath=str(tmp_path / "none.smd"))
    assert not (tmp_path / "none.smd").exists()


@pytest.mark.parametrize("edit", ["rename-bone", "move-bone-rest"] if DEFAULT_LEG else ["rename-bone"])
def test_a_bone_edit_leaves_a_crowbar_files_triangles_as_written(clean_scene, tmp_path, edit):
    """The health charger's physics SMD (values such as 19.678979 that float32 gives back as 19.67898): a bone
    renamed or its rest moved changes the nodes or the skeleton only; every triangle value is the file's."""
    src = CHARGER / "health_charger001_physics.smd"
    _import(src)
    edit_kinds.apply(edit)
    _export(tmp_path / src.name)
    before, after = smd.read(src.read_bytes()), smd.read((tmp_path / src.name).read_bytes())
    for name in ("positions", "normals", "uvs", "link_weights"):
        assert np.array_equal(getattr(before.triangles, name), getattr(after.triangles, name)), name
    assert [n.name for n in before.nodes] != [n.name for n in after.nodes] or edit == "move-bone-rest"


@pytest.mark.default_leg
def test_a_mesh_added_beside_a_crowbar_reference_keeps_the_files_lines(clean_scene, tmp_path):
    """A cube added beside the charger's skinned reference: the comment line Crowbar wrote stays first (every
    node line kept its number), the file's triangles come first as it wrote them, and the cube's 12 triangles
    follow, weighted to the root bone with a warning that says so."""
    src = CHARGER / "health_charger001_reference.smd"
    _import(src)
    edit_kinds.apply("add-mesh")
    warnings = _export(tmp_path / src.name)
    data = (tmp_path / src.name).read_bytes()
    assert data.startswith(b"// Created by Crowbar")
    before, after = smd.read(src.read_bytes()), smd.read(data)
    assert [(n.id, n.name, n.parent, n.line) for n in after.nodes] == [
        (n.id, n.name, n.parent, n.line) for n in before.nodes]
    n = len(before.triangles.parents)
    assert len(after.triangles) == len(before.triangles) + 12
    for name in ("positions", "normals", "uvs"):
        assert np.array_equal(getattr(after.triangles, name)[:n], getattr(before.triangles, name)), name
    assert any(w.startswith("AddedCube: not deformed by the armature") for w in warnings)


@pytest.mark.default_leg
def test_a_scale_key_is_refused_by_name_and_a_straight_key_is_no_edit(clean_scene, tmp_path):
    """X_Axis (every frame keyed): the campaign's added key goes on a bone's scale, which an SMD bone row cannot
    hold: the export says so naming the bone; no key of it bends its curve, so deleting one is not an edit."""
    _import(X_AXIS)
    with pytest.raises(edit_kinds.NotApplicable, match="no key whose removal changes its curve"):
        edit_kinds.apply("key-delete")
    touched = edit_kinds.apply("key-add")
    assert ".scale[0]" in touched.what
    warnings = _export(tmp_path / "corpus_model.smd")
    said = [w for w in warnings if "scale" in w]
    assert said == ["animation 'bst_ActionFilter_X_Axis_anim': 1 bone(s) scaled (blender_implicit): an SMD bone "
                    "row holds no scale, written without it"]
    assert edit_kinds.said(edit_kinds.LOST, touched, warnings) == said[0]


@pytest.mark.default_leg
def test_a_bone_edit_keeps_the_link_order_blender_source_tools_wrote(clean_scene, interop, tmp_path):
    """BST's AllTypes lists a corner's links `2 1` where ours lists `1 2`: a renamed bone changes the node's
    name and its skeleton row only; every corner keeps its links in the file's order (723 corners were written
    in ours)."""
    src = interop / "bst_written" / "AllTypes.smd"
    _import(src)
    edit_kinds.apply("rename-bone")
    _export(tmp_path / src.name)
    before, after = smd.read(src.read_bytes()), smd.read((tmp_path / src.name).read_bytes())
    for name in ("positions", "normals", "uvs", "link_counts", "link_bones", "link_weights"):
        assert np.array_equal(getattr(before.triangles, name), getattr(after.triangles, name)), name
    assert [n.name for n in after.nodes][0] == "blender_implicit_renamed"


@pytest.mark.default_leg
def test_a_bone_edit_leaves_out_the_rows_blender_source_tools_left_out(clean_scene, interop, tmp_path):
    """BST's Dice writes no skeleton row for `vcabone_Throw` (a bone at rest): a renamed root changes its node
    line and row only; the edited file leaves that row out as the file did (it was written, an added row)."""
    src = interop / "bst_written" / "Dice.smd"
    _import(src)
    edit_kinds.apply("rename-bone")
    _export(tmp_path / src.name)
    before, after = smd.read(src.read_bytes()), smd.read((tmp_path / src.name).read_bytes())
    assert [n.name for n in after.nodes] == ["root_renamed", "vcabone_Throw"]
    assert [fr.bones.tolist() for fr in after.skeleton] == [fr.bones.tolist() for fr in before.skeleton] == [[0]]
    for name in ("positions", "normals", "uvs"):
        assert np.array_equal(getattr(before.triangles, name), getattr(after.triangles, name)), name


# three triangles, the middle one with a repeated vertex (Blender drops it on import); written by our writer
DEGENERATE = DROPPED_TRIANGLE_REF


@pytest.mark.default_leg
def test_a_moved_vertex_keeps_the_triangles_blender_could_not_hold(clean_scene, tmp_path):
    """A reference whose second triangle repeats a vertex (HammerAddons' eggbotstart has 7): a vertex moved in
    Blender changes that vertex's corners only; the dropped triangle is written back in its place (it was left
    out: 2 triangles of 3)."""
    src = tmp_path / "src" / "tri_ref.smd"
    src.parent.mkdir()
    src.write_bytes(smd.write(smd.read(DEGENERATE.encode())))
    _import(src)
    assert len(next(o for o in bpy.data.objects if o.type == "MESH").data.polygons) == 2
    edit_kinds.apply("move-vertex")
    _export(tmp_path / src.name)
    before, after = smd.read(src.read_bytes()), smd.read((tmp_path / src.name).read_bytes())
    assert len(after.triangles) == 3 and after.triangles.materials == before.triangles.materials
    moved = np.flatnonzero(np.any(before.triangles.positions != after.triangles.positions, axis=1))
    assert len(moved) and set(moved) <= {0, 1, 2}  # the first face's first vertex (no other corner shares it)
    for name in ("normals", "uvs", "parents", "link_bones", "link_weights"):
        assert np.array_equal(getattr(before.triangles, name), getattr(after.triangles, name)), name


@pytest.mark.default_leg
def test_a_rest_moved_by_less_than_the_kept_binds_tolerance_is_written(clean_scene, tmp_path):
    """The campaign moves a bone's rest by a tenth of its length: 1e-4 for HammerAddons' futbol_physics bones of
    0.5 mm, which the file's kept bind (within 1e-4 times the head's size) hid: the file came back unchanged.
    The charger's `healthbar` (its head 9 units out) moved by 2e-4 in Edit Mode: its row's x says so, every
    other row is the file's."""
    src = CHARGER / "health_charger001_physics.smd"
    _import(src)
    arm = next(o for o in bpy.data.objects if o.type == "ARMATURE")
    edit_kinds._activate(arm, "EDIT")
    eb = arm.data.edit_bones["healthbar"]
    eb.head.x += 2e-4
    eb.tail.x += 2e-4
    bpy.ops.object.mode_set(mode="OBJECT")
    _export(tmp_path / src.name)
    before, after = smd.read(src.read_bytes()), smd.read((tmp_path / src.name).read_bytes())
    a, b = before.skeleton[0], after.skeleton[0]
    assert b.positions[1, 0] - a.positions[1, 0] == pytest.approx(2e-4, abs=2e-6)
    assert np.array_equal(np.delete(a.positions, 1, 0), np.delete(b.positions, 1, 0))
    assert np.array_equal(a.rotations, b.rotations)
    assert np.array_equal(before.triangles.positions, after.triangles.positions)


RIG = RIG3 + """triangles
mat
0 0 0 0 0 0 1 0 0 1 0 1
1 1 0 1 0 0 1 1 0 1 1 1
2 0 1 2 0 0 1 0 1 1 2 1
end
"""
# an animation of part of the rig (`hand` left out), with a node the rig lacks (`ghost`, its track kept on the
# action); every frame keys every node it names, `arm` turning
SWING = """version 1
nodes
0 "root" -1
1 "arm" 0
2 "ghost" 0
end
skeleton
""" + "".join(f"time {t}\n0 0 0 0 0 0 0\n1 0 0 1 {0.3 * t * t:.6f} 0 0\n2 1 2 3 0 0 0.5\n" for t in range(4)) + "end\n"


@pytest.mark.default_leg
@pytest.mark.parametrize("edit", ["unchanged", "key-move", "rename-bone"])
def test_an_edited_animation_keeps_the_files_nodes(clean_scene, tmp_path, edit):
    """An animation naming part of the rig and a node the rig lacks (HammerAddons' Black Mesa charger idle: 10
    of 11 nodes; the HL2 suit charger idle paired with its one-bone physics mesh): exported unchanged it is the
    file; with a key moved only that key's row changes, with a bone renamed only its node's name: the file's
    nodes and ids, the kept node's rows (every bone of the rig was written, ids shifted, and the kept node was
    left out)."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "rig_ref.smd").write_bytes(smd.write(smd.read(RIG.encode())))
    (src / "swing.smd").write_bytes(smd.write(smd.read(SWING.encode())))
    _import(src / "rig_ref.smd")
    _import(src / "swing.smd")
    touched = edit_kinds.apply(edit)
    _export(tmp_path / "rig.smd")
    before, after = smd.read((src / "swing.smd").read_bytes()), smd.read((tmp_path / "swing.smd").read_bytes())
    renamed = dict([touched.names]) if edit == "rename-bone" else {}
    assert [(n.id, n.name, n.parent) for n in after.nodes] == [
        (n.id, renamed.get(n.name, n.name), n.parent) for n in before.nodes]
    assert edit != "rename-bone" or renamed == {"arm": "arm_renamed"}
    changed = [(f, r) for f, (a, b) in enumerate(zip(before.skeleton, after.skeleton))
               for r in range(3) if not (np.array_equal(a.positions[r], b.positions[r])
                                         and np.array_equal(a.rotations[r], b.rotations[r]))]
    row = [n.name for n in before.nodes].index(touched.names[0]) if touched.names else None
    assert changed == ([(2, row)] if edit == "key-move" else [])
    if edit == "unchanged":
        assert (tmp_path / "swing.smd").read_bytes() == (src / "swing.smd").read_bytes()


@pytest.mark.default_leg
def test_a_deleted_face_keeps_the_triangles_blender_could_not_hold(clean_scene, tmp_path):
    """The same reference with face 0 deleted in Edit Mode: the file's triangles 2 and 3 are written as they were
    (the one Blender could not hold with them), not only the third (eggbotstart lost its 7 with any deletion)."""
    src = tmp_path / "src" / "tri_ref.smd"
    src.parent.mkdir()
    src.write_bytes(smd.write(smd.read(DEGENERATE.encode())))
    _import(src)
    edit_kinds.apply("delete-faces")
    _export(tmp_path / src.name)
    before, after = smd.read(src.read_bytes()), smd.read((tmp_path / src.name).read_bytes())
    assert len(after.triangles) == 2
    for name in ("positions", "normals", "uvs", "parents", "link_bones", "link_weights"):
        assert np.array_equal(getattr(before.triangles, name)[3:], getattr(after.triangles, name)), name
