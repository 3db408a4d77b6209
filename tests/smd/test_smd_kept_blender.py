"""Through Blender, an unchanged SMD / VTA is written with its own bytes (io_smd/smd/kept.py, docs/source.md §2.4):
files from Blender Source Tools and Crowbar, whose layout our canonical writer does not reproduce (integer zeros,
comments, indentation: `smd.write(smd.read(x)) != x` is asserted for each), come back byte for byte through
File › Import and File › Export; a plain reference keeps its one node's name; triangles Blender cannot hold and an
animation that names part of the rig do not stop it; a change is written from Blender."""
from __future__ import annotations

import pathlib

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from skinbridge.io_smd.smd import blender_io  # noqa: E402

from skinbridge.io_smd.smd import smd  # noqa: E402
from support.smd_texts import DROPPED_TRIANGLE_REF  # noqa: E402

pytestmark = pytest.mark.blender

SHARED = pathlib.Path(__file__).resolve().parents[2].parent / "shared" / "testdata"
SMD_DIR = SHARED / "smd"
CHARGER = SHARED / "qc" / "health_charger001"
REFS = [SMD_DIR / n for n in ("bst_Cube_Armature_ref.smd", "bst_Cube_Armature_GoldSource_ref.smd",
                              "bst_Cube_NoArmature_ref.smd", "bst_Curve_Armature_BezierCurve_ref.smd",
                              "bst_Overlapping_DifferentWeights.smd")] \
    + [CHARGER / n for n in ("health_charger001_reference.smd", "health_charger001_physics.smd")]


def _not_canonical(data: bytes) -> bytes:
    assert smd.write(smd.read(data)) != data, "the canonical writer gives these bytes already: no test"
    return data


def _export_reference(tmp_path, vta: bool = False) -> tuple[bytes, bytes | None]:
    out = tmp_path / "out.smd"
    vta_path = tmp_path / "out.vta"
    blender_io.export_reference(bpy.context, str(out), str(vta_path) if vta else None)
    return out.read_bytes(), vta_path.read_bytes() if vta_path.exists() else None


@pytest.mark.parametrize("path", REFS, ids=lambda p: p.name)
def test_an_unchanged_reference_comes_back_byte_for_byte(clean_scene, tmp_path, path):
    source = _not_canonical(path.read_bytes())
    assert bpy.ops.import_scene.skinbridge_smd(filepath=str(path)) == {"FINISHED"}
    out = tmp_path / "out.smd"
    assert bpy.ops.export_scene.skinbridge_smd(filepath=str(out), write_qc=False, animations=False) == {"FINISHED"}
    assert out.read_bytes() == source


def test_a_changed_reference_is_written_from_blender(clean_scene, tmp_path):
    path = SMD_DIR / "bst_Cube_Armature_ref.smd"
    source = path.read_bytes()
    blender_io.import_file(bpy.context, str(path))
    ob = next(o for o in bpy.data.objects if o.type == "MESH")
    ob.data.vertices[0].co.x += 0.5
    written, _ = _export_reference(tmp_path)
    assert written != source
    a, b = smd.read(source).triangles, smd.read(written).triangles
    moved = np.abs(a.positions - b.positions).max(axis=1) > 1e-6
    assert moved.any() and np.allclose(np.abs(a.positions - b.positions)[moved].max(axis=0), [0.5, 0, 0], atol=1e-5)


PLAIN_TEXT = """version 1
nodes
  0 "static_prop" -1
end
skeleton
  time 0
    0 0 0 0 0 0 0
end
triangles
prop
  0 0 0 0 0 0 1 0 0
  0 1 0 0 0 0 1 1 0
  0 0 1 0 0 0 1 0 1
end
"""


def test_a_plain_reference_keeps_its_node_name_also_when_changed(clean_scene, tmp_path):
    """HammerAddons' static props name the one node of a mesh without armature `static_prop` (Blender Source
    Tools: `blender_implicit`); Blender has no object for it, and the export writes that name (not `root`) after
    an edit too."""
    path = tmp_path / "src" / "prop_ref.smd"
    path.parent.mkdir()
    path.write_bytes(_not_canonical(PLAIN_TEXT.encode()))
    blender_io.import_file(bpy.context, str(path))
    assert not any(o.type == "ARMATURE" for o in bpy.data.objects)
    assert _export_reference(tmp_path)[0] == path.read_bytes()
    next(o for o in bpy.data.objects if o.type == "MESH").data.vertices[0].co.z += 1.0
    written, _ = _export_reference(tmp_path)
    assert written != path.read_bytes()
    assert [(n.id, n.name, n.parent) for n in smd.read(written).nodes] == [(0, "static_prop", -1)]


def test_a_reference_with_its_vta_comes_back_byte_for_byte(clean_scene, tmp_path):
    ref, vta = SMD_DIR / "bst_Cube_NoArmature_ref.smd", SMD_DIR / "bst_Cube_NoArmature_flex.vta"
    blender_io.import_file(bpy.context, str(ref))
    blender_io.import_file(bpy.context, str(vta))
    written, written_vta = _export_reference(tmp_path, vta=True)
    assert written == ref.read_bytes() and written_vta == vta.read_bytes()
    me = next(o for o in bpy.data.objects if o.type == "MESH").data
    me.shape_keys.key_blocks[1].data[0].co.x += 0.25  # a shape edited: the VTA is written from Blender
    written, written_vta = _export_reference(tmp_path, vta=True)
    assert written == ref.read_bytes() and written_vta != vta.read_bytes()
    frames = smd.read(written_vta).vertex_animation
    assert len(frames) == len(smd.read(vta.read_bytes()).vertex_animation)


def test_an_unchanged_animation_comes_back_byte_for_byte(clean_scene, tmp_path):
    """Crowbar's `idle.smd` (a comment line, two-space indentation) on its reference."""
    source = _not_canonical((CHARGER / "idle.smd").read_bytes())
    blender_io.import_file(bpy.context, str(CHARGER / "health_charger001_reference.smd"))
    blender_io.import_file(bpy.context, str(CHARGER / "idle.smd"))
    arm = next(o for o in bpy.data.objects if o.type == "ARMATURE")
    written, _ = blender_io.export_animations(bpy.context, str(tmp_path), arm, actions=[bpy.data.actions["idle"]])
    assert pathlib.Path(written[0]).read_bytes() == source


# a reference of three nodes whose triangle list holds one triangle with a repeated vertex (Blender drops it),
# and an animation that names two of the three nodes; both in a layout our writer does not make
REF_TEXT = "// written by hand\n" + DROPPED_TRIANGLE_REF
ANIM_TEXT = """version 1
nodes
0 "root" -1
1 "arm" 0
end
skeleton
time 0
0 0 0 0 0 0 0
1 0 0 1 0 0 0
time 1
0 0 0 0 0 0 0
1 0 0 1 0.5 0 0
time 2
0 0 0 0 0 0 0
1 0 0 1 1 0 0
end
"""


def _hand_made(tmp_path) -> tuple[pathlib.Path, pathlib.Path]:
    ref, anim = tmp_path / "src" / "rig_ref.smd", tmp_path / "src" / "swing.smd"
    ref.parent.mkdir()
    ref.write_bytes(_not_canonical(REF_TEXT.encode()))
    anim.write_bytes(_not_canonical(ANIM_TEXT.encode()))
    return ref, anim


def test_triangles_blender_cannot_hold_are_written_again(clean_scene, tmp_path):
    ref, _ = _hand_made(tmp_path)
    blender_io.import_file(bpy.context, str(ref))
    ob = next(o for o in bpy.data.objects if o.type == "MESH")
    assert len(ob.data.polygons) == 2  # the triangle with a repeated vertex is not in Blender
    written, _ = _export_reference(tmp_path)
    assert written == ref.read_bytes()
    ob.shape_key_add(name="Basis")  # with a VTA to write, whose ids are the written corners: the file's still
    ob.shape_key_add(name="Raise").data[ob.data.polygons[1].vertices[0]].co.z += 1.0  # the file's third triangle
    written, vta = _export_reference(tmp_path, vta=True)
    assert written == ref.read_bytes()
    shape = smd.read(vta).vertex_animation[1]
    assert len(shape.vertices) == 1 and int(shape.vertices[0]) in (6, 7, 8)  # its corner in the written file


def test_an_animation_of_part_of_the_rig_comes_back_byte_for_byte(clean_scene, tmp_path):
    """Exported, an action has every bone of its armature; the file named two of three, and the third does not
    move: the file's bytes. Once the third bone is keyed to move, every bone is written."""
    ref, anim = _hand_made(tmp_path)
    blender_io.import_file(bpy.context, str(ref))
    blender_io.import_file(bpy.context, str(anim))
    arm = next(o for o in bpy.data.objects if o.type == "ARMATURE")
    act = bpy.data.actions["swing"]
    out = tmp_path / "out"
    out.mkdir()
    written, _ = blender_io.export_animations(bpy.context, str(out), arm, actions=[act])
    assert pathlib.Path(written[0]).read_bytes() == anim.read_bytes()
    hand = arm.pose.bones["hand"]
    for frame, angle in ((0, 0.0), (2, 0.7)):
        hand.rotation_mode = "XYZ"
        hand.rotation_euler = (angle, 0.0, 0.0)
        hand.keyframe_insert("rotation_euler", frame=frame)
    written, _ = blender_io.export_animations(bpy.context, str(out), arm, actions=[act])
    again = smd.read(pathlib.Path(written[0]).read_bytes())
    assert [n.name for n in again.nodes] == ["root", "arm", "hand"]
