"""PMX validator and `check`: corrupted copies of Luka give exactly the expected finding (element, byte offset,
field) and exit status 1; records built in memory are checked the same way before export.

Offsets here and in tests/support/pmx_offsets.py are worked out by hand from the layout in docs/mmd.md §2, never
taken from the reader."""
from __future__ import annotations

import math
import struct

import numpy as np
import pytest

from skinbridge.core.errors import ExportError, FormatError
from skinbridge.io_pmx.model import check, pmx
from skinbridge.io_pmx.model import validate
from skinbridge.io_pmx.model.validate import Finding
from support.pmx_offsets import LUKA_BONES, bone_field_offsets, luka_vertex_offsets, skip_text
from support.pmx_samples import LUKA, SAMPLES, build_full_model
from support.bytes_compare import assert_same_bytes

@pytest.fixture(scope="module")
def luka(testdata) -> bytes:
    return (testdata / "pmx" / LUKA).read_bytes()


def errors(findings):
    return [f for f in findings if f.severity == "error"]


def check_bytes(tmp_path, data: bytes) -> tuple[int, list[str], list[Finding], str]:
    path = tmp_path / "corrupt.pmx"
    path.write_bytes(data)
    lines: list[str] = []
    status = check.check(str(path), data, lines.append)
    findings, roundtrip = check.check.findings(data)
    return status, lines, findings, roundtrip


def assert_one_error(findings, element: str, offset: int | None, field: str) -> Finding:
    found = errors(findings)
    assert [(f.element, f.offset, f.field) for f in found] == [(element, offset, field)], found
    return found[0]


# ------------------------------------------------------------------------------------------------------------
# Real files

@pytest.mark.parametrize("name", SAMPLES)
def test_check_reports_no_error_and_identical_roundtrip(testdata, name):
    lines: list[str] = []
    data = (testdata / "pmx" / name).read_bytes()
    status = check.check(name, data, lines.append)
    findings, roundtrip = check.check.findings(data)
    assert status == 0 and errors(findings) == []
    assert roundtrip == "roundtrip: identical" and lines[-1] == "roundtrip: identical"


# ------------------------------------------------------------------------------------------------------------
# Corrupted copies of Luka

def test_swapped_knee_limits(luka, tmp_path):
    at = bone_field_offsets(luka, "左足ＩＫ")
    lower, upper = at["ik.links[0].lower"], at["ik.links[0].upper"]
    assert struct.unpack_from("<3f", luka, lower)[0] == pytest.approx(-math.pi)
    corrupt = bytearray(luka)
    corrupt[lower:lower + 12], corrupt[upper:upper + 12] = luka[upper:upper + 12], luka[lower:lower + 12]
    corrupt = bytes(corrupt)
    model = pmx.read(corrupt)  # a semantic fault: kept
    assert_same_bytes(pmx.write(model), corrupt, pmx.read)
    status, lines, findings, roundtrip = check_bytes(tmp_path, corrupt)
    f = assert_one_error(findings, "左足ＩＫ link 0 (左ひざ)", lower, "ik.links[0].lower")
    assert "X" in f.message
    assert status == 1 and roundtrip == "roundtrip: identical"
    assert any("左足ＩＫ link 0 (左ひざ)" in line and "ik.links[0].lower" in line for line in lines)


def test_bone_index_equal_to_bone_count(luka, tmp_path):
    at = bone_field_offsets(luka, "上半身")
    assert struct.unpack_from("<h", luka, at["parent"])[0] == 0  # its parent is センター, bone 0
    corrupt = bytearray(luka)
    struct.pack_into("<h", corrupt, at["parent"], LUKA_BONES)
    corrupt = bytes(corrupt)
    assert_same_bytes(pmx.write(pmx.read(corrupt)), corrupt, pmx.read)
    status, _, findings, roundtrip = check_bytes(tmp_path, corrupt)
    assert_one_error(findings, "bone 1 (上半身)", at["parent"], "parent")
    assert status == 1 and roundtrip == "roundtrip: identical"


def test_nan_position(luka, tmp_path):
    _, vertex = luka_vertex_offsets(luka, 1234)
    corrupt = bytearray(luka)
    struct.pack_into("<f", corrupt, vertex + 4, float("nan"))  # position.y
    corrupt = bytes(corrupt)
    assert_same_bytes(pmx.write(pmx.read(corrupt)), corrupt, pmx.read)
    status, _, findings, roundtrip = check_bytes(tmp_path, corrupt)
    assert_one_error(findings, "vertex 1234", vertex, "position")
    assert status == 1 and roundtrip == "roundtrip: identical"


def test_signalling_nan_keeps_its_bits(luka):
    _, vertex = luka_vertex_offsets(luka, 7)
    at = bone_field_offsets(luka, "上半身")
    corrupt = bytearray(luka)
    corrupt[vertex:vertex + 4] = bytes.fromhex("0100807f")  # 0x7F800001, a signalling NaN
    corrupt[at["position"]:at["position"] + 4] = bytes.fromhex("0100807f")
    corrupt = bytes(corrupt)
    assert_same_bytes(pmx.write(pmx.read(corrupt)), corrupt, pmx.read)


def test_vertex_count_beyond_the_data(luka, tmp_path):
    count_at, _ = luka_vertex_offsets(luka, 0)
    corrupt = bytearray(luka)
    struct.pack_into("<i", corrupt, count_at, 1_000_000)  # 1e6 vertices of ≥ 103 bytes: far beyond 3 MB
    corrupt = bytes(corrupt)
    with pytest.raises(FormatError) as e:
        pmx.read(corrupt)
    assert (e.value.offset, e.value.field) == (count_at, "vertex count")
    status, lines, findings, roundtrip = check_bytes(tmp_path, corrupt)
    assert_one_error(findings, "file", count_at, "vertex count")
    assert status == 1 and roundtrip.startswith("roundtrip: not attempted")


def test_roundtrip_message_names_the_first_difference(luka):
    at = bone_field_offsets(luka, "上半身")
    model = pmx.read(luka)
    model.bones[1].position = model.bones[1].position.copy()
    model.bones[1].position.view(np.uint32)[0] ^= 1  # the lowest bit of x: the first byte differs
    message = check.check.roundtrip(luka, pmx.write(model), model)
    assert message == f"roundtrip: differs at offset {at['position']} (field bone 1 (上半身) position)"


# ------------------------------------------------------------------------------------------------------------
# Records built in memory (what an exporter validates); offsets are None

def test_full_model_is_clean():
    assert validate.validate(build_full_model(), for_export=True) == []
    assert validate.validate(build_full_model(pmx21=False), for_export=True) == []


def mutate_and_check(mutate, element: str, field: str, for_export: bool = True) -> Finding:
    m = build_full_model()
    mutate(m)
    return assert_one_error(validate.validate(m, for_export), element, None, field)


def test_bone_its_own_parent():
    def own_parent(m):
        m.bones[3].parent = 3

    mutate_and_check(own_parent, "bone 3 (左足首)", "parent")


def test_parent_cycle():
    def cycle(m):
        m.bones[0].parent = 3  # 0 → 3 → 2 → 0

    f = mutate_and_check(cycle, "bone 0 (センター)", "parent")
    assert "cycle" in f.message


@pytest.mark.parametrize("field, value, element", [
    ("tail_bone", 7, "bone 0 (センター)"),
    ("append_parent", -2, "bone 5 (付与)"),
])
def test_bone_indices_out_of_range(field, value, element):
    index = int(element.split()[1])
    f = mutate_and_check(lambda m: setattr(m.bones[index], field, value), element,
                         "tail" if field == "tail_bone" else field)
    assert str(value) in f.message


def test_ik_target_and_link_out_of_range():
    mutate_and_check(lambda m: setattr(m.bones[4].ik, "target", 7), "bone 4 (左足ＩＫ)", "ik.target")
    mutate_and_check(lambda m: setattr(m.bones[4].ik.links[1], "bone", -1), "bone 4 (左足ＩＫ)",
                     "ik.links[1].bone")


def test_reversed_ik_limit_in_memory():
    def reverse(m):
        link = m.bones[4].ik.links[0]
        link.lower, link.upper = link.upper, link.lower

    mutate_and_check(reverse, "左足ＩＫ link 0 (左ひざ)", "ik.links[0].lower")


def test_flags_inconsistent_with_the_data():
    mutate_and_check(lambda m: setattr(m.bones[4], "ik", None), "bone 4 (左足ＩＫ)", "flags")
    mutate_and_check(lambda m: setattr(m.bones[1], "fixed_axis", np.zeros(3, np.float32)), "bone 1 (上半身)",
                     "flags")


def test_vertex_weight_index_out_of_range():
    def bad_weight(m):
        m.vertices["bones"][2, 3] = 7  # vertex 2 is BDEF4

    mutate_and_check(bad_weight, "vertex 2", "bones[3]")


def test_bdef4_weight_sum_is_an_error_on_export_and_a_warning_in_check():
    m = build_full_model()
    m.vertices["weights"][2] = (0.5, 0.25, 0.125, 0.1)  # vertex 2 is BDEF4: sum 0.975
    assert_one_error(validate.validate(m, for_export=True), "vertex 2", None, "weights")
    findings = validate.validate(m, for_export=False)
    assert errors(findings) == []
    assert [(f.severity, f.element, f.field) for f in findings] == [("warning", "vertex 2", "weights")]
    with pytest.raises(ExportError, match="vertex 2"):
        validate.raise_for_errors(validate.validate(m, for_export=True))


def test_non_finite_values():
    def nan_mass(m):
        m.rigid_bodies[1].mass = np.float32("nan")

    mutate_and_check(nan_mass, "rigid body 1 (髪)", "mass")

    def inf_normal(m):
        m.vertices["normal"][5, 0] = np.inf

    mutate_and_check(inf_normal, "vertex 5", "normal")


def test_morph_and_rigid_body_indices():
    def bad_vertex_offset(m):
        m.morphs[1].offsets["vertex"][1] = len(m.vertices)

    mutate_and_check(bad_vertex_offset, "morph 1 (あ)", "offsets[1].vertex")

    def bad_group(m):
        m.morphs[0].offsets["morph"][0] = len(m.morphs)

    mutate_and_check(bad_group, "morph 0 (グループ)", "offsets[0].morph")
    mutate_and_check(lambda m: setattr(m.rigid_bodies[0], "bone", 7), "rigid body 0 (頭)", "bone")
    mutate_and_check(lambda m: setattr(m.joints[0], "rigid_b", 3), "joint 0 (首)", "rigid_b")

    def bad_anchor(m):
        m.soft_bodies[0].anchors["rigid_body"][1] = 3

    mutate_and_check(bad_anchor, "soft body 0 (スカート)", "anchors[1].rigid_body")


def test_face_index_out_of_range():
    def bad_face(m):
        m.indices[4] = len(m.vertices)

    mutate_and_check(bad_face, "face 1", "indices[4]")


def test_findings_of_a_read_model_carry_offsets(luka):
    """The same checks on a model read from a file report file offsets (here a rigid body's bone)."""
    model = pmx.read(luka)
    body = model.rigid_bodies[0]
    body.bone = LUKA_BONES
    f = assert_one_error(validate.validate(model, for_export=True), f"rigid body 0 ({body.name})",
                         body.at["bone"], "bone")
    # the first rigid body's bone index follows the two names of the first record after the count
    first = model.at["rigid body count"] + 4
    assert f.offset == skip_text(luka, skip_text(luka, first))


def test_weights_the_deform_type_does_not_store():
    def bdef2_weights(m):
        m.vertices["weights"][1] = (0.5, 0.25, 0, 0)  # vertex 1 is BDEF2: weights[1] must be 1 - weights[0]

    mutate_and_check(bdef2_weights, "vertex 1", "weights")


def test_2_1_data_in_a_2_0_file_is_a_warning(testdata):
    model = pmx.read((testdata / "pmx" / "babylonmmd_constraint_test.pmx").read_bytes())
    model.joints[0].kind = 5  # hinge: PMX 2.1 only
    findings = validate.validate(model, for_export=False)
    assert [(f.severity, f.element, f.offset, f.field) for f in findings] == [("warning", "header", 4, "version")]
