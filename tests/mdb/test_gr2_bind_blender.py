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
