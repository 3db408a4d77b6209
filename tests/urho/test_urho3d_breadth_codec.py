"""Without Blender: UMDL/UMD2/UMD3 sample counts from an independent walker (item 1), morph records
walked independently, bone-mapping splits that deform as the unsplit model (item 3, mapping level), the
urhox refusal, primitive types, and bad input for every sample under every profile (item 6)."""
from __future__ import annotations

import numpy as np
import pytest

from skinbridge.core.errors import ExportError, FormatError
from skinbridge.io_urhox.model import convert, umd2

from support.urho_models import MORPHS, many_bones_model, morph_model
from support.urho_walker import columns, walk
from support.umd2_samples import posed_umd2
from support.bytes_compare import assert_same_bytes
from support.umd2_deformation import assert_same_deformation

SAMPLES = ["Box.mdl", "MaterialPreview.mdl", "Mushroom.mdl", "Ninja.mdl", "UnitX.mdl"]


def _sample(testdata, name) -> bytes:
    return (testdata / "urho3d" / name).read_bytes()


# -- item 1 ---------------------------------------------------------------------------------------

def _triangles(geometry) -> list[int]:
    return [lod[5] // 3 for lod in geometry["lods"][:1]]


def _walked(testdata, name: str) -> tuple[dict, dict]:
    """The walker's view of the sample `name`, and its one vertex buffer."""
    w = walk(_sample(testdata, name))
    [vb] = w["vbs"]
    return w, vb


def _only_lods(w: dict) -> list[tuple]:
    """The LOD tuples of the walked model's one geometry."""
    [g] = w["geometries"]
    return g["lods"]


def test_box(testdata):
    w, vb = _walked(testdata, "Box.mdl")
    assert (w["magic"], vb["count"], vb["mask"], vb["stride"]) == ("UMDL", 24, 0x8F, 52)
    assert [_triangles(g) for g in w["geometries"]] == [[12]]
    assert w["end"] == len(_sample(testdata, "Box.mdl"))


def test_material_preview(testdata):
    w, vb = _walked(testdata, "MaterialPreview.mdl")
    assert (w["magic"], vb["count"], vb["descs"]) == ("UMD2", 4498, [0x3, 0x103, 0x506, 0x402, 0x304])
    assert [_triangles(g) for g in w["geometries"]] == [[1762], [608]]
    assert len(w["centers"]) == 2


def test_mushroom(testdata):
    w, vb = _walked(testdata, "Mushroom.mdl")
    assert (w["magic"], vb["count"], vb["mask"]) == ("UMDL", 1055, 0x8B)
    lods = _only_lods(w)
    assert [lod[5] for lod in lods] == [4182, 2937, 2067, 1449, 1029]
    np.testing.assert_allclose([lod[0] for lod in lods], [0, 14.14, 28.28, 42.43, 56.57], atol=5e-3)


def test_ninja(testdata):
    w, vb = _walked(testdata, "Ninja.mdl")
    assert (w["magic"], vb["count"], vb["mask"], vb["stride"]) == ("UMDL", 842, 0x38B, 68)
    assert [_triangles(g) for g in w["geometries"]] == [[904], [104]]
    assert [g["mapping"] for g in w["geometries"]] == [[], []]
    masks = [b["mask"] for b in w["bones"]]
    assert len(masks) == 28 and masks.count(3) == 21 and masks.count(0) == 7
    assert len(w["centers"]) == 2


def test_unitx(testdata):
    w, vb = _walked(testdata, "UnitX.mdl")
    assert (w["magic"], vb["count"], vb["mask"]) == ("UMDL", 2, 0xF)
    assert [(lod[1], lod[5]) for lod in _only_lods(w)] == [(1, 2)]  # LINE_LIST, 2 indices
    assert len(w["centers"]) == 0


@pytest.mark.parametrize("name", SAMPLES)
def test_our_reader_agrees_with_the_walker(testdata, name):
    data = _sample(testdata, name)
    w, m = walk(data), umd2.read(data)
    assert m.magic == w["magic"]
    assert [len(vb.vertices) for vb in m.vertex_buffers] == [vb["count"] for vb in w["vbs"]]
    assert [[e.descriptor for e in vb.elements] for vb in m.vertex_buffers] == [vb["descs"] for vb in w["vbs"]]
    for ours, theirs in zip(m.vertex_buffers, w["vbs"]):
        assert ours.vertices.tobytes() == theirs["raw"]
    assert [(len(g.bone_mapping), [(lod.primitive_type, lod.index_start, lod.index_count) for lod in g.lods])
            for g in m.geometries] == [(len(g["mapping"]), [lod[1:2] + lod[4:] for lod in g["lods"]])
                                       for g in w["geometries"]]
    assert [(b.name, b.parent, b.collision_mask, b.radius) for b in m.bones] == \
        [(b["name"], b["parent"], b["mask"], None if b["radius"] is None else np.float32(b["radius"]))
         for b in w["bones"]]
    assert len(m.centers) == len(w["centers"])


# -- morphs (item 4, record level) ----------------------------------------------------------------

def test_umd3_morphs_round_trip_and_walk_independently():
    model = morph_model()
    data = umd2.write(model)
    assert_same_bytes(umd2.write(umd2.read(data)), data, umd2.read)
    w = walk(data)
    assert (w["magic"], w["version"]) == ("UMD3", 2)
    assert [(m["name"], m["weight"]) for m in w["morphs"]] == [(n, pytest.approx(wt)) for n, wt, _ in MORPHS]
    for ours, theirs in zip(model.morphs, w["morphs"]):
        assert [b.element_mask for b in ours.buffers] == [b["mask"] for b in theirs["buffers"]]
        for b, t in zip(ours.buffers, theirs["buffers"]):
            np.testing.assert_array_equal(b.vertices["index"], t["index"])
            np.testing.assert_array_equal(b.vertices["position"], np.asarray(t["position"], np.float32))


def test_morphs_become_shape_keys_and_come_back():
    model = morph_model()
    scene, warnings = convert.to_scene(umd2.read(umd2.write(model)), "Grid", "auto")
    assert warnings == [] and scene.extras["urho"]["profile"] == "urho3d"
    [mesh] = scene.meshes
    assert [(k.name, k.default_weight) for k in mesh.shape_keys] == [(n, wt) for n, wt, _ in MORPHS]
    base = model.vertex_buffers[0].vertices["POSITION0"].astype(np.float64)
    for key, morph in zip(mesh.shape_keys, model.morphs):
        expected = base.copy()
        for buf in morph.buffers:
            expected[buf.vertices["index"]] += buf.vertices["position"]
        got = key.positions.astype(np.float64) @ convert.URHO3D_TO_BLENDER[:3, :3].T  # back to file axes
        np.testing.assert_allclose(got, expected, atol=1e-6)
    out, _ = convert.from_scene(scene, "urho3d")
    data = umd2.write(out)
    w = walk(data)
    assert [m["name"] for m in w["morphs"]] == [n for n, _, _ in MORPHS]
    vb = w["vbs"][0]
    lo, count = vb["morph_range"]
    written = columns(vb)[(0, 0)].astype(np.float64)
    for morph, theirs in zip(model.morphs, w["morphs"]):
        [buf] = theirs["buffers"]
        assert buf["mask"] == umd2.MORPH_POSITION and lo <= buf["index"].min() and buf["index"].max() < lo + count
        expected = np.zeros_like(base)
        for b in morph.buffers:
            expected[b.vertices["index"]] += b.vertices["position"]
        got = np.zeros_like(base)
        got[buf["index"]] = buf["position"]
        np.testing.assert_allclose(written + got, base + expected, atol=1e-6)


def test_urhox_writes_no_morphs_and_names_the_dropped_keys():
    scene, _ = convert.to_scene(morph_model(), "Grid", "urho3d")
    out, warnings = convert.from_scene(scene, "urhox")
    assert out.morphs == [] and walk(umd2.write(out))["morphs"] == []
    assert any("Smile" in w and "Blink" in w and "Puff" in w for w in warnings)


# -- item 3, mapping level (posed alike by support/umd2_deformation.py) -------------------------------

def test_100_bones_split_at_max_bones_and_deform_alike():
    source = many_bones_model()
    scene, _ = convert.to_scene(umd2.read(umd2.write(source)), "Tube", "auto")
    for max_bones in (64, 32, 12):
        out, warnings = convert.from_scene(scene, "urho3d", max_bones=max_bones)
        again = umd2.read(umd2.write(out))
        assert len(again.geometries) > 1
        assert all(0 < len(g.bone_mapping) <= max_bones for g in again.geometries)
        assert all(again.vertex_buffers[0].vertices["BLENDINDICES0"].max() < max_bones for _ in [0])
        assert_same_deformation(source, again, 1e-6)


def test_100_bones_refused_under_urhox():
    scene, _ = convert.to_scene(many_bones_model(), "Tube", "auto")
    with pytest.raises(ExportError, match=r"100 bones.*--deform-only.*--profile urho3d"):
        convert.from_scene(scene, "urhox")


def test_mappings_list_all_bones_when_they_fit():
    scene, _ = convert.to_scene(many_bones_model(n_bones=40), "Tube", "auto")
    out, _ = convert.from_scene(scene, "urho3d", max_bones=64)
    assert [g.bone_mapping.tolist() for g in out.geometries] == [list(range(40))]
    # more bones than max_bones, but the deforming ones fit: every mapping lists the deforming bones
    scene, _ = convert.to_scene(many_bones_model(n_bones=40), "Tube", "auto")
    weighted = scene.meshes[0].weights > 0
    scene.meshes[0].joints = np.where(weighted, np.minimum(scene.meshes[0].joints, 29), 0)
    out, _ = convert.from_scene(scene, "urho3d", max_bones=32)
    assert [g.bone_mapping.tolist() for g in out.geometries] == [list(range(30))]
    with pytest.raises(ExportError, match="max-bones"):
        convert.from_scene(scene, "urho3d", max_bones=2)  # a triangle uses more bones than that


def test_collision_extras_on_weighted_bones_only(testdata):
    """Ninja read under urho3d and written again: mask 3 with the file's own radius and box exactly on the
    bones that carry weights (the 21 of the file), 0 on the 7 others."""
    ninja = umd2.read(_sample(testdata, "Ninja.mdl"))
    scene, _ = convert.to_scene(ninja, "Ninja", "urho3d")
    out, _ = convert.from_scene(scene, "urho3d")
    for ours, theirs in zip(out.bones, ninja.bones, strict=True):
        assert ours.collision_mask == theirs.collision_mask, ours.name
        if theirs.collision_mask:
            assert abs(ours.radius - theirs.radius) <= 1e-5
            np.testing.assert_allclose(ours.bbox, theirs.bbox, atol=1e-5)
        # the file's exact initial pose and offsets come back as they were
        assert ours.offset.tobytes() == theirs.offset.tobytes()
        assert (ours.position.tobytes(), ours.rotation.tobytes(), ours.scale.tobytes()) == \
            (theirs.position.tobytes(), theirs.rotation.tobytes(), theirs.scale.tobytes())
    out, _ = convert.from_scene(scene, "urhox")
    assert {b.collision_mask for b in out.bones} == {0}


# -- primitive types ------------------------------------------------------------------------------------

def _primitive_model(kind: int, indices) -> umd2.Model:
    m = umd2.read(umd2.write(morph_model()))
    m.morphs = []
    m.index_buffers = [umd2.IndexBuffer(2, np.asarray(indices, np.uint16))]
    m.geometries = [umd2.Geometry(np.zeros(0, np.uint32), [umd2.LodLevel(0.0, kind, 0, 0, 0, len(indices))])]
    return umd2.read(umd2.write(m))


@pytest.mark.parametrize("kind,indices,tris,edges", [
    (1, [0, 1, 1, 2, 5, 6], [], [(0, 1), (1, 2), (5, 6)]),  # LINE_LIST
    (4, [0, 1, 2, 3], [], [(0, 1), (1, 2), (2, 3)]),  # LINE_STRIP
    (2, [0, 1, 2], [], []),  # POINT_LIST
    (3, [0, 1, 2, 3, 4], [(0, 1, 2), (2, 1, 3), (2, 3, 4)], []),  # TRIANGLE_STRIP, alternate corners flipped
    (5, [0, 1, 2, 3], [(0, 1, 2), (0, 2, 3)], []),  # TRIANGLE_FAN
])
def test_primitive_types(kind, indices, tris, edges):
    m = _primitive_model(kind, indices)
    assert m.geometries[0].lods[0].primitive_type == kind  # kept in the records
    for profile in ("urhox", "urho3d"):
        scene, _ = convert.to_scene(m, "P", profile)
        [mesh] = scene.meshes
        expected = np.array(tris, dtype=np.int64).reshape(-1, 3)
        if profile == "urho3d":  # clockwise file winding: corners 2 and 3 swap
            expected = expected[:, [0, 2, 1]]
        np.testing.assert_array_equal(mesh.triangles, expected)
        got_edges = [] if mesh.edges is None else [tuple(e) for e in mesh.edges.tolist()]
        assert got_edges == edges
        assert mesh.vertex_count == 64


def test_all_lods_are_separate_meshes(testdata):
    m = umd2.read(_sample(testdata, "Mushroom.mdl"))
    scene, warnings = convert.to_scene(m, "Mushroom", "auto")
    assert len(scene.meshes) == 1 and any("LOD 0 of 5" in w for w in warnings)
    scene, warnings = convert.to_scene(m, "Mushroom", "auto", all_lods=True)
    assert [len(x.triangles) * 3 for x in scene.meshes] == [4182, 2937, 2067, 1449, 1029]
    assert [x.lod_level for x in scene.meshes] == [0, 1, 2, 3, 4]
    assert scene.meshes[0].vertex_count == 1055
    ib = m.index_buffers[0].indices
    for mesh, lod in zip(scene.meshes[1:], m.geometries[0].lods[1:]):  # LOD meshes keep only their vertices
        used = np.unique(ib[lod.index_start:lod.index_start + lod.index_count])
        assert mesh.vertex_count == len(used)


def test_lod_0_import_keeps_the_other_levels_for_an_unchanged_export(testdata):
    """LOD 0 import keeps every level's record and the whole index buffer (the Blender side writes them again
    while the mesh is unchanged, tests/urho/test_urho_kept_blender.py); an All LODs import keeps none (each level
    is its own mesh). Without the file's own vertex records (a core scene not through Blender) they are not
    written: LOD 0 alone, with a warning."""
    m = umd2.read(_sample(testdata, "Mushroom.mdl"))
    scene, _ = convert.to_scene(m, "Mushroom", "auto")
    urho = scene.meshes[0].extras["urho"]
    assert urho["lod_levels"]["geometries"] == [[[float(lod.distance), 0, lod.index_start, lod.index_count]
                                                 for lod in m.geometries[0].lods]]
    np.testing.assert_array_equal(urho["lod_indices"], m.index_buffers[0].indices)
    out, warnings = convert.from_scene(scene, "urho3d")
    assert [len(g.lods) for g in out.geometries] == [1]
    assert any("LOD levels above 0 not written" in w for w in warnings), warnings
    scene, _ = convert.to_scene(m, "Mushroom", "auto", all_lods=True)
    assert not any("lod_levels" in x.extras["urho"] for x in scene.meshes)


# -- item 6 ---------------------------------------------------------------------------------------------

def _generated() -> dict[str, bytes]:
    return {"Tube.mdl": umd2.write(many_bones_model(n_bones=20)), "Grid.mdl": umd2.write(morph_model()),
            "posed.mdl": umd2.write(posed_umd2())}


def _read_map_or_format_error(data: bytes) -> None:
    try:
        m = umd2.read(data)
    except FormatError as e:
        assert e.offset is not None or e.field
        return
    for profile in ("auto", "urhox", "urho3d"):
        try:
            convert.to_scene(m, "X", profile, all_lods=True)
        except FormatError:
            pass


@pytest.mark.parametrize("name", SAMPLES + ["Tube.mdl", "Grid.mdl", "posed.mdl"])
@pytest.mark.slow
def test_truncations_and_flips_under_every_profile(testdata, name):
    data = _sample(testdata, name) if name in SAMPLES else _generated()[name]
    rng = np.random.default_rng(len(name))
    for cut in sorted(set(np.linspace(0, len(data) - 1, 97).astype(int))):
        _read_map_or_format_error(data[:cut])
    for _ in range(300):
        b = bytearray(data)
        for pos in rng.integers(0, len(b), rng.integers(1, 4)):
            b[pos] = int(rng.integers(0, 256))
        _read_map_or_format_error(bytes(b))


@pytest.mark.parametrize("name", SAMPLES)
def test_cut_files_name_offset_and_field(testdata, name):
    data = _sample(testdata, name)
    m = umd2.read(data)
    tail = 12 * len(m.centers)
    for cut in (3, 9, len(data) // 2, len(data) - tail - 1):
        with pytest.raises(FormatError) as e:
            umd2.read(data[:cut])
        assert e.value.offset is not None and e.value.field
    if tail:  # cut exactly before the optional geometry centers: read with a warning
        m = umd2.read(data[:len(data) - tail])
        assert len(m.centers) == 0 and any("geometry centers" in w for w in m.warnings)


@pytest.mark.parametrize("name", SAMPLES)
def test_semantic_faults_are_kept_refused_or_warned(testdata, name):
    original = umd2.read(_sample(testdata, name))
    # a vertex index past the vertex count: kept by the codec, refused by the import
    m = umd2.read(_sample(testdata, name))
    m.index_buffers[0].indices[m.geometries[0].lods[0].index_start] = len(m.vertex_buffers[0].vertices)
    again = umd2.read(umd2.write(m))
    assert_same_bytes(umd2.write(again), umd2.write(m), umd2.read)
    with pytest.raises(FormatError, match="vertex count"):
        convert.to_scene(again, "X", "auto")
    # a NaN position: kept, imported with a warning naming it, refused by every writer
    m = umd2.read(_sample(testdata, name))
    m.vertex_buffers[0].vertices["POSITION0"][1] = np.nan
    again = umd2.read(umd2.write(m))
    scene, warnings = convert.to_scene(again, "X", "auto")
    assert any("non-finite position" in w and "vertex 1" in w for w in warnings)
    for profile in ("urhox", "urho3d"):
        with pytest.raises(ExportError, match="vertex 1 has a non-finite position"):
            convert.from_scene(scene, profile)
    # a morph pointing past the vertex buffer: kept, refused by the import
    m = umd2.read(_sample(testdata, name))
    rec = np.zeros(1, umd2.morph_dtype(umd2.MORPH_POSITION))
    rec["index"] = len(m.vertex_buffers[0].vertices) + 5
    m.morphs = [umd2.Morph("Bad", [umd2.MorphBuffer(0, umd2.MORPH_POSITION, rec)])]
    again = umd2.read(umd2.write(m))
    assert again.morphs[0].buffers[0].vertices["index"][0] == rec["index"][0]
    with pytest.raises(FormatError, match="morph 0 .Bad. buffer 0"):
        convert.to_scene(again, "X", "auto")
    if original.bones:  # a bone mapping entry past the bone count
        m = umd2.read(_sample(testdata, name))
        m.geometries[0].bone_mapping = np.full(len(m.bones), len(m.bones) + 3, np.uint32)
        with pytest.raises(FormatError, match="bone count"):
            convert.to_scene(umd2.read(umd2.write(m)), "X", "auto")


def _split_by_bones_reference(tris, joints, weights, max_bones):
    """The rule, one triangle at a time: each triangle's set of live bones; the sets in lexicographic order
    (a set that is a prefix of another after it); triangles of equal sets together; groups packed greedily."""
    sets = {}
    for t, row in enumerate(tris.tolist()):
        bones = tuple(sorted({int(joints[v, k]) for v in row for k in range(joints.shape[1]) if weights[v, k] > 0}))
        assert len(bones) <= max_bones
        sets.setdefault(bones, []).append(t)
    big = 1 << 40
    ordered = sorted(sets, key=lambda s: list(s) + [big] * (12 - len(s)))
    groups, current, members = [], set(), []
    for s in ordered:
        if members and len(current | set(s)) > max_bones:
            groups.append((members, current))
            current, members = set(), []
        current |= set(s)
        members.append(s)
    if members:
        groups.append((members, current))
    return [(sorted(t for s in m for t in sets[s]), sorted(b)) for m, b in groups]


@pytest.mark.parametrize("seed", range(6))
def test_split_by_bones_matches_the_rule(seed):
    rng = np.random.default_rng(seed)
    nv, nb = 400, int(rng.integers(8, 90))
    ring = np.sort(rng.integers(0, nb, nv))  # neighbours share bones, as in a real mesh
    joints = (ring[:, None] + rng.integers(0, 5, (nv, 4))) % nb  # a bone may repeat within a vertex
    weights = rng.random((nv, 4)).astype(np.float32)
    weights[rng.random((nv, 4)) < 0.25] = 0  # dead slots
    a = np.arange(nv - 2)
    tris = np.stack([a, a + 1, a + 2], 1)[rng.permutation(nv - 2)]
    if seed % 2:
        tris = tris[:, :2]  # edges
    max_bones = int(rng.integers(8, 20))
    got = convert._split_by_bones(tris, joints, weights, max_bones)
    want = _split_by_bones_reference(tris, joints, weights, max_bones)
    assert [(r.tolist(), b.tolist()) for r, b in got] == want
    assert len(got) > 1
