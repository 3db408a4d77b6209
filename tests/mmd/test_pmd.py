"""PMD (MikuMikuDance's pre-PMX model format) read into PMX records: a file written here from the format
description (docs/mmd.md, PMD section; this writer shares nothing with the reader) reads with the counts it was
written with, converts to a PMX 2.0 that our PMX reader and babylon-mmd read back with the same counts, agrees with
babylon-mmd's own PMD reader (tests/js/pmd_counts.mjs), and a damaged file fails with a FormatError naming the
offset and field. Through Blender and the command line: File › Import of a PMD (the operator drag and drop calls
too, with the PMX import's options) builds the armature importing the PMX it converts to builds, and
`convert x.pmd --to pmx` writes a PMX 2.0 with the PMD's bones, morphs, materials, bodies and joints."""
from __future__ import annotations

import struct

import numpy as np
import pytest

from skinbridge.core.errors import FormatError
from skinbridge.io_pmx.model import pmd, pmx
from support import tools
from support.pmd_writer import BONES, VERTICES, write_pmd


def test_read_counts_and_values():
    m = pmd.read(write_pmd())
    assert (len(m.vertices), len(m.indices), len(m.materials), len(m.bones), len(m.morphs),
            len(m.rigid_bodies), len(m.joints)) == (6, 9, 2, 8, 1, 2, 1)
    assert [b.name for b in m.bones] == [b[0] for b in BONES]
    np.testing.assert_array_equal(m.vertices["bones"][2], [2, 1, -1, -1])
    np.testing.assert_allclose(m.vertices["weights"][2], [0.6, 0.4, 0, 0], atol=1e-7)
    assert m.vertices["edge_scale"].tolist() == [1, 1, 1, 0, 1, 0]
    (skin,) = m.morphs
    assert (skin.name, skin.panel, skin.name_e) == ("あ", 3, "a")
    assert skin.offsets["vertex"].tolist() == [5, 3]  # base entries 2, 0 → the base's vertices
    assert m.textures == ["skin.png", "skin.sph", "mytoon.bmp"]
    a, b = m.materials
    assert (a.texture, a.sphere_texture, a.sphere_mode, a.shared_toon, a.toon) == (0, 1, 1, 1, 1)
    assert (b.texture, b.shared_toon, b.toon) == (-1, 0, 2)  # toon 2 is the file's own mytoon.bmp
    assert (a.draw_flags, b.draw_flags) == (0x1E, 0x01)  # edge, ground, shadows; alpha 0.98: no shadows, 2-sided
    leg_ik = m.bones[4]
    assert leg_ik.flags & pmx.BoneFlag.IK and leg_ik.ik.target == 3 and leg_ik.ik.loop == 40
    assert leg_ik.ik.limit_angle == np.float32(2.0)  # PMD stores a quarter
    knee, thigh = leg_ik.ik.links
    assert (knee.bone, thigh.bone, thigh.lower) == (2, 1, None)
    np.testing.assert_allclose(knee.lower, [-np.pi, 0, 0], rtol=1e-6)
    np.testing.assert_allclose(knee.upper, [np.radians(-0.5), 0, 0], rtol=1e-6)
    eye = m.bones[7]
    assert eye.flags & pmx.BoneFlag.APPEND_ROTATE and (eye.append_parent, eye.append_ratio) == (6, np.float32(0.3))
    assert m.bones[0].flags & pmx.BoneFlag.MOVABLE and not m.bones[1].flags & pmx.BoneFlag.MOVABLE
    head, hair = m.rigid_bodies
    np.testing.assert_array_equal(head.position, [0, 19, 0])   # relative to 頭 at (0, 18, 0)
    np.testing.assert_array_equal(hair.position, [0, 18, 0])   # relative to 両目 at (0, 19, -0.5)
    assert (hair.shape, hair.mode, hair.no_collision_mask) == (1, 1, 0xFFFE)
    (joint,) = m.joints
    assert (joint.rigid_a, joint.rigid_b) == (0, 1)
    np.testing.assert_array_equal(joint.spring_rotation, [21, 22, 23])
    assert m.warnings == []


@pytest.mark.parametrize("extensions,physics", [(False, False), (True, False)])
def test_optional_sections_may_be_absent(extensions, physics):
    m = pmd.read(write_pmd(extensions=extensions, physics=physics))
    assert (len(m.bones), len(m.morphs), m.rigid_bodies, m.joints) == (8, 1, [], [])
    # without a toon list, toon index i is the shared toon{i+1:02}.bmp
    assert [(x.shared_toon, x.toon) for x in m.materials] == ([(1, 1), (1, 2)] if not extensions else [(1, 1), (0, 2)])


def test_converts_to_a_pmx_with_the_same_counts():
    m = pmd.read(write_pmd())
    again = pmx.read(pmx.write(m))
    assert again.version == pmx.VERSION_20
    assert (len(again.vertices), len(again.materials), len(again.bones), len(again.morphs),
            len(again.rigid_bodies), len(again.joints)) == (6, 2, 8, 1, 2, 1)
    np.testing.assert_array_equal([b.position for b in again.bones], np.float32([b[5] for b in BONES]))


def _section_ends(data: bytes) -> list[int]:
    """Offsets just inside each section of the test file: a cut there must fail."""
    full = pmd.read(data)
    return sorted(set(full.at.values()))


def test_truncated_files_fail_naming_the_field():
    data = write_pmd()
    physics_start = pmd.read(data).at["rigid_bodies"]
    cuts = [3, 10, 300] + [at + 2 for at in _section_ends(data)] + [physics_start + 30, len(data) - 1]
    for cut in cuts:
        if cut == len(write_pmd(extensions=False)) or cut >= len(data):
            continue
        with pytest.raises(FormatError) as e:
            pmd.read(data[:cut])
        assert e.value.offset is not None and e.value.offset <= cut and e.value.field, cut


@pytest.mark.parametrize("section,fmt,field", [
    ("vertices", "<I", "vertex count"), ("indices", "<I", "index count"), ("materials", "<I", "material count"),
    ("bones", "<H", "bone count"), ("iks", "<H", "IK count"), ("morphs", "<H", "morph count"),
    ("rigid_bodies", "<I", "rigid body count"), ("joints", "<I", "joint count")])
def test_counts_beyond_the_data_are_refused_before_allocating(section, fmt, field):
    data = bytearray(write_pmd())
    at = pmd.read(bytes(data)).at[section]
    data[at:at + struct.calcsize(fmt)] = struct.pack(fmt, 0xFFFFFFFF if fmt == "<I" else 0xFFFF)
    with pytest.raises(FormatError) as e:
        pmd.read(bytes(data))
    assert (e.value.offset, e.value.field) == (at, field)


def test_not_a_pmd():
    with pytest.raises(FormatError) as e:
        pmd.read(b"Pmd" + struct.pack("<f", 2.0) + bytes(300))
    assert (e.value.offset, e.value.field) == (3, "version")
    with pytest.raises(FormatError):
        pmd.read(b"PMX " + bytes(10))


def test_babylon_mmd_reads_the_same_model(tmp_path):
    """babylon-mmd 1.3.0's PmdReader: the same counts, bone rest positions, morph vertices, toons and body
    positions, and the PMX we convert to parses in its PmxReader with those counts."""
    path = tmp_path / "t.pmd"
    path.write_bytes(write_pmd())
    m = pmd.read(path.read_bytes())
    (r,) = tools.babylon_parse("pmd_counts.mjs", [path]).values()
    assert "error" not in r, r.get("error")
    assert r["warnings"] == []
    assert (r["vertices"], r["indices"], r["materials"], r["bones"], r["morphs"], r["rigidBodies"],
            r["joints"]) == (len(m.vertices), len(m.indices), len(m.materials), len(m.bones), len(m.morphs),
                             len(m.rigid_bodies), len(m.joints))
    assert r["boneNames"] == [b.name for b in m.bones]
    assert r["boneParents"] == [b.parent for b in m.bones]
    height = np.ptp([b.position[1] for b in m.bones])
    np.testing.assert_allclose(r["bonePositions"], [b.position for b in m.bones], atol=1e-4 * height)
    np.testing.assert_allclose(r["bodyPositions"], [b.position for b in m.rigid_bodies], atol=1e-4 * height)
    assert r["morphVertices"] == [mo.offsets["vertex"].tolist() for mo in m.morphs]
    assert r["toons"] == [[True, 1], [False, 2]]  # its textures start with the 10 toon names
    assert [bool(x.shared_toon) for x in m.materials] == [True, False]
    assert (m.materials[0].toon, m.textures[m.materials[1].toon]) == (1, r["textures"][2])
    (ik,) = r["ik"]
    assert (ik["bone"], ik["target"], ik["iteration"]) == ("左足ＩＫ", 3, 40)
    knee, thigh = ik["links"]
    assert thigh == {"bone": 1, "lower": None, "upper": None}
    np.testing.assert_allclose(np.radians(knee["lower"]), m.bones[4].ik.links[0].lower, rtol=1e-6)
    np.testing.assert_allclose(np.radians(knee["upper"]), m.bones[4].ik.links[0].upper, rtol=1e-6)
    converted = tmp_path / "t.pmx"
    converted.write_bytes(pmx.write(m))
    (p,) = tools.babylon_parse("pmx_counts.mjs", [converted]).values()
    assert "error" not in p and p["warnings"] == []
    assert (p["bones"], p["morphs"], p["materials"], p["rigidBodies"], p["joints"]) == (
        r["bones"], r["morphs"], r["materials"], r["rigidBodies"], r["joints"])


def _heads(context) -> dict[str, np.ndarray]:
    (arm,) = [o for o in context.scene.objects if o.type == "ARMATURE"]
    return {b.name: np.array(arm.matrix_world @ b.head_local) for b in arm.data.bones}


@pytest.mark.blender
def test_file_import_builds_the_converted_pmx_armature(clean_scene, tmp_path):
    import bpy

    src = tmp_path / "t.pmd"
    src.write_bytes(write_pmd())
    handler = bpy.types.FileHandler.bl_rna_get_subclass_py("IO_FH_skinbridge_pmd")  # drag and drop of a .pmd
    assert (handler.bl_import_operator, handler.bl_file_extensions) == ("import_scene.skinbridge_pmd", ".pmd")
    assert bpy.ops.import_scene.skinbridge_pmd(filepath=str(src)) == {"FINISHED"}
    from_pmd = _heads(bpy.context)
    bpy.ops.wm.read_factory_settings(use_empty=True)
    converted = tmp_path / "t.pmx"
    converted.write_bytes(pmx.write(pmd.read(src.read_bytes())))
    assert bpy.ops.import_scene.skinbridge_pmx(filepath=str(converted)) == {"FINISHED"}
    from_pmx = _heads(bpy.context)
    assert len(from_pmd) == len(BONES) and from_pmd.keys() == from_pmx.keys()
    for name, _, _, _, _, (x, y, z) in BONES:  # MMD (x, y, z) in 8 cm units is Blender (x, z, y) × 0.08
        np.testing.assert_allclose(from_pmd[name], np.array([x, z, y]) * 0.08, atol=1e-6, err_msg=name)
        np.testing.assert_allclose(from_pmd[name], from_pmx[name], atol=1e-7, err_msg=name)


@pytest.mark.blender
def test_convert_writes_pmx_20(tmp_path):
    from conftest import run_cli

    src = tmp_path / "t.pmd"
    src.write_bytes(write_pmd())
    r = run_cli("convert", src, "--to", "pmx", "-o", tmp_path / "out")
    assert r.returncode == 0, r.stderr
    (out,) = (tmp_path / "out").rglob("*.pmx")
    m = pmx.read(out.read_bytes())
    assert m.version == pmx.VERSION_20
    assert (len(m.materials), len(m.bones), len(m.morphs), len(m.rigid_bodies), len(m.joints)) == (2, 8, 1, 2, 1)
    assert [b.name for b in m.bones] == [b[0] for b in BONES]
    np.testing.assert_allclose([b.position for b in m.bones], [b[5] for b in BONES], atol=1e-5)


@pytest.mark.default_leg
def test_babylon_mmd_runtime_rest_pose_is_our_rest(tmp_path):
    """babylon-mmd's PMD loader and MmdRuntime (IK on, no motion, no physics), updated once: every bone's world
    position is the rest position we read, within 1e-4 of the model's height (tests/js/pmd_rest_pose.mjs)."""
    import json
    import subprocess

    path = tmp_path / "t.pmd"
    path.write_bytes(write_pmd())
    m = pmd.read(path.read_bytes())
    done = subprocess.run([tools.node_with_babylon(), str(tools.JS / "pmd_rest_pose.mjs"), str(tools.NODE_MODULES),
                           str(path)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    world = json.loads(done.stdout[done.stdout.index("{"):])
    assert sorted(world) == sorted(b.name for b in m.bones)
    height = np.ptp([b.position[1] for b in m.bones])
    for b in m.bones:
        np.testing.assert_allclose(world[b.name], b.position, atol=1e-4 * height, err_msg=b.name)


def test_morph_faults_name_the_morph():
    data = bytearray(write_pmd())
    at = pmd.read(bytes(data)).at["morphs"] + 2 + 20   # morph 0's offset count
    data[at:at + 4] = struct.pack("<I", 0x10000000)
    with pytest.raises(FormatError) as e:
        pmd.read(bytes(data))
    assert (e.value.offset, e.value.field) == (at, "morph 0 offset count")
    data = bytearray(write_pmd())
    first = at + 4 + 1                                     # the base's first entry names vertex 3; make it 6
    data[first:first + 4] = struct.pack("<I", len(VERTICES))
    with pytest.raises(FormatError) as e:
        pmd.read(bytes(data))
    assert (e.value.offset, e.value.field) == (first, "morph 0 offsets")


def test_a_second_ik_on_one_bone_becomes_a_child_bone_as_babylon_mmd_reads_it(tmp_path):
    path = tmp_path / "two_iks.pmd"
    path.write_bytes(write_pmd(second_ik=True))
    m = pmd.read(path.read_bytes())
    extra = m.bones[-1]
    assert (len(m.bones), extra.name, extra.parent) == (len(BONES) + 1, "左足ＩＫ+", 4)
    assert not extra.flags & pmx.BoneFlag.VISIBLE and extra.flags & pmx.BoneFlag.IK
    assert (extra.ik.target, extra.ik.loop, [lk.bone for lk in extra.ik.links]) == (2, 10, [1])
    assert extra.ik.limit_angle == np.float32(1.0)
    (r,) = tools.babylon_parse("pmd_counts.mjs", [path]).values()
    assert r["boneNames"] == [b.name for b in m.bones] and r["boneParents"] == [b.parent for b in m.bones]
    assert [(i["bone"], i["target"], i["iteration"]) for i in r["ik"]] == [("左足ＩＫ", 3, 40), ("左足ＩＫ+", 2, 10)]
