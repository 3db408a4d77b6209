"""VPD (MikuMikuDance pose) codec: the file our test writes by hand from the format's description (MMD's layout:
cp932, CRLF, `%f` numbers, MMD's comments) reads, writes back byte for byte, and a pose built in code writes the
same bytes; hostile files are refused in one line naming the line and the field."""
from __future__ import annotations

import pytest

from skinbridge import formats
from skinbridge.core.errors import ExportError, FormatError
from skinbridge.io_pmx.pose import vpd

BONES = [("センター", (0.0, 1.25, -0.5), (0.0, 0.0, 0.0, 1.0)),
         ("左腕", (0.0, 0.0, 0.0), (0.049841, 0.038732, -0.102715, 0.992706)),
         ("右ひじ", (0.0, 0.0, -0.0), (-0.5, 0.5, -0.5, 0.5))]
MORPHS = [("まばたき", 0.75), ("あ", 1.0)]


def hand_written(model="初音ミク.osm", bones=BONES, morphs=MORPHS, newline="\r\n") -> bytes:
    """MMD's layout, written line by line here (not by the codec)."""
    lines = ["Vocaloid Pose Data file", "", f"{model};\t\t// 親ファイル名",
             f"{len(bones)};\t\t\t\t// 総ポーズボーン数", ""]
    for i, (name, t, q) in enumerate(bones):
        lines += [f"Bone{i}{{{name}", "  " + ",".join("%.6f" % v for v in t) + ";\t\t\t\t// trans x,y,z",
                  "  " + ",".join("%.6f" % v for v in q) + ";\t\t// Quaternion x,y,z,w", "}", ""]
    for i, (name, w) in enumerate(morphs):
        lines += [f"Morph{i}{{{name}", "  %.6f;\t\t\t\t// weight" % w, "}", ""]
    return (newline.join(lines) + newline).encode("cp932")


def test_reads_the_fields():
    pose = vpd.read(hand_written())
    assert pose.model_name == "初音ミク.osm"
    assert [(b.name, b.translation, b.rotation) for b in pose.bones] == BONES
    assert [(m.name, m.weight) for m in pose.morphs] == MORPHS
    assert str(pose.bones[2].translation[2]) == "-0.0"  # the sign of a zero is kept


def test_round_trip_is_byte_identical():
    data = hand_written()
    assert vpd.write(vpd.read(data)) == data
    # a file of other formatting (LF, no comments, short numbers) writes back as it was too
    other = (b"Vocaloid Pose Data file\n\nm.osm;\n1;\nBone0{" + "頭".encode("cp932")
             + b"\n 0,1.5,2e-1 ;\n0,0,0,1;\n}\n")
    assert vpd.write(vpd.read(other)) == other


def test_a_pose_made_in_code_writes_mmd_layout():
    pose = vpd.VpdPose("初音ミク.osm", [vpd.VpdBone(*b) for b in BONES], [vpd.VpdMorph(*m) for m in MORPHS])
    assert vpd.write(pose) == hand_written()


def test_a_changed_value_is_written_in_its_place():
    pose = vpd.read(hand_written())
    pose.bones[1].rotation = (0.0, 0.0, 0.707107, 0.707107)
    pose.morphs[0].weight = 0.5
    want = hand_written(bones=[BONES[0], (BONES[1][0], BONES[1][1], (0.0, 0.0, 0.707107, 0.707107)), BONES[2]],
                        morphs=[("まばたき", 0.5), MORPHS[1]])
    assert vpd.write(pose) == want
    pose.bones.pop()  # bones removed: the whole file in MMD's layout
    assert vpd.write(pose) == hand_written(bones=want_bones(pose), morphs=[("まばたき", 0.5), MORPHS[1]])


def want_bones(pose):
    return [(b.name, b.translation, b.rotation) for b in pose.bones]


def test_registered_as_a_motion_format():
    spec = formats.identify(hand_written()[:64], "pose.vpd")
    assert (spec.name, spec.kind, spec.extensions) == ("vpd", "motion", (".vpd",))
    assert spec.get("read") is vpd.read and spec.get("write") is vpd.write


@pytest.mark.parametrize("data, where", [
    (b"", "field signature"),
    (b"Vocaloid Motion Data 0002", "field signature"),
    (hand_written().split(b"\r\n3;")[0], "file ends before the bone count"),
    (hand_written().rsplit(b"}", 1)[0], "file ends inside the morph block 1"),
    (hand_written().replace(b"\r\n3;", b"\r\n3"), "line 4: expected the bone count"),
    (hand_written().replace(b"1.250000", b"1.2.5"), "line 7: expected 3 numbers"),
    (hand_written().replace(b"1.250000", b"nan"), "line 7: expected 3 numbers"),
    (hand_written().replace(b"1.250000", b"1e999"), "line 7: bone translation 1e999 is not a finite number"),
    (hand_written().replace(b"0.992706;", b"0.992706,1;"), "line 13: expected 4 numbers and ';' (bone rotation)"),
    (hand_written().replace(b"\r\n3;", b"\r\n4;"), "the bone count says 4, the file holds 3 bones"),
    (hand_written().replace(b"\r\n3;", b"\r\n4294967296;"), "line 4: 4294967296 bones, over the budget"),
    (hand_written().replace("左腕".encode("cp932"), b"\x81"), "line 11: bone name is not Shift-JIS"),
    (hand_written().replace(b"Bone2{", b"Bone2"), "line 16: expected 'Bone<i>{<name>'"),
])
def test_hostile_files_are_refused_in_one_line(data, where):
    with pytest.raises(FormatError) as e:
        vpd.read(data)
    message = str(e.value)
    assert where in message and "\n" not in message


def test_size_and_count_budgets():
    with pytest.raises(FormatError, match="over the .*-byte budget"):
        vpd.read(vpd.SIGNATURE + b" " * vpd.MAX_BYTES)
    block = b"Morph0{a\r\n0;\r\n}\r\n"
    with pytest.raises(FormatError, match="over 65536 bones and morphs"):
        vpd.read(b"Vocaloid Pose Data file\r\n\r\nm.osm;\r\n0;\r\n" + block * (vpd.MAX_ITEMS + 1))


def test_info_counts_the_pose():
    got = formats.identify(hand_written()[:64], "pose.vpd").get("info")(hand_written(), "pose.vpd")
    assert got == {"format": "VPD", "model": "初音ミク.osm", "bones": 3, "moved_bones": 1, "turned_bones": 2,
                   "morphs": 2, "warnings": []}


def test_a_value_that_is_not_finite_is_refused_on_write():
    pose = vpd.read(hand_written())
    pose.bones[0].rotation = (0.0, float("nan"), 0.0, 1.0)
    with pytest.raises(ExportError, match="bone センター: a translation or rotation that is not a finite number"):
        vpd.write(pose)
