"""Import of the sample head with the GR2 skeleton beside it: an armature with the game's bone names and rest
pose, the SKIN meshes parented to it with an Armature modifier, and weights that sit on the nearby bones."""
from __future__ import annotations

import pathlib

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from skinbridge.io_mdb.gr2 import gr2, skeleton as gr2_skeleton  # noqa: E402
from skinbridge.io_mdb.mdb import blender_io  # noqa: E402

pytestmark = pytest.mark.blender

GR2_DIR = pathlib.Path(__file__).resolve().parents[3] / "shared" / "testdata" / "gr2"
HEAD = GR2_DIR / "ovr_P_HEF_head83.MDB"
SKELETON = GR2_DIR / "ovr_P_HEF_skel83.GR2"


def _heaviest_names(ob) -> tuple[list[str], np.ndarray]:
    """Per vertex the name of its heaviest vertex group, and the vertex positions."""
    names = []
    for v in ob.data.vertices:
        g = max(v.groups, key=lambda g: g.weight)
        names.append(ob.vertex_groups[g.group].name)
    positions = np.array([v.co for v in ob.data.vertices])
    return names, positions


def test_head_imports_on_its_skeleton(clean_scene):
    result = blender_io.import_mdb(bpy.context, str(HEAD))
    assert not any("without a skeleton" in w for w in result.warnings)
    (skel,) = gr2_skeleton.skeletons(gr2.read(SKELETON.read_bytes()))
    rig = result.armature
    assert rig is not None and [b.name for b in rig.data.bones] == skel.names
    world = skel.world_matrices()[:, :3, 3] / skel.units_per_metre  # our own composition, in metres
    heads = np.array([rig.data.bones[n].head_local for n in skel.names])
    assert np.abs(heads - world).max() < 1e-5
    skins = [ob for ob in result.objects if ob.type == "MESH"]
    assert len(skins) == 5
    hits = total = 0
    for ob in skins:
        deforming = {g.name for g in ob.vertex_groups}  # the bones the mesh's weights reach
        candidates = np.array([i for i, n in enumerate(skel.names) if n in deforming])
        assert ob.parent == rig and ob.modifiers[0].type == "ARMATURE" and ob.modifiers[0].object == rig
        assert all(g.name in rig.data.bones for g in ob.vertex_groups)  # every index maps to a named bone
        assert all(len(v.groups) for v in ob.data.vertices)
        heaviest, positions = _heaviest_names(ob)
        d = np.linalg.norm(positions[:, None] - world[None, candidates], axis=2)
        nearest = candidates[np.argsort(d, axis=1)[:, :3]]
        good = np.array([skel.names.index(h) in row for h, row in zip(heaviest, nearest)])
        if "Head83" not in ob.name or "_L0" in ob.name:
            assert good.all(), ob.name  # eyes and the head's LODs: every vertex
        hits += int(good.sum())
        total += len(good)
    # the full head weights its whole scalp to Head, whose origin sits low at the back of the skull among
    # the face bones; see docs/nwn2.md §5.4 for the figures
    assert hits / total > 0.6


def test_the_import_binds_the_skeleton_file_the_head_fits_and_reports_the_other(clean_scene, tmp_path):
    """Issue 50 item 4 through the import: beside the head, our writer's copy of its skeleton with the face bones
    2 cm forward (first by name) and an unmoved copy; the armature is the unmoved one's, the report names both."""
    import shutil

    from skinbridge.io_mdb.gr2 import convert as gr2_convert
    from skinbridge.io_mdb.gr2 import export as gr2_export

    (skel,) = gr2_skeleton.skeletons(gr2.read(SKELETON.read_bytes()))
    core = gr2_convert.core_skeleton(skel)
    (tmp_path / "b_right.gr2").write_bytes(gr2_export.skeleton_file(core))
    for b in core.bones:
        if b.name.startswith("f_"):
            b.bind = np.array(b.bind)
            b.bind[1, 3] += 0.02
    core.set_rest_from_binds()
    (tmp_path / "a_moved.gr2").write_bytes(gr2_export.skeleton_file(core))
    shutil.copy(HEAD, tmp_path / "head.mdb")
    result = blender_io.import_mdb(bpy.context, str(tmp_path / "head.mdb"))
    world = skel.world_matrices()[:, :3, 3] / skel.units_per_metre  # the sample's bones, in metres
    heads = np.array([result.armature.data.bones[n].head_local for n in skel.names])
    assert np.abs(heads - world).max() < 1e-5
    (report,) = [w for w in result.warnings if "skeleton files hold" in w]
    assert f"bound to {tmp_path / 'b_right.gr2'} (its rest fits" in report and "not chosen: a_moved.gr2 (" in report
