"""Skin weights through Blender, both ways: import writes them through a BMesh deform layer before the mesh
has faces (blender/mesh.py `_write_weights`), export reads them per influence count (`read_weights`).

Expected values come from a plain Python walk over the file's slots, and Blender's stored weights are read
back one vertex at a time through `MeshVertex.groups`, not through the code under test."""
from __future__ import annotations

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from skinbridge.blender import mesh as bmesh_  # noqa: E402
from skinbridge.blender import scene as bscene  # noqa: E402
from skinbridge.core import model as cm  # noqa: E402

pytestmark = pytest.mark.blender

N_BONES = 9


def _skeleton() -> cm.Skeleton:
    skel = cm.Skeleton("Rig")
    for i in range(N_BONES):
        bind = np.eye(4)
        bind[:3, 3] = (0.0, 0.0, 0.1 * i)
        skel.bones.append(cm.Bone(f"b{i}", i - 1, bind, np.zeros(3), np.array([1.0, 0, 0, 0]), np.ones(3)))
    skel.set_rest_from_binds()
    return skel


def _hostile_weights(rng, nv: int) -> tuple[np.ndarray, np.ndarray]:
    """Random slot order and float32 weights over many binary exponents, plus the awkward cases."""
    joints = np.stack([rng.permutation(N_BONES)[:4] for _ in range(nv)]).astype(np.int32)
    weights = (rng.random((nv, 4)) * 2.0 ** rng.integers(-40, 1, (nv, 4))).astype(np.float32)
    weights[rng.random((nv, 4)) < 0.2] = 0  # unused slots, anywhere
    weights[0] = [1.0, 0, 0, 0]
    weights[1] = [np.float32(1e-40), np.float32(2.0 ** -149), 0.5, np.float32(np.nextafter(np.float32(1), 0))]
    joints[2], weights[2] = [3, 5, 3, 1], [0.25, 0.125, 0.375, 0.25]  # bone 3 twice: summed into slot 0
    joints[3], weights[3] = [N_BONES, -1, 2, 4], [0.5, 0.5, 0.25, 0.75]  # joints out of range: left out
    weights[4] = [np.nan, -0.5, 0.0, 0.3]  # NaN and negative: left out
    weights[5] = 0  # no influences at all
    return joints, weights


def _expected(joints, weights) -> list[list[tuple[int, np.float32]]]:
    out = []
    for js, ws in zip(joints.tolist(), weights.astype(np.float32)):
        row: list[list] = []
        for j, w in zip(js, ws):
            if not (w > 0) or not 0 <= j < N_BONES:
                continue
            for item in row:
                if item[0] == j:
                    item[1] = np.float32(item[1] + w)
                    break
            else:
                row.append([j, w])
        out.append([(j, np.float32(w)) for j, w in row])
    return out


def _stored(ob) -> list[list[tuple[int, np.float32]]]:
    bone_of = {g.index: int(g.name[1:]) for g in ob.vertex_groups}
    return [[(bone_of[e.group], np.float32(e.weight)) for e in v.groups] for v in ob.data.vertices]


def _stored_raw(ob) -> list[list[tuple[int | None, np.float32]]]:
    bone_of = {g.index: int(g.name[1:]) if g.name[1:].isdigit() else None for g in ob.vertex_groups}
    return [[(bone_of[e.group], np.float32(e.weight)) for e in v.groups] for v in ob.data.vertices]


def _scene(joints, weights, with_faces=True) -> cm.Scene:
    nv = len(joints)
    rng = np.random.default_rng(3)
    pos = rng.random((nv, 3)).astype(np.float32)
    tris = (np.arange(nv - nv % 3).reshape(-1, 3) if with_faces else np.zeros((0, 3))).astype(np.int32)
    mesh = cm.Mesh("W", pos, tris, joints=joints, weights=weights)
    if not with_faces:
        mesh.edges = np.stack([np.arange(nv - 1), np.arange(1, nv)], 1).astype(np.int32)
    return cm.Scene("W", _skeleton(), [mesh], [])


def _build(context, scene):
    result = bscene.build_scene(context, scene, "W")
    return next(o for o in result.objects if o.type == "MESH")


@pytest.mark.parametrize("with_faces", [True, False], ids=["faces", "edges only"])
def test_import_stores_every_weight_exactly_in_file_slot_order(clean_scene, with_faces):
    joints, weights = _hostile_weights(np.random.default_rng(7), 3000)
    scene = _scene(joints, weights, with_faces)
    ob = _build(bpy.context, scene)
    got, want = _stored(ob), _expected(joints, weights)
    assert [g.name for g in ob.vertex_groups] == [f"b{i}" for i in range(N_BONES)]
    bad = [i for i, (a, b) in enumerate(zip(got, want)) if [(j, w.view(np.uint32)) for j, w in a]
           != [(j, w.view(np.uint32)) for j, w in b]]
    assert not bad, f"{len(bad)} vertices differ, first {bad[0]}: {got[bad[0]]} != {want[bad[0]]}"
    assert got[2] == [(3, np.float32(0.625)), (5, np.float32(0.125)), (1, np.float32(0.25))]
    assert got[5] == []
    me = ob.data
    assert len(me.vertices) == 3000 and not me.validate(verbose=False)
    if with_faces:
        assert len(me.polygons) == 1000
        assert np.array_equal(np.array([list(p.vertices) for p in me.polygons]), scene.meshes[0].triangles)
    else:
        assert len(me.polygons) == 0 and len(me.edges) == 2999
    positions = np.empty(3 * len(me.vertices), np.float32)
    me.attributes["position"].data.foreach_get("vector", positions)
    assert np.array_equal(positions.reshape(-1, 3), scene.meshes[0].positions)


def test_export_reads_what_blender_stores_in_stored_order(clean_scene):
    joints, weights = _hostile_weights(np.random.default_rng(8), 2000)
    ob = _build(bpy.context, _scene(joints, weights))
    # uneven influence counts: a vertex with six groups (over the limit of 4), others with 1…4 or none
    ob.vertex_groups["b8"].add([10], 0.0625, "REPLACE")
    ob.vertex_groups["b7"].add([10], 0.03125, "REPLACE")
    # entries export leaves out, mixed in among the others: a group that is no bone, a zero weight
    ob.vertex_groups.new(name="not_a_bone").add(list(range(20, 2000, 7)), 0.5, "REPLACE")
    ob.vertex_groups["b0"].add(list(range(21, 2000, 11)), 0.0, "REPLACE")
    stored = _stored_raw(ob)
    assert len(stored[10]) >= 5
    warnings: list[str] = []
    bone_index = {f"b{i}": i for i in range(N_BONES)}
    j, w = bmesh_.read_weights(ob, ob.data, bone_index, 4, warnings)
    for v, row in enumerate(stored):
        live = [(b, x) for b, x in row if b is not None and x > 0]
        if len(live) > 4:
            continue
        assert [(int(a), np.float32(b)) for a, b in zip(j[v], w[v]) if b > 0] == live, v
    stored = [[e for e in row if e[0] is not None and e[1] > 0] for row in stored]
    # over the limit: the four largest, renormalised
    top = sorted(stored[10], key=lambda e: -float(e[1]))[:4]
    total = sum(float(e[1]) for e in top)
    got = sorted(zip(j[10].tolist(), w[10].tolist()))
    want = sorted((b, float(x) / total) for b, x in top)
    assert [b for b, _ in got] == [b for b, _ in want]
    np.testing.assert_allclose([x for _, x in got], [x for _, x in want], rtol=1e-6)
    assert len(warnings) == 1 and "more than 4 influences" in warnings[0]


def test_trimmed_read_has_the_columns_the_fullest_vertex_needs(clean_scene):
    """`min_columns`: as many columns as the vertex with the most stored influences (at least min_columns),
    else the same."""
    joints, weights = _hostile_weights(np.random.default_rng(10), 500)
    ob = _build(bpy.context, _scene(joints, weights))
    bone_index = {f"b{i}": i for i in range(N_BONES)}
    widest = max(len(row) for row in _stored_raw(ob))
    full_j, full_w = bmesh_.read_weights(ob, ob.data, bone_index, 16, [])
    j, w = bmesh_.read_weights(ob, ob.data, bone_index, 16, [], min_columns=1)
    assert 1 <= widest < 16 and j.shape == w.shape == (500, widest)
    assert np.array_equal(j, full_j[:, :widest]) and np.array_equal(w, full_w[:, :widest])
    assert not full_w[:, widest:].any()
    j, w = bmesh_.read_weights(ob, ob.data, bone_index, 16, [], min_columns=widest + 2)
    assert j.shape == (500, widest + 2) and np.array_equal(w, full_w[:, :widest + 2])
    ob.vertex_groups.clear()  # no influence anywhere: one empty column
    j, w = bmesh_.read_weights(ob, ob.data, bone_index, 16, [], min_columns=0)
    assert j.shape == w.shape == (500, 1) and not w.any()


def test_failed_weight_write_leaves_nothing(clean_scene, monkeypatch):
    """A failure while the BMesh holds the weights: no mesh, object or BMesh survives the import."""
    from support.fingerprint import data_lengths

    joints, weights = _hostile_weights(np.random.default_rng(9), 300)
    before = data_lengths()

    real_new = bmesh_.bmesh.new

    class Failing:  # a BMesh whose conversion back to the mesh fails
        def __init__(self):
            self.bm = real_new()

        def __getattr__(self, name):
            return getattr(self.bm, name)

        def to_mesh(self, me):
            raise RuntimeError("planted")

    monkeypatch.setattr(bmesh_.bmesh, "new", Failing)
    with pytest.raises(RuntimeError, match="planted"):
        _build(bpy.context, _scene(joints, weights))
    assert data_lengths() == before
