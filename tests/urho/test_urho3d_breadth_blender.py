"""Through Blender: every sample imports through the operator (item 2, Ninja posed against
core/skinning.py), LODs, material slots, lines, the FileHandler; the 100-bone split (item 3), shape keys ⇄
morphs (item 4), Fox under urho3d as the mirror of urhox (item 5), bad input leaving bpy.data as it was
(item 6), `--deform-only`, and exports that leave the scene unchanged."""
from __future__ import annotations

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from support.failures import cut_files_refused, import_fails_at  # noqa: E402
from support.fingerprint import data_lengths  # noqa: E402

from skinbridge.blender import scene as bscene  # noqa: E402
from skinbridge.blender.mesh import evaluated_world_positions  # noqa: E402
from support.fingerprint import diff_fingerprints, scene_fingerprint  # noqa: E402
from skinbridge.core.errors import ExportError  # noqa: E402
from skinbridge.core.transforms import BLENDER_TO_GLTF, trs_to_matrix  # noqa: E402
from skinbridge.io_urhox.model import blender_io, umd2  # noqa: E402

from conftest import run_cli  # noqa: E402
from support.urho_models import initial_pose_positions, many_bones_model  # noqa: E402
from support.urho_walker import columns, walk  # noqa: E402
from support.umd2_deformation import assert_same_deformation  # noqa: E402

pytestmark = pytest.mark.blender

SAMPLES = ["Box.mdl", "MaterialPreview.mdl", "Mushroom.mdl", "Ninja.mdl", "UnitX.mdl"]
# Urho3D file (x, y, z), left-handed Y up ⇄ Blender (x, z, y): written out here, independent of the mapping.
SWAP_YZ = np.array([[1, 0, 0], [0, 0, 1], [0, 1, 0]], dtype=np.float64)
MIRROR_Z = np.diag([1.0, 1.0, -1.0])






def _meshes():
    return [o for o in bpy.data.objects if o.type == "MESH"]


# -- item 2 ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name,objects,slots,faces,edges", [
    ("Box.mdl", 1, 1, 12, 0),
    ("MaterialPreview.mdl", 1, 2, 1762 + 608, 0),
    ("Mushroom.mdl", 1, 1, 4182 // 3, 0),
    ("Ninja.mdl", 1, 2, 904 + 104, 0),
    ("UnitX.mdl", 1, 1, 0, 1),
])
def test_every_sample_imports_through_the_operator(clean_scene, testdata, name, objects, slots, faces, edges):
    assert bpy.ops.import_scene.skinbridge_urhox(filepath=str(testdata / "urho3d" / name)) == {"FINISHED"}
    [ob] = _meshes()
    assert len(ob.material_slots) == slots
    assert len(ob.data.polygons) == faces
    loose = len(ob.data.edges) - len({e for p in ob.data.polygons for e in p.edge_keys})
    assert loose == edges
    m = umd2.read((testdata / "urho3d" / name).read_bytes())
    assert len(ob.data.vertices) == len(m.vertex_buffers[0].vertices)
    if len(m.geometries) > 1:  # one slot per geometry, in file order
        counts = np.bincount([p.material_index for p in ob.data.polygons], minlength=slots)
        assert counts.tolist() == [g.lods[0].index_count // 3 for g in m.geometries]


def test_ninja_posed_at_its_initial_transforms_matches_core_skinning(clean_scene, testdata):
    path = testdata / "urho3d" / "Ninja.mdl"
    model = umd2.read(path.read_bytes())
    assert bpy.ops.import_scene.skinbridge_urhox(filepath=str(path)) == {"FINISHED"}
    arm = next(o for o in bpy.data.objects if o.type == "ARMATURE")
    assert arm.data.pose_position == "POSE"
    v = model.vertex_buffers[0].vertices
    expected = initial_pose_positions(model)
    [ob] = _meshes()
    got = evaluated_world_positions(ob) @ SWAP_YZ.T  # Blender → file axes
    rest = v["POSITION0"].astype(np.float64)
    diag = np.linalg.norm(rest.max(0) - rest.min(0))
    assert np.abs(got - expected).max() <= 1e-5 * diag
    # the front faces are clockwise in the file and counter-clockwise in Blender: normals agree with faces
    me = ob.data
    face_n = np.array([p.normal[:] for p in me.polygons])
    file_n = v["NORMAL0"].astype(np.float64) @ SWAP_YZ.T
    corner_v = np.array([p.vertices[0] for p in me.polygons])
    assert np.mean(np.sum(face_n * file_n[corner_v], axis=1) > 0) > 0.95


def test_all_lods_import_as_objects_in_an_lod_collection(clean_scene, testdata):
    path = testdata / "urho3d" / "Mushroom.mdl"
    assert bpy.ops.import_scene.skinbridge_urhox(filepath=str(path), all_lods=True) == {"FINISHED"}
    coll = bpy.data.collections["Mushroom_LODs"]
    obs = sorted(coll.objects, key=lambda o: o[bscene.LOD_PROP])
    assert [len(o.data.polygons) * 3 for o in obs] == [4182, 2937, 2067, 1449, 1029]
    np.testing.assert_allclose([o[bscene.LOD_PROP + "_distance"] for o in obs], [0, 14.14, 28.28, 42.43, 56.57],
                               atol=5e-3)
    assert [o.hide_get() for o in obs] == [False, True, True, True, True]
    # export writes LOD 0, and says so when another level is visible
    obs[2].hide_set(False)
    before = scene_fingerprint()
    out = bpy.app.tempdir + "mushroom_lod0.mdl"
    warnings = blender_io.export_mdl(bpy.context, out, "urho3d")
    assert any("LOD level objects not exported" in w for w in warnings)
    assert diff_fingerprints(before, scene_fingerprint()) == []
    again = walk(open(out, "rb").read())
    assert [g["lods"][0][5] for g in again["geometries"]] == [4182]


def test_lines_round_trip_as_a_line_list(clean_scene, testdata, tmp_path):
    src = testdata / "urho3d" / "UnitX.mdl"
    assert bpy.ops.import_scene.skinbridge_urhox(filepath=str(src)) == {"FINISHED"}
    out = tmp_path / "UnitX.mdl"
    assert bpy.ops.export_scene.skinbridge_urhox(filepath=str(out), profile="urho3d") == {"FINISHED"}
    a, b = walk(src.read_bytes()), walk(out.read_bytes())
    assert [lod[1] for g in b["geometries"] for lod in g["lods"]] == [1]  # LINE_LIST
    ia, ib = a["ibs"][0], b["ibs"][0]
    pa = columns(a["vbs"][0])[(0, 0)][ia]
    pb = columns(b["vbs"][0])[(0, 0)][ib]
    np.testing.assert_array_equal(pa, pb)


def test_file_handler_imports_dropped_files(clean_scene, testdata):
    # `.mdl` is shared with Wallpaper Engine: the drop handler reads each file's content and calls its importer
    fh = bpy.types.FileHandler.bl_rna_get_subclass_py("IO_FH_skinbridge_by_content")
    assert fh.bl_import_operator == "wm.skinbridge_drop_import" and ".mdl" in fh.bl_file_extensions.split(";")
    # a drop passes the folder and the file names
    folder = str(testdata / "urho3d")
    assert bpy.ops.wm.skinbridge_drop_import(directory=folder, files=[{"name": "Box.mdl"}, {"name": "Ninja.mdl"}]) \
        == {"FINISHED"}
    assert sorted(o.name for o in _meshes()) == ["Box", "Ninja"]


# -- item 3 -----------------------------------------------------------------------------------------------

def test_100_bones_split_under_urho3d_and_refused_under_urhox(clean_scene, tmp_path):
    source = many_bones_model()
    src = tmp_path / "Tube.mdl"
    src.write_bytes(umd2.write(source))
    assert bpy.ops.import_scene.skinbridge_urhox(filepath=str(src)) == {"FINISHED"}
    out = tmp_path / "Tube_urho3d.mdl"
    assert bpy.ops.export_scene.skinbridge_urhox(filepath=str(out), profile="urho3d", max_bones=64) == {"FINISHED"}
    again = umd2.read(out.read_bytes())
    sizes = [len(g.bone_mapping) for g in again.geometries]
    assert len(sizes) >= 2 and max(sizes) <= 64
    assert len(again.bones) == 100
    assert_same_deformation(source, again, 1e-6)
    with pytest.raises(RuntimeError, match=r"100 bones .*--deform-only.*--profile urho3d"):
        bpy.ops.export_scene.skinbridge_urhox(filepath=str(tmp_path / "Tube_urhox.mdl"), profile="urhox")
    assert not (tmp_path / "Tube_urhox.mdl").exists()


# -- item 4 -----------------------------------------------------------------------------------------------

SHAPE_KEYS = ["Ears", "Tail", "Snout"]


def _add_shape_keys(ob) -> dict[str, np.ndarray]:
    """Three shape keys moving different parts of the mesh; values left at non-zero to show they do not leak."""
    n = len(ob.data.vertices)
    base = np.empty(n * 3, np.float32)
    ob.data.vertices.foreach_get("co", base)
    base = base.reshape(n, 3)
    rng = np.random.default_rng(4)
    ob.shape_key_add(name="Basis", from_mix=False)
    keys = {}
    for k, name in enumerate(SHAPE_KEYS):
        kb = ob.shape_key_add(name=name, from_mix=False)
        co = base.copy()
        part = rng.choice(n, n // 5, replace=False)
        co[part] += rng.normal(0, 2.0, (len(part), 3)).astype(np.float32)
        kb.points.foreach_set("co", co.reshape(-1))
        kb.value = 0.3 * k
        keys[name] = co
    return keys


def test_shape_keys_become_morphs_and_come_back(clean_scene, fox_mdl, tmp_path):
    assert bpy.ops.import_scene.skinbridge_urhox(filepath=str(fox_mdl)) == {"FINISHED"}
    [ob] = _meshes()
    keys = _add_shape_keys(ob)
    before = scene_fingerprint()
    out = tmp_path / "Fox_morphs.mdl"
    assert bpy.ops.export_scene.skinbridge_urhox(filepath=str(out), profile="urho3d") == {"FINISHED"}
    assert diff_fingerprints(before, scene_fingerprint()) == []
    data = out.read_bytes()
    ours, theirs = umd2.read(data), walk(data)
    assert [m.name for m in ours.morphs] == [m["name"] for m in theirs["morphs"]] == SHAPE_KEYS
    basis = np.empty(len(ob.data.vertices) * 3, np.float32)
    ob.data.shape_keys.key_blocks["Basis"].points.foreach_get("co", basis)
    basis = basis.reshape(-1, 3).astype(np.float64)
    vb = theirs["vbs"][0]
    lo, count = vb["morph_range"]
    written = columns(vb)[(0, 0)].astype(np.float64)
    np.testing.assert_allclose(written, basis @ SWAP_YZ.T, atol=1e-5)  # Fox keeps Blender's vertex order
    for name, m_ours, m_theirs in zip(SHAPE_KEYS, ours.morphs, theirs["morphs"]):
        [b_ours], [b_theirs] = m_ours.buffers, m_theirs["buffers"]
        np.testing.assert_array_equal(b_ours.vertices["index"], b_theirs["index"])
        np.testing.assert_array_equal(b_ours.vertices["position"], b_theirs["position"].astype(np.float32))
        expected = (keys[name] - basis) @ SWAP_YZ.T
        moved = np.flatnonzero(np.abs(expected).max(axis=1) > 0)
        np.testing.assert_array_equal(b_theirs["index"], moved)
        assert lo <= moved.min() and moved.max() < lo + count
        np.testing.assert_allclose(b_theirs["position"], expected[moved], atol=1e-6)
    # back into Blender: the same shape keys
    bpy.ops.wm.read_factory_settings(use_empty=True)
    assert bpy.ops.import_scene.skinbridge_urhox(filepath=str(out)) == {"FINISHED"}
    [ob2] = _meshes()
    blocks = ob2.data.shape_keys.key_blocks
    assert [kb.name for kb in blocks] == ["Basis"] + SHAPE_KEYS
    assert all(kb.value == 0.0 for kb in blocks[1:])
    for name in SHAPE_KEYS:
        co = np.empty(len(ob2.data.vertices) * 3, np.float32)
        blocks[name].points.foreach_get("co", co)
        np.testing.assert_allclose(co.reshape(-1, 3), keys[name], atol=1e-6 * max(1.0, np.abs(keys[name]).max()))


def test_urhox_export_drops_shape_keys_with_a_warning(clean_scene, fox_mdl, tmp_path):
    assert bpy.ops.import_scene.skinbridge_urhox(filepath=str(fox_mdl)) == {"FINISHED"}
    _add_shape_keys(_meshes()[0])
    out = tmp_path / "Fox_nomorphs.mdl"
    warnings = blender_io.export_mdl(bpy.context, str(out), "urhox")
    assert walk(out.read_bytes())["morphs"] == []
    assert any(all(n in w for n in SHAPE_KEYS) and "morph" in w for w in warnings)
    assert bpy.ops.export_scene.skinbridge_urhox(filepath=str(out), profile="urhox") == {"FINISHED"}


# -- item 5 -----------------------------------------------------------------------------------------------

def test_fox_urho3d_is_the_mirror_of_urhox(fox_mdl, testdata, tmp_path):
    r = run_cli("convert", testdata / "gltf" / "Fox.glb", "--to", "urhox", "--profile", "urho3d", "-o", tmp_path)
    assert r.returncode == 0, r.stderr
    x, y = walk(fox_mdl.read_bytes()), walk((tmp_path / "Fox.mdl").read_bytes())
    vx, vy = x["vbs"][0], y["vbs"][0]
    assert vx["descs"] == vy["descs"] and vx["count"] == vy["count"]
    cx, cy = columns(vx), columns(vy)
    for key in cx:
        a, b = cx[key].astype(np.float64), cy[key].astype(np.float64)
        if key[0] in (0, 1):  # position, normal: z negated
            np.testing.assert_array_equal(b, a @ MIRROR_Z)
        elif key[0] == 3:  # tangent: xyz mirrored, w kept
            np.testing.assert_array_equal(b[:, :3], a[:, :3] @ MIRROR_Z)
            np.testing.assert_array_equal(b[:, 3], a[:, 3])
        else:  # colour, UV, weights, indices
            np.testing.assert_array_equal(b, a, err_msg=str(key))
    np.testing.assert_array_equal(y["ibs"][0].reshape(-1, 3), x["ibs"][0].reshape(-1, 3)[:, [0, 2, 1]])
    assert [g["mapping"] for g in y["geometries"]] == [g["mapping"] for g in x["geometries"]]
    # bones: a world matrix W (urhox) becomes M · W · P (M: z mirror, P: y/z swap), so a root's local
    # transform becomes M · L · P and a child's P · L · P; offsets (inverse world) become P · O · M.
    assert [(b["name"], b["parent"]) for b in y["bones"]] == [(b["name"], b["parent"]) for b in x["bones"]]
    for i, (bx, by) in enumerate(zip(x["bones"], y["bones"])):
        L = trs_to_matrix(bx["position"], bx["rotation"], bx["scale"])[:3, :3], bx["position"]
        left = MIRROR_Z if bx["parent"] == i else SWAP_YZ
        expect_r = left @ L[0] @ SWAP_YZ
        got_r = trs_to_matrix(by["position"], by["rotation"], by["scale"])[:3, :3]
        np.testing.assert_allclose(got_r, expect_r, atol=2e-6, err_msg=bx["name"])
        np.testing.assert_allclose(by["position"], left @ L[1], atol=1e-6, err_msg=bx["name"])
        o = np.vstack([bx["offset"], [0, 0, 0, 1]])
        m4, p4 = np.eye(4), np.eye(4)
        m4[:3, :3], p4[:3, :3] = MIRROR_Z, SWAP_YZ
        np.testing.assert_allclose(by["offset"], (p4 @ o @ m4)[:3], atol=1e-6, err_msg=bx["name"])
    np.testing.assert_array_equal(y["bbox"][[0, 1, 3, 4]], x["bbox"][[0, 1, 3, 4]])
    np.testing.assert_array_equal(y["bbox"][[2, 5]], -x["bbox"][[5, 2]])
    np.testing.assert_allclose(y["centers"], x["centers"] @ MIRROR_Z, atol=1e-6)


# -- item 6 -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", SAMPLES)
def test_bad_samples_leave_bpy_data_unchanged(clean_scene, testdata, tmp_path, name):
    data = (testdata / "urho3d" / name).read_bytes()
    before = data_lengths()
    cut_files_refused(bpy.ops.import_scene.skinbridge_urhox, data, (4, len(data) // 3, len(data) * 2 // 3), tmp_path,
                      all_lods=True)
    # an index past the vertex count: refused after parsing, before any datablock
    m = umd2.read(data)
    m.index_buffers[0].indices[0] = len(m.vertex_buffers[0].vertices) + 1
    path = tmp_path / "bad_index.mdl"
    path.write_bytes(umd2.write(m))
    with pytest.raises(RuntimeError, match="vertex count"):
        bpy.ops.import_scene.skinbridge_urhox(filepath=str(path))
    assert data_lengths() == before


@pytest.mark.parametrize("stage", ["armature", "materials", "mesh", "done"])
def test_failed_lod_import_removes_the_lod_collection_too(clean_scene, testdata, stage, monkeypatch):
    import_fails_at(monkeypatch, stage, bpy.ops.import_scene.skinbridge_urhox,
                    filepath=str(testdata / "urho3d" / "Mushroom.mdl"), all_lods=True)


# -- --deform-only ----------------------------------------------------------------------------------------

def test_deform_only_drops_bones_that_deform_nothing_below_them(clean_scene, testdata, tmp_path):
    path = testdata / "urho3d" / "Ninja.mdl"
    model = umd2.read(path.read_bytes())
    assert bpy.ops.import_scene.skinbridge_urhox(filepath=str(path)) == {"FINISHED"}
    # expected from the file alone: weighted bones and their ancestors
    v = model.vertex_buffers[0].vertices
    keep = set(np.unique(v["BLENDINDICES0"][v["BLENDWEIGHTS0"] > 0]).tolist())
    for i in list(keep):
        p = model.bones[i].parent
        while p != i and p not in keep:
            keep.add(p)
            i, p = p, model.bones[p].parent
    expected = [b.name for i, b in enumerate(model.bones) if i in keep]
    assert 0 < len(expected) < len(model.bones)
    before = scene_fingerprint()
    out = tmp_path / "ninja_deform.mdl"
    assert bpy.ops.export_scene.skinbridge_urhox(filepath=str(out), profile="urho3d", deform_only=True) == {"FINISHED"}
    assert diff_fingerprints(before, scene_fingerprint()) == []
    again = umd2.read(out.read_bytes())
    assert sorted(b.name for b in again.bones) == sorted(expected)
    names = [b.name for b in again.bones]
    for i, b in enumerate(again.bones):  # parents stay the file's parents
        src = model.bones[[x.name for x in model.bones].index(b.name)]
        src_parent = model.bones[src.parent].name if src.parent != model.bones.index(src) else b.name
        assert names[b.parent] == src_parent
    assert_same_deformation(model, again, 1e-6, deltas={})  # at the initial pose


def src_blend_indices(path) -> np.ndarray:
    return umd2.read(path.read_bytes()).vertex_buffers[0].vertices["BLENDINDICES0"]


def test_profile_errors_name_the_problem(clean_scene, tmp_path):
    src = tmp_path / "Tube.mdl"
    src.write_bytes(umd2.write(many_bones_model(n_bones=70)))
    assert bpy.ops.import_scene.skinbridge_urhox(filepath=str(src)) == {"FINISHED"}
    with pytest.raises(ExportError, match="70 bones"):
        blender_io.export_mdl(bpy.context, str(tmp_path / "x.mdl"), "urhox")
    # deform-only cannot help here (every bone deforms); urho3d with room for every bone writes one geometry,
    # with the file's own empty mapping (blend indices are bone indices) while the mesh is unchanged
    blender_io.export_mdl(bpy.context, str(tmp_path / "y.mdl"), "urho3d", max_bones=128)
    m = umd2.read((tmp_path / "y.mdl").read_bytes())
    assert [g.bone_mapping.tolist() for g in m.geometries] == [[]]
    assert (m.vertex_buffers[0].vertices["BLENDINDICES0"] == src_blend_indices(src)).all()


def test_glb_urhox_axes_unchanged_by_this_issue(fox_mdl):
    """The UrhoX Fox keeps glTF axes: the first bone's offset maps model Y up (a guard for the profile split)."""
    m = umd2.read(fox_mdl.read_bytes())
    assert {b.collision_mask for b in m.bones} == {0} and m.morphs == []
    assert BLENDER_TO_GLTF.shape == (4, 4)
