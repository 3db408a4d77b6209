"""Fox.glb through SMD: the reference and the Walk animation evaluated with core/skinning.py agree with
Blender's evaluation of the original; the export does not depend on the playing frame; both files imported
back give the same links and the same deformation."""
from __future__ import annotations

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from skinbridge import formats  # noqa: E402
from skinbridge.app.options import ConvertOptions  # noqa: E402
from skinbridge.blender.mesh import evaluated_world_positions  # noqa: E402
from skinbridge.io_smd.smd import blender_io  # noqa: E402
from skinbridge.io_smd.smd import convert  # noqa: E402
from skinbridge.io_smd.smd import smd  # noqa: E402

pytestmark = pytest.mark.blender

FRAMES = (0, 5, 10, 17)
DIAGONAL = 175.55


def _smd_deformed(ref: smd.SmdFile, anim: smd.SmdFile, frame: int) -> np.ndarray:
    return convert.skinned_corners(ref, anim, frame)


def _blender_corners(ob) -> np.ndarray:
    co = evaluated_world_positions(ob)
    corner_vertex = np.empty(len(ob.data.loops), np.int32)
    ob.data.loops.foreach_get("vertex_index", corner_vertex)
    return co[corner_vertex]


def _mesh():
    return next(o for o in bpy.data.objects if o.type == "MESH")


def _arm():
    return next(o for o in bpy.data.objects if o.type == "ARMATURE")


def _assert_deforms_as_smd(ref: smd.SmdFile, anim: smd.SmdFile, ob, start: int) -> None:
    """At each of FRAMES after `start`, the corners of `ob` as Blender deforms them are those of `ref` skinned
    by `anim` at that frame, within 1e-4 of the model's diagonal."""
    worst = 0.0
    for k in FRAMES:
        bpy.context.scene.frame_set(start + k)
        worst = max(worst, float(np.abs(_smd_deformed(ref, anim, k) - _blender_corners(ob)).max()))
    print(f"worst corner difference {worst:.3g} (limit {1e-4 * DIAGONAL:.4g})")
    assert worst <= 1e-4 * DIAGONAL, worst


def test_fox_reference_and_walk(clean_scene, testdata, tmp_path):
    formats.get("gltf").get("blender_import")(bpy.context, str(testdata / "gltf" / "Fox.glb"), ConvertOptions())
    arm, ob = _arm(), _mesh()
    walk = next(a for a in bpy.data.actions if a.name.endswith("Walk"))
    ad = arm.animation_data or arm.animation_data_create()
    ad.action = walk
    slot = next((s for s in walk.slots if s.target_id_type == "OBJECT"), None)
    if slot is not None:
        ad.action_slot = slot
    start = int(walk.frame_range[0])
    bpy.context.scene.frame_set(start)
    ref_path = tmp_path / "Fox.smd"
    blender_io.export_reference(bpy.context, str(ref_path))
    written, _ = blender_io.export_animations(bpy.context, str(tmp_path), arm, actions=[walk])
    ref = smd.read(ref_path.read_bytes())
    anim = smd.read(open(written[0], "rb").read())
    assert len(ref.triangles) == 576 and len(ref.nodes) == 24
    assert 1 <= int(ref.triangles.link_counts.max()) <= 4
    assert len(anim.skeleton) == 18
    print("links per corner", np.bincount(ref.triangles.link_counts))

    _assert_deforms_as_smd(ref, anim, ob, start)

    bpy.context.scene.frame_set(start + 10)
    playing = tmp_path / "Fox_frame10.smd"
    blender_io.export_reference(bpy.context, str(playing))
    assert playing.read_bytes() == ref_path.read_bytes()

    # both files back into an empty scene
    bpy.ops.wm.read_factory_settings(use_empty=True)
    blender_io.import_file(bpy.context, str(ref_path))
    blender_io.import_file(bpy.context, written[0])
    arm2, ob2 = _arm(), _mesh()
    again_path = tmp_path / "again.smd"
    blender_io.export_reference(bpy.context, str(again_path))
    again = smd.read(again_path.read_bytes())
    assert again.triangles.link_counts.tolist() == ref.triangles.link_counts.tolist()
    assert np.array_equal(again.triangles.link_bones, ref.triangles.link_bones)
    assert np.abs(again.triangles.link_weights - ref.triangles.link_weights).max() <= 1e-6
    act = arm2.animation_data.action
    _assert_deforms_as_smd(ref, anim, ob2, int(act.frame_range[0]))
