"""MDB codec, info, check and the SKIN bone order, on the real files and on files built from the layout table."""
from __future__ import annotations

import pathlib
import struct

import numpy as np
import pytest

from skinbridge.core.errors import FormatError
from skinbridge.io_mdb.mdb import bones, check, info, mdb
from support.mdb_layout import IDENTITY, cols, hair_or_helm, hook, material, mdb_file, name32, packet, rigd, skin, walk
from support.bytes_compare import assert_same_bytes

MDB_DIR = pathlib.Path(__file__).resolve().parents[3] / "shared" / "testdata" / "mdb"
SAMPLES = sorted(p for p in MDB_DIR.iterdir() if p.suffix.lower() == ".mdb")

# packet bytes before the vertices (prefix included), vertex size and face size, from the layout table
LAYOUT = {b"RIGD": (212, 60, 6), b"SKIN": (244, 84, 6), b"COL2": (212, 36, 6), b"COL3": (212, 36, 6),
          b"WALK": (52, 12, 10)}


def _readme_samples() -> set[str]:
    """The MDB files the test data README lists (rows of its table whose folder column is `mdb`)."""
    rows = (line.split("|") for line in (MDB_DIR.parent / "README.md").read_text(encoding="utf-8").splitlines())
    return {cells[2].strip() for cells in rows if len(cells) > 3 and cells[1].strip() == "mdb"}


def test_every_sample_is_found():
    listed = _readme_samples()
    assert len(listed) >= 7 and any(name.endswith(".MDB") for name in listed)
    assert {p.name for p in SAMPLES} == listed


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name)
def test_sample_packet_sizes_match_counts_and_write_back(path):
    data = path.read_bytes()
    (n,) = struct.unpack_from("<I", data, 8)
    for k in range(n):
        ptype, offset = struct.unpack_from("<4sI", data, 12 + 8 * k)
        assert data[offset:offset + 4] == ptype
        (size,) = struct.unpack_from("<I", data, offset + 4)
        if ptype in LAYOUT:
            header, vsize, fsize = LAYOUT[ptype]
            nv, nf = struct.unpack_from("<II", data, offset + header - 8)
            assert size + 8 == header + nv * vsize + nf * fsize
        elif ptype == b"COLS":  # u32 count, then (u32 bone, f32 radius) per sphere
            assert size == 4 + 8 * struct.unpack_from("<I", data, offset + 8)[0]
        else:
            assert size + 8 == 92 and ptype in (b"HOOK", b"HAIR", b"HELM")
    m = mdb.read(data)
    assert len(m.packets) == n and not m.warnings and not m.tail
    assert_same_bytes(mdb.write(m), data, mdb.read)


TOTALS = {"kaedrin_fx_skydome_black.mdb": (1305, 1770), "kaedrin_plc_cus_cliffcc_01.MDB": (242, 366),
          "kaedrin_plc_cus_cliffcc_08.MDB": (242, 366), "nwnlibd_PLC_MC_BALCONY3.MDB": (1997, 1006),
          "ovr_P_HFM_Hair89.MDB": (160, 196)}


@pytest.mark.parametrize("name", sorted(TOTALS))
def test_info_totals(name):
    result = info.info((MDB_DIR / name).read_bytes(), str(MDB_DIR / name))
    assert (result["vertices"], result["triangles"]) == TOTALS[name]


def test_info_packet_counts_and_walk_flags():
    balcony = info.info((MDB_DIR / "nwnlibd_PLC_MC_BALCONY3.MDB").read_bytes())
    assert balcony["packet_counts"] == {"RIGD": 1, "WALK": 1, "COL2": 1, "COL3": 1}
    (walk_info,) = [p for p in balcony["packets"] if p["type"] == "WALK"]
    assert walk_info["walk_flags"] == {"0x0": 28, "0x41": 22}
    hair = info.info((MDB_DIR / "ovr_P_HFM_Hair89.MDB").read_bytes())
    assert hair["packet_counts"] == {"SKIN": 3, "HAIR": 1}
    assert hair["skeletons"] == ["P_HHM_skel"]
    assert [p.get("vertices") for p in hair["packets"]] == [88, 47, 25, None]


def _non_finite_vertex_fields(data: bytes) -> list[tuple[int, int, str]]:
    """(packet, vertex, field) of every non-finite float in the vertex records, found from the bytes with the
    layout table (float fields only: SKIN's u8 bone indices excluded)."""
    floats = {b"RIGD": {"position": 0, "normal": 12, "tangent": 24, "binormal": 36, "uvw": 48},
              b"SKIN": {"position": 0, "normal": 12, "weights": 24, "tangent": 44, "binormal": 56, "uvw": 68,
                        "bone_count": 80}}
    out = []
    (n,) = struct.unpack_from("<I", data, 8)
    for k in range(n):
        ptype, offset = struct.unpack_from("<4sI", data, 12 + 8 * k)
        if ptype not in floats:
            continue
        header, vsize, _ = LAYOUT[ptype]
        (nv,) = struct.unpack_from("<I", data, offset + header - 8)
        records = np.frombuffer(data, np.uint8, nv * vsize, offset + header).reshape(nv, vsize)
        for field, at in floats[ptype].items():
            width = {"weights": 4, "bone_count": 1}.get(field, 3)
            values = records[:, at:at + 4 * width].copy().view("<f4")
            out += [(k, int(v), field) for v in np.flatnonzero(~np.isfinite(values).all(axis=1))]
    return out


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name)
def test_check_samples_clean(path):
    """Every sample is clean but for the non-finite values it stores (Helm05 as published): each is reported as
    an error naming its packet, vertex and field, and the records still write back identical."""
    data = path.read_bytes()
    expected = _non_finite_vertex_fields(data)
    assert bool(expected) == (path.name == "ovr_P_EEF_DMCB_Helm05.MDB")
    lines = []
    assert check.check(str(path), data, lines.append) == (1 if expected else 0)
    findings, roundtrip = check.check.findings(data)
    assert roundtrip == "roundtrip: identical"
    assert [(f.severity, f.field) for f in findings] == [("error", field) for _, _, field in expected]
    for finding, (k, v, field) in zip(findings, expected):
        assert finding.element.startswith(f"packet {k} ") and finding.element.endswith(f" vertex {v}")
        ptype, offset = struct.unpack_from("<4sI", data, 12 + 8 * k)
        header, vsize, _ = LAYOUT[ptype]
        record = offset + header + v * vsize
        assert record <= finding.offset < record + vsize
        assert not np.isfinite(np.frombuffer(data, "<f4", 1, finding.offset)[0])
    assert lines[-2:] == [f"{len(expected)} error(s), 0 warning(s)", "roundtrip: identical"]


def test_material_fields_are_read_at_their_offsets():
    m = mdb.read((MDB_DIR / "kaedrin_plc_cus_cliffcc_01.MDB").read_bytes())
    rigd_packet = m.of_type("RIGD")[0]
    assert rigd_packet.material.flags == 0x8
    assert rigd_packet.material.map_name("diffuse_map") and rigd_packet.material.map_name("normal_map")
    hair = mdb.read((MDB_DIR / "ovr_P_HFM_Hair89.MDB").read_bytes())
    assert all(mdb.text_of(p.skeleton) == "P_HHM_skel" for p in hair.of_type("SKIN"))
    assert [p.material.map_name("tint_map") != "" for p in hair.of_type("SKIN")] == [True] * 3


# -- packets the test data lacks, written from the layout table --------------------------------------------

ROWS = ((0.0, 1.0, 0.0), (-1.0, 0.0, 0.0), (0.0, 0.0, 1.0))


def _points_file() -> bytes:
    return mdb_file(
        hook("HP_door01", 0, 2, (1.5, -2.0, 0.25), ROWS),
        hair_or_helm(b"HELM", "HFM_Helm", 3, (0.0, 0.1, 1.7), IDENTITY),
        hair_or_helm(b"HAIR", "HFM_Hair", 2, (0.0, 0.0, 1.6), IDENTITY),
        cols([(3, 0.25), (17, 0.125)]),
    )


def test_hook_helm_cols_from_layout_read_and_write_back():
    data = _points_file()
    m = mdb.read(data)
    hook_p, helm_p, hair_p, cols_p = m.packets
    assert (hook_p.type, hook_p.name_text, hook_p.kind, hook_p.size) == ("HOOK", "HP_door01", 0, 2)
    assert hook_p.position.tolist() == [1.5, -2.0, 0.25]
    assert hook_p.orientation.tolist() == [list(r) for r in ROWS]
    assert (helm_p.type, helm_p.name_text, helm_p.kind) == ("HELM", "HFM_Helm", 3)
    assert (hair_p.type, hair_p.kind) == ("HAIR", 2)
    assert cols_p.spheres["bone"].tolist() == [3, 17] and cols_p.spheres["radius"].tolist() == [0.25, 0.125]
    assert_same_bytes(mdb.write(m), data, mdb.read)
    assert info.info(data)["packet_counts"] == {"HOOK": 1, "HELM": 1, "HAIR": 1, "COLS": 1}


def test_trrn_and_unknown_packets_kept_raw():
    data = mdb_file(packet(b"TRRN", bytes(range(40))), packet(b"ABCD", b"\x01\x02\x03"), cols([]))
    m = mdb.read(data)
    assert [type(p).__name__ for p in m.packets] == ["RawPacket", "RawPacket", "ColsPacket"]
    assert m.packets[0].body == bytes(range(40))
    assert any("ABCD" in w for w in m.warnings)
    assert_same_bytes(mdb.write(m), data, mdb.read)


def test_full_length_name_and_bytes_after_nul_are_kept():
    raw = b"A" * 32
    after_nul = b"short\0garbage".ljust(32, b"\x7f")
    data = mdb_file(rigd("x", [((0, 0, 0),) * 5] * 3, [(0, 1, 2)]).replace(name32("x"), raw, 1),
                    walk("w", [(0, 0, 0)] * 3, [(0, 1, 2, 0x41)]).replace(name32("w"), after_nul, 1))
    m = mdb.read(data)
    assert m.packets[0].name_text == "A" * 32 and m.packets[1].name_text == "short"
    assert_same_bytes(mdb.write(m), data, mdb.read)


def test_gaps_and_tail_are_kept_and_reported():
    p = cols([(0, 1.0)])
    head = b"NWN2" + struct.pack("<HHI", 1, 12, 1) + b"COLS" + struct.pack("<I", 24)
    data = head + b"\xaa\xbb\xcc\xdd" + p + b"tail"
    m = mdb.read(data)
    assert m.gaps == [b"\xaa\xbb\xcc\xdd"] and m.tail == b"tail"
    assert_same_bytes(mdb.write(m), data, mdb.read)
    findings, roundtrip = check.check.findings(data)
    assert roundtrip == "roundtrip: identical"
    assert {f.field for f in findings} == {"offset", "file"}


def test_raw_name_helper_has_no_terminator_at_32_bytes():
    assert mdb.raw_name("B" * 32) == b"B" * 32
    with pytest.raises(ValueError):
        mdb.raw_name("B" * 33)


# -- bone order ---------------------------------------------------------------------------------------------

SKELETON = ["Root", "Pelvis", "Ribcage", "ap_hand_r", "Neck", "f_jaw", "Head", "f_brow_l", "ap_helm", "Spine1"]


def test_skin_bone_order_drops_attachment_and_face_bones_and_moves_ribcage_last():
    assert bones.skin_bone_names(SKELETON) == ["Root", "Pelvis", "Neck", "Head", "Spine1", "Ribcage"]
    assert bones.skin_bone_order(SKELETON) == [0, 1, 4, 6, 9, 2]


def test_skin_bone_order_for_head_meshes_puts_the_face_bones_first():
    assert bones.uses_head_bones(0x11) and not bones.uses_head_bones(0x8)
    # an index below the face bone count names a face bone, a higher one the body list's bone at that index
    assert bones.skin_bone_names(SKELETON, head=True) == ["f_jaw", "f_brow_l", "Neck", "Head", "Spine1", "Ribcage"]


def test_skin_bone_order_without_ribcage():
    assert bones.skin_bone_names(["a", "ap_b", "c"]) == ["a", "c"]


# -- bad input ----------------------------------------------------------------------------------------------

def _base() -> bytes:
    verts = [((0, 0, 0), (0, 0, 1), (1, 0, 0, 0), (1, 0, 0, 0), (1, 0, 0), (0, 1, 0), (0, 0, 1), 1.0)] * 3
    return mdb_file(skin("s", "P_HHM_skel", verts, [(0, 1, 2)]), cols([(1, 0.5)]))


def test_base_reads():
    assert mdb.write(mdb.read(_base())) == _base()


@pytest.mark.parametrize("mutate, field", [
    (lambda d: d[:3], "signature"),
    (lambda d: b"NWN3" + d[4:], "signature"),
    (lambda d: d[:8] + struct.pack("<I", 0xFFFFFFFF) + d[12:], "packet_count"),
    (lambda d: d[:16] + struct.pack("<I", 4) + d[20:], "key 0.offset"),
    (lambda d: d[:16] + struct.pack("<I", len(d) - 4) + d[20:], "key 0.offset"),
    (lambda d: d[:12] + b"RIGD" + d[16:], "packet 0.type"),
    (lambda d: d[:32] + struct.pack("<I", 0x7FFFFFFF) + d[36:], "packet 0.size"),
    (lambda d: d[:28 + 236] + struct.pack("<I", 1000) + d[28 + 240:], "packet 0 (SKIN).vertex_count"),
    (lambda d: d[:28 + 240] + struct.pack("<I", 0xFFFFFFFF) + d[28 + 244:], "packet 0 (SKIN).face_count"),
    (lambda d: d[:-12] + struct.pack("<I", 2) + d[-8:], "packet 1 (COLS).count"),
    (lambda d: d[:-8], None),  # file cut inside the last packet
])
def test_structural_faults_raise_format_error(mutate, field):
    with pytest.raises(FormatError) as e:
        mdb.read(mutate(_base()))
    assert e.value.offset is not None
    if field:
        assert e.value.field == field


def test_offsets_pointing_backwards_are_refused():
    data = _base()
    first = struct.unpack_from("<I", data, 16)[0]
    bad = data[:24] + struct.pack("<I", first) + data[28:]
    with pytest.raises(FormatError) as e:
        mdb.read(bad)
    assert e.value.field == "key 1.offset"


def test_point_packet_shorter_than_its_layout_is_refused():
    data = mdb_file(packet(b"HOOK", bytes(40)))
    with pytest.raises(FormatError) as e:
        mdb.read(data)
    assert e.value.field.endswith(".size")


def test_check_reports_semantic_faults_with_offsets():
    verts = [((0, 0, 0), (0, 0, 1), (0.5, 0.25, 0, 0), (1, 2, 0, 0), (1, 0, 0), (0, 1, 0), (0, 0, 1), 2.5)] * 3
    faces = [(0, 1, 7)]
    data = mdb_file(skin("s", "", verts, faces), walk("w", [(0, 0, float("nan"))] * 3, [(0, 1, 2, 0x8000)]),
                    cols([(0, -1.0)]), hair_or_helm(b"HAIR", "h", 9, (0, 0, 0), IDENTITY))
    m = mdb.read(data)
    assert_same_bytes(mdb.write(m), data, mdb.read)  # faults are kept
    lines = []
    assert check.check("x.mdb", data, lines.append) == 1
    findings = check.validate(m)
    by_field = {(f.field, f.severity) for f in findings}
    assert ("faces", "error") in by_field and ("weights", "warning") in by_field
    assert ("bone_count", "warning") in by_field and ("skeleton", "warning") in by_field
    assert ("position", "error") in by_field and ("flags", "warning") in by_field
    assert ("radius", "error") in by_field and ("shortening", "warning") in by_field
    face = next(f for f in findings if f.field == "faces")
    skin_at = struct.unpack_from("<I", data, 16)[0]
    assert face.offset == skin_at + 244 + 3 * 84 and data[face.offset + 4:face.offset + 6] == b"\x07\x00"
    weights = next(f for f in findings if f.field == "weights")
    assert struct.unpack_from("<f", data, weights.offset)[0] == 0.5
    assert lines[-1] == "roundtrip: identical"


def test_check_on_unreadable_file():
    lines = []
    assert check.check("x.mdb", b"NWN2\x01\x00", lines.append) == 1
    assert "not attempted" in lines[-1]


def test_material_layout_fields():
    data = mdb_file(rigd("m", [((0, 0, 0),) * 5] * 3, [(0, 1, 2)],
                         material(b"diff", b"norm", b"tint", b"glow", (0.1, 0.2, 0.3), (0.4, 0.5, 0.6), 1.25, 7.0,
                                  0x11)))
    mat = mdb.read(data).packets[0].material
    assert [mat.map_name(w) for w in mdb.Material.MAPS] == ["diff", "norm", "tint", "glow"]
    assert np.allclose(mat.diffuse_color, (0.1, 0.2, 0.3)) and np.allclose(mat.specular_color, (0.4, 0.5, 0.6))
    assert (float(mat.specular_level), float(mat.specular_power), mat.flags) == (1.25, 7.0, 0x11)


def test_hostile_cases_keep_the_bad_input_contract():
    from support.hostile import hostile_mdb
    from support.hostile.hostile_cases import Codec, generic_cases, measured, problems

    from skinbridge.io_mdb.mdb import convert

    codec = Codec("mdb", mdb.read, mdb.write, convert.semantic, hostile_mdb.seeds, hostile_mdb.cases)
    cases = hostile_mdb.cases() + generic_cases(codec)
    assert len(cases) > 300
    found = [p for case in cases for p in problems(case, measured(codec, case.data, trace=False))]
    assert found == []


def test_empty_packets_read_check_and_map():
    from skinbridge.io_mdb.mdb import convert

    data = mdb_file(rigd("empty", [], []), skin("s", "k", [], []), walk("w", [], []), cols([]))
    m = mdb.read(data)
    assert_same_bytes(mdb.write(m), data, mdb.read)
    assert check.validate(m) == []
    scene, warnings = convert.to_scene(m)
    assert [len(x.positions) for x in scene.meshes] == [0, 0, 0]


@pytest.mark.blender
def test_cli_info_and_check_on_an_upper_case_file():
    import json

    from conftest import run_cli

    path = MDB_DIR / "nwnlibd_PLC_MC_BALCONY3.MDB"
    p = run_cli("info", path)
    assert p.returncode == 0, p.stderr
    result = json.loads(p.stdout)
    result = result[0] if isinstance(result, list) else result
    assert (result["vertices"], result["triangles"]) == (1997, 1006)
    p = run_cli("check", path)
    assert p.returncode == 0 and "roundtrip: identical" in p.stdout, p.stdout + p.stderr


def test_registry_finds_the_mdb_spec():
    from skinbridge import formats

    spec = formats.identify((MDB_DIR / "ovr_P_HFM_Hair89.MDB").read_bytes()[:64], "x.MDB")
    assert spec.name == "mdb" and spec.target == "mdb" and spec.folder_suffix == "_MDB"
    for capability in ("read", "write", "info", "check", "load", "semantic", "blender_import", "export_target",
                       "demo"):
        assert spec.has(capability)
    assert spec.get("read") is mdb.read and spec.get("info") is info.info


# -- mapping ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name)
def test_scene_and_back_is_byte_identical(path):
    from skinbridge.io_mdb.mdb import convert

    data = path.read_bytes()
    scene, _ = convert.load(str(path), data)
    m, _ = convert.from_scene(scene)
    assert_same_bytes(mdb.write(m), data, mdb.read)


def test_mapping_conventions():
    from skinbridge.io_mdb.mdb import convert

    data = (MDB_DIR / "kaedrin_plc_cus_cliffcc_01.MDB").read_bytes()
    m = mdb.read(data)
    scene, warnings = convert.to_scene(m)
    assert warnings == []
    rigd_packet = m.of_type("RIGD")[0]
    mesh = next(x for x in scene.meshes if x.extras["mdb"]["type"] == "RIGD")
    assert np.array_equal(mesh.uvs[0][1][:, 1], -rigd_packet.vertices["uvw"][:, 1])  # V = −stored V
    assert np.array_equal(mesh.positions, rigd_packet.vertices["position"])  # Z-up metres, unchanged
    assert np.array_equal(mesh.tangents[:, 3], rigd_packet.vertices["uvw"][:, 2])
    assert convert.lod_level("P_HFM_Hair89_L02") == 2 and convert.lod_level("Hair") == 0
    assert convert.walk_material_name(0x41) == "w_Wood" and convert.walk_material_name(0) == "w_Nonwalk"
    # off-table values are named by their lowest material bit; no material bit is w_Nonwalk
    assert [convert.walk_material_name(f) for f in (0x40, 0x49, 0x1, 0x8000_0011)] == \
        ["w_Wood", "w_Dirt", "w_Nonwalk", "w_Grass"]


def test_changed_vertex_gets_a_new_frame_and_the_others_keep_their_bytes():
    from skinbridge.io_mdb.mdb import convert

    data = (MDB_DIR / "kaedrin_fx_skydome_black.mdb").read_bytes()
    scene, _ = convert.to_scene(mdb.read(data))
    mesh = scene.meshes[0]
    mesh.positions = mesh.positions.copy()
    mesh.positions[7, 0] += 1
    mesh.tangents = mesh.tangents.copy()
    mesh.tangents[7, :3] = (0.0, 1.0, 0.0)
    out = mdb.read(mdb.write(convert.from_scene(scene)[0])).packets[0].vertices
    before = mdb.read(data).packets[0].vertices
    rows_out = out.view(np.uint8).reshape(len(out), -1)
    rows_before = before.view(np.uint8).reshape(len(before), -1)
    changed = np.flatnonzero((rows_out != rows_before).any(axis=1))
    assert changed.tolist() == [7]
    n, t = out["normal"][7].astype(float), out["tangent"][7].astype(float)
    assert np.allclose(out["binormal"][7], -np.cross(n, t), atol=1e-6)


def test_skin_indices_through_a_skeleton_and_back():
    from skinbridge.core import model as cm
    from skinbridge.io_mdb.mdb import convert

    verts = [((k * 0.1, 0, 0), (0, 0, 1), (0.5, 0.5, 0, 0), (k, 5, 0, 0), (1, 0, 0), (0, -1, 0), (0, 0, 1), 2.0)
             for k in range(6)]
    data = mdb_file(skin("body", "P_HHM_skel", verts, [(0, 1, 2), (3, 4, 5)]))
    scene, _ = convert.to_scene(mdb.read(data), skeleton_names=SKELETON)
    joints = scene.meshes[0].joints
    assert [SKELETON[j] for j in joints[:, 0]] == ["Root", "Pelvis", "Neck", "Head", "Spine1", "Ribcage"]
    assert {SKELETON[j] for j in joints[:, 1]} == {"Ribcage"}
    scene.skeleton = cm.Skeleton("P_HHM_skel", [cm.Bone(n, -1, np.eye(4), np.zeros(3), np.array([1.0, 0, 0, 0]),
                                                        np.ones(3)) for n in SKELETON])
    assert_same_bytes(mdb.write(convert.from_scene(scene)[0]), data, mdb.read)
    with pytest.raises(FormatError, match="vertex 0 uses bone index 5"):
        convert.to_scene(mdb.read(data), skeleton_names=["a", "b", "c"])


def test_new_core_meshes_become_packets_by_weights_and_name():
    from skinbridge.core import model as cm
    from skinbridge.core.errors import ExportError
    from skinbridge.io_mdb.mdb import convert

    tri = np.array([[0, 1, 2]], np.int32)
    pos = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0]], np.float32)
    nrm = np.tile(np.float32([0, 0, 1]), (3, 1))
    tan = np.tile(np.float32([1, 0, 0, 1]), (3, 1))
    uv = pos[:, :2].copy()
    scene = cm.Scene("new", meshes=[cm.Mesh("crate", pos, tri, nrm, tan, [("UVMap", uv)]),
                                    cm.Mesh("crate_C3", pos, tri, nrm), cm.Mesh("crate_W", pos, tri)])
    m, _ = convert.from_scene(scene)
    assert [p.type for p in m.packets] == ["RIGD", "COL3", "WALK"]
    rigd_v = m.packets[0].vertices
    assert np.allclose(rigd_v["binormal"], -np.cross(nrm, tan[:, :3]))
    assert rigd_v["uvw"][:, 1].tolist() == [0, 0, -1] and rigd_v["uvw"][:, 2].tolist() == [1, 1, 1]
    assert m.packets[2].faces["flags"].tolist() == [0x21]
    skinned = cm.Mesh("body", pos, tri, nrm, tan, [("UVMap", uv)], joints=np.zeros((3, 4), np.int32),
                      weights=np.tile(np.float32([1, 0, 0, 0]), (3, 1)))
    with pytest.raises(ExportError, match="skeleton"):
        convert.from_scene(cm.Scene("s", meshes=[skinned]))
    packet = convert.from_scene(cm.Scene("s", meshes=[skinned]), skeleton="P_HHM_skel")[0].packets[0]
    assert packet.type == "SKIN" and mdb.text_of(packet.skeleton) == "P_HHM_skel"
