"""MDB through Blender: import with the issue's rules and export back byte-identical."""
from __future__ import annotations

import pathlib

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from skinbridge.core.errors import ExportError, FormatError  # noqa: E402
from skinbridge.io_mdb.mdb import blender_io, mdb  # noqa: E402
from support.mdb_layout import IDENTITY, cols, hair_or_helm, hook, mdb_file, rigd, skin  # noqa: E402
from support.bytes_compare import assert_same_bytes  # noqa: E402
from support.blender_scenes import walking_humanoid  # noqa: E402

pytestmark = pytest.mark.blender

MDB_DIR = pathlib.Path(__file__).resolve().parents[3] / "shared" / "testdata" / "mdb"
SAMPLES = sorted(p for p in MDB_DIR.iterdir() if p.suffix.lower() == ".mdb")


def _roundtrip(path, tmp_path, **kw) -> tuple[bytes, object]:
    result = blender_io.import_mdb(bpy.context, str(path), **kw)
    out = tmp_path / "out.mdb"
    coll = bpy.data.collections[pathlib.Path(path).stem]
    blender_io.export_mdb(bpy.context, str(out), collection=coll)
    return out.read_bytes(), result


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name)
def test_sample_through_blender_is_byte_identical(clean_scene, tmp_path, path):
    written, _ = _roundtrip(path, tmp_path)
    assert_same_bytes(written, path.read_bytes(), mdb.read)


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name)
def test_sample_exported_from_the_view_layer_with_hidden_lods(clean_scene, tmp_path, path):
    blender_io.import_mdb(bpy.context, str(path))
    out = tmp_path / "all.mdb"
    blender_io.export_mdb(bpy.context, str(out))
    assert_same_bytes(out.read_bytes(), path.read_bytes(), mdb.read)


def _points_file() -> bytes:
    rows = ((-1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0))  # determinant −1 as stored, like Hair89's
    return mdb_file(
        rigd("door", [((0, 0, 0), (0, 0, 1), (1, 0, 0), (0, -1, 0), (0, 0, 1)),
                      ((1, 0, 0), (0, 0, 1), (1, 0, 0), (0, -1, 0), (1, 0, 1)),
                      ((0, 1, 0), (0, 0, 1), (1, 0, 0), (0, -1, 0), (0, -1, 1))], [(0, 1, 2)]),
        hook("HP_door01", 0, 2, (1.5, -2.0, 0.25), rows),
        hair_or_helm(b"HELM", "HFM_Helm", 3, (0.0, 0.1, 1.7), IDENTITY),
        cols([(3, 0.25), (17, 0.125)]),
    )


def test_hook_helm_cols_file_from_the_layout_through_blender(clean_scene, tmp_path):
    src = tmp_path / "points.mdb"
    src.write_bytes(_points_file())
    written, _ = _roundtrip(src, tmp_path)
    assert_same_bytes(written, src.read_bytes(), mdb.read)
    hook_ob = bpy.data.objects["HP_door01"]
    assert hook_ob.type == "EMPTY"
    assert np.allclose(np.array(hook_ob.matrix_world)[:3, 3], (1.5, -2.0, 0.25))
    assert np.allclose(np.array(hook_ob.matrix_world)[:3, :3], [(0, 1, 0), (-1, 0, 0), (0, 0, 1)], atol=1e-6)
    spheres = sorted(o.name for o in bpy.data.objects if o.name.startswith("COLS_"))
    assert spheres == ["COLS_17", "COLS_3"]
    assert bpy.data.objects["COLS_3"].empty_display_size == 0.25
    assert np.allclose(np.array(bpy.data.objects["COLS_3"].matrix_world), np.eye(4))


def test_moved_point_empty_writes_its_new_matrix(clean_scene, tmp_path):
    src = tmp_path / "points.mdb"
    src.write_bytes(_points_file())
    blender_io.import_mdb(bpy.context, str(src))
    bpy.data.objects["HP_door01"].location.x += 1.0
    out = tmp_path / "moved.mdb"
    blender_io.export_mdb(bpy.context, str(out), collection=bpy.data.collections["points"])
    hook_p = mdb.read(out.read_bytes()).of_type("HOOK")[0]
    assert hook_p.position.tolist() == [2.5, -2.0, 0.25]
    assert np.allclose(hook_p.orientation, ((-1, 0, 0), (0, 1, 0), (0, 0, 1)), atol=1e-6)


def test_hair_empty_is_not_mirrored(clean_scene):
    blender_io.import_mdb(bpy.context, str(MDB_DIR / "ovr_P_HFM_Hair89.MDB"))
    hair = next(o for o in bpy.data.objects if o.type == "EMPTY")
    stored = mdb.read((MDB_DIR / "ovr_P_HFM_Hair89.MDB").read_bytes()).of_type("HAIR")[0].orientation
    assert np.linalg.det(stored.astype(float)) < -0.99
    assert np.linalg.det(np.array(hair.matrix_world)[:3, :3]) > 0.99
    assert hair["nwn2_shortening"] == "LOW"


def test_hair89_without_skeleton(clean_scene, tmp_path):
    path = MDB_DIR / "ovr_P_HFM_Hair89.MDB"
    written, result = _roundtrip(path, tmp_path)
    assert_same_bytes(written, path.read_bytes(), mdb.read)
    meshes = [o for o in result.objects if o.type == "MESH"]
    assert [len(o.data.vertices) for o in meshes] == [88, 47, 25]
    for ob in meshes:
        assert [g.name for g in ob.vertex_groups] == ["bone_45"]
        weights = [[(g.group, g.weight) for g in v.groups] for v in ob.data.vertices]
        assert weights == [[(0, 1.0)]] * len(ob.data.vertices)
        assert ob[blender_io.SKELETON_PROP] == "P_HHM_skel"
        assert ob.parent is None and not ob.modifiers
    assert not [o for o in bpy.data.objects if o.type == "ARMATURE"]
    assert len(result.warnings) == 1 and "skeleton" in result.warnings[0]
    lods = bpy.data.collections["LODs"]
    assert sorted(o.name for o in lods.objects) == ["P_HFM_Hair89_L01", "P_HFM_Hair89_L02"]
    assert lods in bpy.data.collections["ovr_P_HFM_Hair89"].children.values()
    assert all(not o.visible_get() for o in lods.objects)


def test_balcony_walk_flags_and_material_change(clean_scene, tmp_path):
    path = MDB_DIR / "nwnlibd_PLC_MC_BALCONY3.MDB"
    blender_io.import_mdb(bpy.context, str(path))
    walk = bpy.data.objects["PLC_MC_BALCONY3_W"]
    me = walk.data
    flags = np.empty(len(me.polygons), np.int32)
    me.attributes[blender_io.A_WALK_FLAGS].data.foreach_get("value", flags)
    assert (flags == 0x41).sum() == 22 and (flags == 0).sum() == 28
    names = [me.materials[p.material_index].name for p in me.polygons]
    assert names.count("w_Wood") == 22 and names.count("w_Nonwalk") == 28
    zs = np.array([v.co.z for v in me.vertices])
    sentinels = mdb.read(path.read_bytes()).of_type("WALK")[0].vertices[:, 2] == np.float32(-1e6)
    assert sentinels.sum() == 18 and (zs == -20).tolist() == sentinels.tolist()
    face = int(np.flatnonzero(flags == 0x41)[0])
    me.materials.append(bpy.data.materials.new("w_Grass"))
    me.polygons[face].material_index = len(me.materials) - 1
    out = tmp_path / "grass.mdb"
    blender_io.export_mdb(bpy.context, str(out), collection=bpy.data.collections[path.stem])
    before = mdb.read(path.read_bytes())
    after = mdb.read(out.read_bytes())
    w0, w1 = before.of_type("WALK")[0], after.of_type("WALK")[0]
    expected = w0.faces.copy()
    expected["flags"][face] = 0x11
    assert w1.faces.tobytes() == expected.tobytes()
    assert w1.vertices.tobytes() == w0.vertices.tobytes()  # link vertices back at −1,000,000
    for a, b in zip(before.packets, after.packets):
        if a.type != "WALK":
            assert_same_bytes(mdb.write(mdb.MdbFile([a])), mdb.write(mdb.MdbFile([b])), mdb.read)


def test_moved_vertex_recomputes_the_tangent_frame(clean_scene, tmp_path):
    """The frame of the vertices on the moved vertex's faces is MikkTSpace's; every other vertex keeps the file's
    record, bytes and all (issue 46)."""
    path = MDB_DIR / "kaedrin_plc_cus_cliffcc_01.MDB"
    blender_io.import_mdb(bpy.context, str(path))
    ob = bpy.data.objects["PLC_CUS_CLIFFCC_01"]
    ob.data.vertices[0].co.z += 0.5
    out = tmp_path / "moved.mdb"
    blender_io.export_mdb(bpy.context, str(out), collection=bpy.data.collections[path.stem])
    rigd = mdb.read(path.read_bytes()).of_type("RIGD")[0]
    before = rigd.vertices
    after = mdb.read(out.read_bytes()).of_type("RIGD")[0].vertices
    assert after["position"][0, 2] == np.float32(before["position"][0, 2] + np.float32(0.5))
    near = np.zeros(len(before), bool)
    near[rigd.faces[(rigd.faces == 0).any(axis=1)].reshape(-1)] = True
    assert 1 < near.sum() < 20
    n, t, b = (after[k][near].astype(np.float64) for k in ("normal", "tangent", "binormal"))
    assert np.allclose(b, -np.cross(n, t), atol=1e-6)
    assert set(np.unique(after["uvw"][near, 2]).tolist()) <= {-1.0, 1.0}
    assert after[~near].tobytes() == before[~near].tobytes()
    assert after["normal"].tobytes() == before["normal"].tobytes()


# -- skeleton given by the user -----------------------------------------------------------------------------

SKELETON = ["Root", "Pelvis", "Ribcage", "ap_hand_r", "Neck", "f_jaw", "Head", "f_brow_l", "ap_helm", "Spine1"]
FILTERED = ["Root", "Pelvis", "Neck", "Head", "Spine1", "Ribcage"]


def _armature(names=SKELETON):
    arm = bpy.data.armatures.new("Rig")
    ob = bpy.data.objects.new("Rig", arm)
    bpy.context.scene.collection.objects.link(ob)
    bpy.context.view_layer.objects.active = ob
    bpy.ops.object.mode_set(mode="EDIT")
    for i, n in enumerate(names):
        b = arm.edit_bones.new(n)
        b.head = (i * 0.1, 0, 0)
        b.tail = (i * 0.1, 0, 0.1)
    bpy.ops.object.mode_set(mode="OBJECT")
    assert [b.name for b in arm.bones] == list(names)
    return ob


def _skin_vertices(indices):
    out = []
    for k, b in enumerate(indices):
        out.append(((k * 0.1, (k % 2) * 0.1, 0), (0, 0, 1), (1, 0, 0, 0), (b, 0, 0, 0), (1, 0, 0), (0, -1, 0),
                    (k * 0.1, 0, 1), 1.0))
    return out


def test_skin_indices_map_through_the_filtered_armature_bones_and_back(clean_scene, tmp_path):
    rig = _armature()
    n = len(FILTERED)
    faces = [(k, k + 1, k + 2) for k in range(n - 2)]
    data = mdb_file(skin("body", "P_HHM_skel", _skin_vertices(range(n)), faces),
                    skin("face", "P_HHM_skel", _skin_vertices([0, 1, 0]), [(0, 1, 2)], flags=0x10))
    src = tmp_path / "rigged.mdb"
    src.write_bytes(data)
    result = blender_io.import_mdb(bpy.context, str(src), armature=rig)
    body, face = bpy.data.objects["body"], bpy.data.objects["face"]
    for ob, expected in ((body, FILTERED), (face, ["f_jaw", "f_brow_l", "f_jaw"])):
        got = [ob.vertex_groups[v.groups[0].group].name for v in ob.data.vertices]
        assert got == expected
        assert ob.parent == rig and ob.modifiers[0].object == rig
    assert [g.name for g in body.vertex_groups] == ["Root", "Pelvis", "Ribcage", "Neck", "Head", "Spine1"]
    assert [g.name for g in face.vertex_groups] == ["f_jaw", "f_brow_l"]
    assert not result.warnings
    out = tmp_path / "back.mdb"
    blender_io.export_mdb(bpy.context, str(out), collection=bpy.data.collections["rigged"])
    assert_same_bytes(out.read_bytes(), data, mdb.read)
    # the same bones under new objects: armature names → filtered indices
    for ob in (body, face):
        del ob[blender_io.PROP]
    blender_io.export_mdb(bpy.context, str(out), collection=bpy.data.collections["rigged"], skeleton="P_HHM_skel")
    packets = {p.name_text: p for p in mdb.read(out.read_bytes()).packets}
    assert sorted(packets["body"].vertices["bones"][:, 0].tolist()) == list(range(n))
    assert sorted(packets["face"].vertices["bones"][:, 0].tolist()) == [0, 0, 1]


def test_skin_index_beyond_the_filtered_list_is_a_format_error(clean_scene, tmp_path):
    rig = _armature()
    src = tmp_path / "bad.mdb"
    src.write_bytes(mdb_file(skin("body", "P_HHM_skel", _skin_vertices([0, 6, 1]), [(0, 1, 2)])))
    before = len(bpy.data.objects)
    with pytest.raises(FormatError) as e:
        blender_io.import_mdb(bpy.context, str(src), armature=rig)
    assert "vertex 1" in str(e.value) and "SKIN" in str(e.value)
    assert len(bpy.data.objects) == before


# -- export refusals ----------------------------------------------------------------------------------------

def _triangle_object(name, groups=None, rig=None):
    me = bpy.data.meshes.new(name)
    me.from_pydata([(0, 0, 0), (1, 0, 0), (0, 1, 0)], [], [(0, 1, 2)])
    me.uv_layers.new(name="UVMap")
    ob = bpy.data.objects.new(name, me)
    bpy.context.scene.collection.objects.link(ob)
    for gname, weights in (groups or {}).items():
        g = ob.vertex_groups.new(name=gname)
        for v, w in enumerate(weights):
            if w:
                g.add([v], w, "REPLACE")
    if rig is not None:
        ob.modifiers.new("Armature", "ARMATURE").object = rig
    return ob


def _export(tmp_path, **kw):
    return blender_io.export_mdb(bpy.context, str(tmp_path / "x.mdb"), **kw)


def test_new_static_mesh_exports_as_rigd_with_a_frame(clean_scene, tmp_path):
    _triangle_object("crate")
    warnings = _export(tmp_path)
    (p,) = mdb.read((tmp_path / "x.mdb").read_bytes()).packets
    assert (p.type, p.name_text, len(p.vertices)) == ("RIGD", "crate", 3)
    n, t, b = (p.vertices[k].astype(float) for k in ("normal", "tangent", "binormal"))
    assert np.allclose(b, -np.cross(n, t), atol=1e-6) and not warnings


@pytest.mark.parametrize("suffix, ptype", [("_C2", "COL2"), ("_C3", "COL3"), ("_W", "WALK")])
def test_new_meshes_named_by_convention(clean_scene, tmp_path, suffix, ptype):
    _triangle_object("wall" + suffix)
    _export(tmp_path)
    assert [p.type for p in mdb.read((tmp_path / "x.mdb").read_bytes()).packets] == [ptype]


def test_refuses_more_than_65536_vertices(clean_scene, tmp_path):
    n = 3 * 21846
    me = bpy.data.meshes.new("big")
    me.vertices.add(n)
    me.vertices.foreach_set("co", np.random.default_rng(1).random(n * 3).astype(np.float32))
    me.loops.add(n)
    me.loops.foreach_set("vertex_index", np.arange(n, dtype=np.int32))
    me.polygons.add(n // 3)
    me.polygons.foreach_set("loop_start", np.arange(0, n, 3, dtype=np.int32))
    me.update(calc_edges=True)
    ob = bpy.data.objects.new("big", me)
    bpy.context.scene.collection.objects.link(ob)
    with pytest.raises(ExportError, match="big: 65538 vertices"):
        _export(tmp_path)
    assert not (tmp_path / "x.mdb").exists()


def test_name_lengths(clean_scene, tmp_path):
    ob = _triangle_object("N" * 33)
    with pytest.raises(ExportError, match="33 bytes"):
        _export(tmp_path)
    ob.name = "N" * 32
    warnings = _export(tmp_path)
    data = (tmp_path / "x.mdb").read_bytes()
    assert mdb.read(data).packets[0].name == b"N" * 32
    assert any("without a terminator" in w for w in warnings)


def test_skin_refusals(clean_scene, tmp_path):
    rig = _armature()
    ob = _triangle_object("skinned", {"Neck": [1, 1, 1]}, rig)
    with pytest.raises(ExportError, match="skeleton"):
        _export(tmp_path)
    _export(tmp_path, skeleton="P_HHM_skel")
    p = mdb.read((tmp_path / "x.mdb").read_bytes()).packets[0]
    assert p.type == "SKIN" and p.vertices["bones"][:, 0].tolist() == [2, 2, 2]
    ob.vertex_groups.new(name="bone_300").add([0], 0.5, "REPLACE")
    ob.vertex_groups["Neck"].add([0], 0.5, "REPLACE")
    with pytest.raises(ExportError, match="vertex 0 uses bone index 300"):
        _export(tmp_path, skeleton="S")
    ob.vertex_groups.remove(ob.vertex_groups["bone_300"])
    ob.vertex_groups.new(name="Tail").add([1], 0.5, "REPLACE")
    with pytest.raises(ExportError, match=r"vertex 1 .*'Tail'.* no MDB bone index"):
        _export(tmp_path, skeleton="S")
    ob.vertex_groups.remove(ob.vertex_groups["Tail"])
    ob.vertex_groups["Neck"].remove([2])
    with pytest.raises(ExportError, match="vertex 2 has no weight"):
        _export(tmp_path, skeleton="S")


def test_weight_count_and_sum_refused_unless_limited(clean_scene, tmp_path):
    rig = _armature()
    groups = {name: [0.2, 1, 1] if name == "Root" else [0.2, 0, 0] for name in FILTERED[:5]}
    groups["Root"] = [0.2, 1.0, 0.5]
    _triangle_object("skinned", groups, rig)
    with pytest.raises(ExportError, match="vertex 0 has 5 weights"):
        _export(tmp_path, skeleton="S")
    warnings = _export(tmp_path, skeleton="S", limit_weights=True)
    assert any("2 vertices limited to 4 weights" in w for w in warnings)
    v = mdb.read((tmp_path / "x.mdb").read_bytes()).packets[0].vertices
    assert np.allclose(v["weights"].sum(axis=1), 1.0, atol=1e-6)
    assert v["weights"][2].tolist() == [1.0, 0, 0, 0]


def test_weight_sum_refused(clean_scene, tmp_path):
    rig = _armature()
    _triangle_object("skinned", {"Root": [1, 1, 0.5]}, rig)
    with pytest.raises(ExportError, match="vertex 2 has weights sum to 0.5"):
        _export(tmp_path, skeleton="S")


def test_operators_import_and_export(clean_scene, tmp_path):
    path = MDB_DIR / "kaedrin_plc_cus_cliffcc_01.MDB"
    assert bpy.ops.import_scene.skinbridge_mdb(filepath=str(path)) == {"FINISHED"}
    out = tmp_path / "op.mdb"
    assert bpy.ops.export_scene.skinbridge_mdb(filepath=str(out)) == {"FINISHED"}
    assert_same_bytes(out.read_bytes(), path.read_bytes(), mdb.read)


def test_cols_with_an_armature_parents_spheres_to_bones(clean_scene, tmp_path):
    rig = _armature()
    src = tmp_path / "spheres.mdb"
    src.write_bytes(mdb_file(cols([(4, 0.25), (9, 0.5)])))
    blender_io.import_mdb(bpy.context, str(src), armature=rig)
    neck, spine = bpy.data.objects["COLS_Neck"], bpy.data.objects["COLS_Spine1"]
    assert (neck.parent, neck.parent_type, neck.parent_bone) == (rig, "BONE", "Neck")
    assert spine.parent_bone == "Spine1" and spine.empty_display_size == 0.5
    bpy.context.view_layer.update()
    assert np.allclose(np.array(neck.matrix_world)[:3, 3], rig.data.bones["Neck"].head_local, atol=1e-6)
    out = tmp_path / "back.mdb"
    blender_io.export_mdb(bpy.context, str(out), collection=bpy.data.collections["spheres"])
    assert_same_bytes(out.read_bytes(), src.read_bytes(), mdb.read)


def test_names_that_are_not_utf8_keep_their_bytes(clean_scene, tmp_path):
    verts = [((0, 0, 0), (0, 0, 1), (1, 0, 0), (0, -1, 0), (0, 0, 1)),
             ((1, 0, 0), (0, 0, 1), (1, 0, 0), (0, -1, 0), (1, 0, 1)),
             ((0, 1, 0), (0, 0, 1), (1, 0, 0), (0, -1, 0), (0, -1, 1))]
    data = mdb_file(rigd(b"caf\xe9\0junk", verts, [(0, 1, 2)]))
    src = tmp_path / "latin.mdb"
    src.write_bytes(data)
    written, result = _roundtrip(src, tmp_path)
    assert_same_bytes(written, data, mdb.read)
    assert result.objects[0].name == "caf\ufffd"


def test_maps_are_found_beside_the_file_and_values_kept_on_the_material(clean_scene, tmp_path):
    from support.mdb_layout import material

    verts = [((0, 0, 0), (0, 0, 1), (1, 0, 0), (0, -1, 0), (0, 0, 1)),
             ((1, 0, 0), (0, 0, 1), (1, 0, 0), (0, -1, 0), (1, 0, 1)),
             ((0, 1, 0), (0, 0, 1), (1, 0, 0), (0, -1, 0), (0, -1, 1))]
    src = tmp_path / "crate.mdb"
    src.write_bytes(mdb_file(rigd("crate", verts, [(0, 1, 2)], material(b"crate_d", b"crate_n", kd=(0.5, 0.25, 1),
                                                                         ks=(0.1, 0.2, 0.3), level=0.75, power=2,
                                                                         flags=0x9))))
    image = bpy.data.images.new("px", 2, 2)
    image.filepath_raw = str(tmp_path / "Crate_D.PNG")
    image.file_format = "PNG"
    image.save()
    bpy.data.images.remove(image)
    blender_io.import_mdb(bpy.context, str(src))
    mat = bpy.data.objects["crate"].active_material
    images = [n.image for n in mat.node_tree.nodes if n.type == "TEX_IMAGE"]
    assert [pathlib.Path(i.filepath).name for i in images] == ["Crate_D.PNG"]
    assert mat["nwn2_flags"] == 0x9 and mat["nwn2_specular_power"] == 2.0 and mat["nwn2_normal_map"] == "crate_n"
    assert np.allclose(mat["nwn2_specular_color"], (0.1, 0.2, 0.3))
    bsdf = next(n for n in mat.node_tree.nodes if n.type == "BSDF_PRINCIPLED")
    assert bsdf.inputs["Base Color"].is_linked
    mat["nwn2_flags"] = 0x1
    out = tmp_path / "out.mdb"
    blender_io.export_mdb(bpy.context, str(out), collection=bpy.data.collections["crate"])
    assert mdb.read(out.read_bytes()).packets[0].material.flags == 0x1


def test_failed_import_leaves_no_data(clean_scene, tmp_path, monkeypatch):
    from skinbridge.blender import scene as bscene

    def fail(stage):
        if stage == "done":
            raise RuntimeError("injected")

    monkeypatch.setattr(bscene, "fail_hook", fail)
    before = {k: len(getattr(bpy.data, k)) for k in ("objects", "meshes", "materials", "collections", "images")}
    with pytest.raises(RuntimeError):
        blender_io.import_mdb(bpy.context, str(MDB_DIR / "nwnlibd_PLC_MC_BALCONY3.MDB"))
    assert before == {k: len(getattr(bpy.data, k)) for k in before}


def test_demo_row(clean_scene, tmp_path):
    from skinbridge.app.options import ConvertOptions
    from skinbridge.io_mdb.mdb import blender_demo

    arm_ob, mesh_ob = walking_humanoid(5)
    rows, warnings = blender_demo.demo_rows(bpy.context, str(tmp_path), arm_ob, mesh_ob, ConvertOptions(target="mdb"))
    (row,) = rows
    assert row.ok, row.checked
    assert row.vertices >= len(mesh_ob.data.vertices) and row.triangles > 0


def test_changed_weights_rebuild_only_their_vertices(clean_scene, tmp_path):
    path = MDB_DIR / "ovr_P_HFM_Hair89.MDB"
    blender_io.import_mdb(bpy.context, str(path))
    ob = bpy.data.objects["P_HFM_Hair89"]
    ob.vertex_groups["bone_45"].add([0], 0.25, "REPLACE")
    ob.vertex_groups.new(name="bone_3").add([0], 0.75, "REPLACE")
    out = tmp_path / "w.mdb"
    blender_io.export_mdb(bpy.context, str(out), collection=bpy.data.collections[path.stem])
    before = mdb.read(path.read_bytes()).packets[0].vertices
    after = mdb.read(out.read_bytes()).packets[0].vertices
    assert after[1:].tobytes() == before[1:].tobytes()
    slots = sorted(zip(after["bones"][0].tolist(), after["weights"][0].tolist()))
    assert slots == [(0, 0.0), (0, 0.0), (3, 0.75), (45, 0.25)]


def test_cli_convert_to_mdb_writes_the_file_back(tmp_path):
    from conftest import run_cli

    path = MDB_DIR / "nwnlibd_PLC_MC_BALCONY3.MDB"
    p = run_cli("convert", path, "--to", "mdb", "-o", tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    assert_same_bytes((tmp_path / "nwnlibd_PLC_MC_BALCONY3.mdb").read_bytes(), path.read_bytes(), mdb.read)


def test_new_empties_become_points_by_name(clean_scene, tmp_path):
    rig = _armature()
    made = {}
    for name in ("HP_door01", "HFM_Helm", "HFM_Hair", "COLS_Neck", "plain"):
        ob = bpy.data.objects.new(name, None)
        bpy.context.scene.collection.objects.link(ob)
        made[name] = ob
    made["HP_door01"].location = (1, 2, 3)
    made["COLS_Neck"].empty_display_size = 0.3
    made["HFM_Helm"]["nwn2_hiding"] = "HEAD_HIDDEN"
    _export(tmp_path, armature=rig)
    packets = mdb.read((tmp_path / "x.mdb").read_bytes()).packets
    by_type = {p.type: p for p in packets}
    assert sorted(by_type) == ["COLS", "HAIR", "HELM", "HOOK"] and len(packets) == 4
    assert by_type["HOOK"].position.tolist() == [1, 2, 3] and by_type["HOOK"].name_text == "HP_door01"
    assert by_type["HELM"].kind == 3
    assert by_type["COLS"].spheres["bone"].tolist() == [4]
    assert np.isclose(by_type["COLS"].spheres["radius"][0], 0.3)


def test_trrn_and_unknown_packets_survive_blender(clean_scene, tmp_path):
    from support.mdb_layout import packet

    verts = [((0, 0, 0), (0, 0, 1), (1, 0, 0), (0, -1, 0), (0, 0, 1)),
             ((1, 0, 0), (0, 0, 1), (1, 0, 0), (0, -1, 0), (1, 0, 1)),
             ((0, 1, 0), (0, 0, 1), (1, 0, 0), (0, -1, 0), (0, -1, 1))]
    data = mdb_file(packet(b"TRRN", bytes(range(50))), rigd("ground", verts, [(0, 1, 2)]), packet(b"ZZZZ", b"?"))
    src = tmp_path / "terrain.mdb"
    src.write_bytes(data)
    written, result = _roundtrip(src, tmp_path)
    assert_same_bytes(written, data, mdb.read)
    assert any("ZZZZ" in w for w in result.warnings)


def test_moved_object_writes_world_positions_and_keeps_name_and_material(clean_scene, tmp_path):
    path = MDB_DIR / "kaedrin_plc_cus_cliffcc_01.MDB"
    blender_io.import_mdb(bpy.context, str(path))
    ob = bpy.data.objects["PLC_CUS_CLIFFCC_01"]
    ob.location = (0, 0, 2)
    out = tmp_path / "moved.mdb"
    blender_io.export_mdb(bpy.context, str(out), collection=bpy.data.collections[path.stem])
    before = mdb.read(path.read_bytes()).of_type("RIGD")[0]
    after = mdb.read(out.read_bytes()).of_type("RIGD")[0]
    assert after.name == before.name and mdb.write(mdb.MdbFile([after])).count(before.material.diffuse_map) == 1
    assert after.material.diffuse_map == before.material.diffuse_map and after.material.flags == 0x8
    lifted = before.vertices["position"] + np.float32([0, 0, 2])
    assert np.allclose(np.unique(after.vertices["position"], axis=0), np.unique(lifted, axis=0), atol=1e-5)


def test_new_walk_mesh_flags_from_material_names(clean_scene, tmp_path):
    ob = _triangle_object("floor_W")
    ob.data.materials.append(bpy.data.materials.new("w_Grass"))
    _triangle_object("bare_W")
    _export(tmp_path)
    packets = {p.name_text: p for p in mdb.read((tmp_path / "x.mdb").read_bytes()).packets}
    assert packets["floor_W"].faces["flags"].tolist() == [0x11]
    assert packets["bare_W"].faces["flags"].tolist() == [0x21]


def test_packet_type_wins_over_the_naming_convention(clean_scene, tmp_path):
    verts = [((0, 0, 0), (0, 0, 1), (1, 0, 0), (0, -1, 0), (0, 0, 1)),
             ((1, 0, 0), (0, 0, 1), (1, 0, 0), (0, -1, 0), (1, 0, 1)),
             ((0, 1, 0), (0, 0, 1), (1, 0, 0), (0, -1, 0), (0, -1, 1))]
    data = mdb_file(rigd("wall_C2", verts, [(0, 1, 2)]), rigd("floor_W", verts, [(0, 1, 2)]))
    src = tmp_path / "named.mdb"
    src.write_bytes(data)
    written, result = _roundtrip(src, tmp_path)
    assert_same_bytes(written, data, mdb.read)
    assert all(o.active_material is not None for o in result.objects)


def test_non_finite_values_import_with_a_warning_and_are_made_again_once_edited(clean_scene, tmp_path):
    nan = float("nan")
    verts = [((0, 0, 0), (0, 0, nan), (1, 0, 0), (0, -1, 0), (0, 0, 1)),
             ((1, 0, 0), (0, 0, 1), (1, 0, 0), (0, -1, 0), (1, 0, 1)),
             ((0, 1, 0), (0, 0, 1), (1, 0, 0), (0, -1, 0), (0, -1, 1))]
    src = tmp_path / "nan.mdb"
    src.write_bytes(mdb_file(rigd("bad", verts, [(0, 1, 2)])))
    result = blender_io.import_mdb(bpy.context, str(src))
    assert any("vertex 0" in w and "normal" in w for w in result.warnings)
    # untouched: the file's own bytes, the NaN included
    blender_io.export_mdb(bpy.context, str(tmp_path / "same.mdb"), collection=bpy.data.collections["nan"])
    assert (tmp_path / "same.mdb").read_bytes() == src.read_bytes()
    # the vertex edited: its normal is made from its face, its frame MikkTSpace's (issue 46)
    bpy.data.objects["bad"].data.vertices[0].co.z += 0.5
    blender_io.export_mdb(bpy.context, str(tmp_path / "out.mdb"), collection=bpy.data.collections["nan"])
    v = mdb.read((tmp_path / "out.mdb").read_bytes()).packets[0].vertices
    assert np.isfinite(v["normal"]).all() and np.isfinite(v["tangent"]).all()
    assert np.allclose(np.linalg.norm(v["normal"][0]), 1.0, atol=1e-6)


def test_face_index_out_of_range_refuses_the_import(clean_scene, tmp_path):
    verts = [((0, 0, 0), (0, 0, 1), (1, 0, 0), (0, -1, 0), (0, 0, 1))] * 3
    src = tmp_path / "bad.mdb"
    src.write_bytes(mdb_file(rigd("bad", verts, [(0, 1, 5)])))
    with pytest.raises(FormatError, match="face 0 uses vertex 5"):
        blender_io.import_mdb(bpy.context, str(src))
    assert not bpy.data.objects and not bpy.data.meshes and not bpy.data.collections


def test_empty_packets_through_blender(clean_scene, tmp_path):
    from support.mdb_layout import walk

    data = mdb_file(rigd("nothing", [], []), walk("nowhere_W", [], []), cols([]))
    src = tmp_path / "empty.mdb"
    src.write_bytes(data)
    written, _ = _roundtrip(src, tmp_path)
    assert_same_bytes(written, data, mdb.read)


def test_map_fields_keep_bytes_after_the_nul_and_full_length(clean_scene, tmp_path):
    from support.mdb_layout import material

    verts = [((0, 0, 0), (0, 0, 1), (1, 0, 0), (0, -1, 0), (0, 0, 1)),
             ((1, 0, 0), (0, 0, 1), (1, 0, 0), (0, -1, 0), (1, 0, 1)),
             ((0, 1, 0), (0, 0, 1), (1, 0, 0), (0, -1, 0), (0, -1, 1))]
    data = mdb_file(rigd("crate", verts, [(0, 1, 2)], material(b"crate_d\0old_name_tail", b"N" * 32)))
    src = tmp_path / "maps.mdb"
    src.write_bytes(data)
    written, _ = _roundtrip(src, tmp_path)
    assert_same_bytes(written, data, mdb.read)
    mat = bpy.data.objects["crate"].active_material
    assert (mat["nwn2_diffuse_map"], mat["nwn2_normal_map"]) == ("crate_d", "N" * 32)
    mat["nwn2_diffuse_map"] = "crate_e"
    blender_io.export_mdb(bpy.context, str(tmp_path / "e.mdb"), collection=bpy.data.collections["maps"])
    got = mdb.read((tmp_path / "e.mdb").read_bytes()).packets[0].material
    assert got.diffuse_map == b"crate_e".ljust(32, b"\0") and got.normal_map == b"N" * 32


def test_new_mesh_material_from_its_principled_node_tree(clean_scene, tmp_path):
    ob = _triangle_object("barrel")
    mat = bpy.data.materials.new("wood")
    if mat.node_tree is None:
        mat.use_nodes = True
    bsdf = next(n for n in mat.node_tree.nodes if n.type == "BSDF_PRINCIPLED")
    bsdf.inputs["Base Color"].default_value = (0.5, 0.25, 0.125, 1)
    image = bpy.data.images.new("PLC_barrel_with_a_very_long_texture_name", 2, 2)
    image.filepath = "//textures/PLC_barrel_with_a_very_long_texture_name.dds"
    node = mat.node_tree.nodes.new("ShaderNodeTexImage")
    node.image = image
    mat.node_tree.links.new(node.outputs["Color"], bsdf.inputs["Base Color"])
    ob.data.materials.append(mat)
    warnings = _export(tmp_path)
    got = mdb.read((tmp_path / "x.mdb").read_bytes()).packets[0].material
    assert got.diffuse_color.tolist() == [0.5, 0.25, 0.125]
    assert got.diffuse_map == b"PLC_barrel_with_a_very_long_tex\0"
    assert any("31 bytes" in w for w in warnings)


def test_a_mesh_with_two_materials_becomes_two_packets(clean_scene, tmp_path):
    me = bpy.data.meshes.new("two")
    me.from_pydata([(0, 0, 0), (1, 0, 0), (0, 1, 0), (1, 1, 0)], [], [(0, 1, 2), (1, 3, 2)])
    me.uv_layers.new(name="UVMap")
    for name, colour in (("red", (1, 0, 0, 1)), ("blue", (0, 0, 1, 1))):
        mat = bpy.data.materials.new(name)
        if mat.node_tree is None:
            mat.use_nodes = True
        next(n for n in mat.node_tree.nodes if n.type == "BSDF_PRINCIPLED").inputs["Base Color"].default_value = colour
        me.materials.append(mat)
    me.polygons[1].material_index = 1
    ob = bpy.data.objects.new("two", me)
    bpy.context.scene.collection.objects.link(ob)
    _export(tmp_path)
    packets = mdb.read((tmp_path / "x.mdb").read_bytes()).packets
    assert [(p.name_text, len(p.vertices), len(p.faces)) for p in packets] == [("two_0", 3, 1), ("two_1", 3, 1)]
    assert packets[0].material.diffuse_color.tolist() == [1, 0, 0]
    assert packets[1].material.diffuse_color.tolist() == [0, 0, 1]
    assert packets[1].vertices["position"].tolist() == [[1, 0, 0], [0, 1, 0], [1, 1, 0]]


# -- what Blender cannot hold, kept while unchanged; moved objects keep their kept data ---------------------

def test_faces_with_a_repeated_vertex_come_back_until_the_faces_change(clean_scene, tmp_path):
    import bmesh

    path = MDB_DIR / "ovr_w_rapr221_b.mdb"
    before = mdb.read(path.read_bytes()).packets[0]
    f = before.faces
    repeated = (f[:, 0] == f[:, 1]) | (f[:, 1] == f[:, 2]) | (f[:, 0] == f[:, 2])
    assert repeated.sum() == 9
    blender_io.import_mdb(bpy.context, str(path))
    ob = bpy.data.objects["w_rapr221_b"]
    assert len(ob.data.polygons) == len(f) - 9
    out = tmp_path / "same.mdb"
    assert blender_io.export_mdb(bpy.context, str(out), collection=bpy.data.collections[path.stem]) == []
    assert out.read_bytes() == path.read_bytes()
    ob.data.vertices[0].co.x += 0.25  # positions edited, faces not: the file's faces still
    warnings = blender_io.export_mdb(bpy.context, str(out), collection=bpy.data.collections[path.stem])
    after = mdb.read(out.read_bytes()).packets[0]
    assert after.faces.tobytes() == f.tobytes() and not warnings
    assert after.vertices["tangent"][1:].tobytes() != before.vertices["tangent"][1:].tobytes()  # new frame
    bm = bmesh.new()
    bm.from_mesh(ob.data)
    bm.faces.ensure_lookup_table()
    bmesh.ops.delete(bm, geom=[bm.faces[0]], context="FACES_ONLY")
    bm.to_mesh(ob.data)
    bm.free()
    warnings = blender_io.export_mdb(bpy.context, str(out), collection=bpy.data.collections[path.stem])
    after = mdb.read(out.read_bytes()).packets[0]
    assert any("9 faces with a repeated vertex are not written" in w for w in warnings)
    g = after.faces
    assert len(g) < len(f) - 9 and not ((g[:, 0] == g[:, 1]) | (g[:, 1] == g[:, 2]) | (g[:, 0] == g[:, 2])).any()


def test_walk_face_with_a_repeated_vertex_and_its_flags_come_back(clean_scene, tmp_path):
    from support.mdb_layout import walk

    data = mdb_file(walk("floor_W", [(0, 0, 0), (1, 0, 0), (0, 1, 0), (1, 1, -1e6)],
                         [(0, 1, 2, 0x41), (1, 1, 3, 0x9), (1, 3, 2, 0x11)]))
    src = tmp_path / "floor.mdb"
    src.write_bytes(data)
    written, _ = _roundtrip(src, tmp_path)
    assert written == data
    assert len(bpy.data.objects["floor_W"].data.polygons) == 2


def test_moved_skin_keeps_bone_counts_and_the_stored_normal_lengths(clean_scene, tmp_path):
    verts = [((k * 0.1, (k % 2) * 0.1, 0), (0, 0, 2.0) if k else (2.0, 0, 0), (1, 0, 0, 0), (3, 0, 0, 0),
              (1, 0, 0), (0, -1, 0), (k * 0.1, 0, 1), float(k % 4 + 1)) for k in range(4)]
    data = mdb_file(skin("body", "P_HHM_skel", verts, [(0, 1, 2), (1, 3, 2)]))
    src = tmp_path / "body.mdb"
    src.write_bytes(data)
    blender_io.import_mdb(bpy.context, str(src))
    ob = bpy.data.objects["body"]
    ob.location = (1, 2, 3)
    out = tmp_path / "moved.mdb"
    blender_io.export_mdb(bpy.context, str(out), collection=bpy.data.collections["body"])
    before = mdb.read(data).packets[0].vertices
    after = mdb.read(out.read_bytes()).packets[0].vertices
    assert after["bone_count"].tolist() == [1, 2, 3, 4]
    assert np.allclose(after["position"], before["position"] + np.float32([1, 2, 3]))
    for name in ("normal", "tangent", "binormal", "uvw", "weights", "bones"):  # a translation: their bytes
        assert after[name].tobytes() == before[name].tobytes(), name
    ob.rotation_euler = (0, 0, np.pi / 2)
    blender_io.export_mdb(bpy.context, str(out), collection=bpy.data.collections["body"])
    after = mdb.read(out.read_bytes()).packets[0].vertices
    assert after["bone_count"].tolist() == [1, 2, 3, 4]
    assert np.allclose(after["normal"], [(0, 2, 0), (0, 0, 2), (0, 0, 2), (0, 0, 2)], atol=1e-6)
    assert np.allclose(after["tangent"], [(0, 1, 0)] * 4, atol=1e-6)


def test_moved_walk_keeps_its_link_vertices(clean_scene, tmp_path):
    path = MDB_DIR / "nwnlibd_PLC_MC_BALCONY3.MDB"
    blender_io.import_mdb(bpy.context, str(path))
    bpy.data.objects["PLC_MC_BALCONY3_W"].location = (1, 2, 3)
    out = tmp_path / "moved.mdb"
    blender_io.export_mdb(bpy.context, str(out), collection=bpy.data.collections[path.stem])
    before = mdb.read(path.read_bytes()).of_type("WALK")[0]
    after = mdb.read(out.read_bytes()).of_type("WALK")[0]
    link = before.vertices[:, 2] == np.float32(-1e6)
    assert link.sum() == 18 and (after.vertices[link, 2] == np.float32(-1e6)).all()
    assert np.allclose(after.vertices[link, :2], before.vertices[link, :2] + np.float32([1, 2]))
    assert np.allclose(after.vertices[~link], before.vertices[~link] + np.float32([1, 2, 3]))
    assert after.faces.tobytes() == before.faces.tobytes()
