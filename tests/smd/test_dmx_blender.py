"""DMX models imported into Blender: the armature's bones (names, parents, bind matrices) and the mesh's corner
positions, UVs, weights and shape keys equal the core Scene the mapping gives (which test_dmx_convert.py compares
with srctools' reading of the same files within 1e-6)."""
from __future__ import annotations

import pathlib

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from skinbridge import formats  # noqa: E402
from skinbridge.io_smd.dmx import convert as dmx_convert  # noqa: E402

pytestmark = pytest.mark.blender

DMX_DIR = pathlib.Path(__file__).resolve().parents[2].parent / "shared" / "testdata" / "dmx"
TOL = 1e-5  # float32 data through Blender


@pytest.mark.parametrize("name", ["bst_Cube_NoArmature.dmx", "bst_Curve_Armature_BezierCurve.dmx",
                                  "bst_cloth_test_simple.dmx"])
def test_imported_model_equals_the_mapped_scene(clean_scene, name):
    path = DMX_DIR / name
    scene, _ = dmx_convert.load(str(path), path.read_bytes())
    spec = formats.identify_file(path)
    spec.get("blender_import")(bpy.context, str(path), None)
    arms = [o for o in bpy.data.objects if o.type == "ARMATURE"]
    assert len(arms) == (scene.skeleton is not None)
    if arms:
        bones = arms[0].data.bones
        assert [b.name for b in bones] == scene.skeleton.names
        assert [scene.skeleton.names.index(b.parent.name) if b.parent else -1 for b in bones] == \
            list(scene.skeleton.parents)
        for b, c in zip(bones, scene.skeleton.bones):
            assert np.abs(np.array(b.matrix_local)[:3, 3] - c.bind[:3, 3]).max() <= TOL, b.name
    (ob,) = [o for o in bpy.data.objects if o.type == "MESH"]
    (m,) = scene.meshes
    me = ob.data
    topology = m.extras["dmx"]["topology"]
    # the DMX vertices of one position value are one Blender vertex, in position order; a polygon one face
    vertex = np.unique(topology["position"], return_inverse=True)[1].reshape(-1)
    assert len(me.vertices) == vertex.max() + 1 and len(me.polygons) == len(topology["polygons"])
    sizes = np.empty(len(me.polygons), np.int32)
    me.polygons.foreach_get("loop_total", sizes)
    assert sizes.tolist() == topology["polygons"].tolist()
    loop_vertex = np.empty(len(me.loops), np.int32)
    me.loops.foreach_get("vertex_index", loop_vertex)
    co = np.empty(len(me.vertices) * 3, np.float32)
    me.vertices.foreach_get("co", co)
    assert np.abs(co.reshape(-1, 3)[vertex] - m.positions).max() <= TOL
    uv = np.empty(len(me.loops) * 2, np.float32)
    me.uv_layers[0].uv.foreach_get("vector", uv)
    corners = np.unique(m.triangles.reshape(-1))
    blender_corners = np.unique(np.column_stack([loop_vertex, np.round(uv.reshape(-1, 2), 5)]), axis=0)
    core_corners = np.unique(np.column_stack([vertex[corners], np.round(m.uvs[0][1][corners], 5)]), axis=0)
    assert np.array_equal(blender_corners, core_corners)
    if m.weights is not None:
        names = scene.skeleton.names
        for k in range(0, len(corners), 7):
            v = me.vertices[vertex[corners[k]]]
            got = {ob.vertex_groups[g.group].name: g.weight for g in v.groups if g.weight > 0}
            want = {}
            for j, w in zip(m.joints[corners[k]], m.weights[corners[k]]):
                if w > 0:
                    want[names[j]] = want.get(names[j], 0) + float(w)
            assert got.keys() == want.keys() and all(abs(got[n] - want[n]) <= TOL for n in want), k
    keys = me.shape_keys.key_blocks[1:] if me.shape_keys else []
    assert [k.name for k in keys] == [k.name for k in m.shape_keys]
    for block, key in zip(keys, m.shape_keys):
        sco = np.empty(len(me.vertices) * 3, np.float32)
        block.data.foreach_get("co", sco)
        assert np.abs(sco.reshape(-1, 3)[vertex] - key.positions).max() <= TOL
