"""Files Blender Source Tools writes (issue 47), read without Blender: its keyvalues2 DMX read and write back
byte-identical, including the attributes it writes without a value (`"name" string`, a null element); `skinbridge
diff` of SMDs names skeleton rows by their bone."""
from __future__ import annotations

import pytest

from skinbridge import formats
from skinbridge.core.diff import diff_files
from skinbridge.core.errors import FormatError
from skinbridge.io_smd.dmx import dmx
from skinbridge.io_smd.dmx.records import AttrType

KV2 = ["AllTypes_ArmatureAction_kv2.dmx", "BezierCurve_kv2.dmx", "Cube_Armature_kv2.dmx", "Throw_kv2.dmx"]
HEAD = b"<!-- dmx encoding keyvalues2 1 format model 22 -->\n"


@pytest.mark.parametrize("name", KV2)
def test_bst_keyvalues2_reads_and_writes_back_byte_identical(interop, name):
    data = (interop / "bst_written" / name).read_bytes()
    f = dmx.read(data)
    assert dmx.write(f) == data
    assert any(e.name == "" for e in f.elements)  # BST's unnamed transform (`"name" string`, no value)


def test_an_empty_string_and_a_null_element_read_as_bst_writes_them():
    text = (HEAD + b'"DmElement"\n{\n\t"id" "elementid" "3a5c0e1f-2b4d-4e6f-8a9b-0c1d2e3f4a5b"\n'
            b'\t"name" string\n\t"link" element\n\t"note" string\n\t"x" "int" "3"\n}\n\n')
    f = dmx.read(text)
    root = f.root
    assert root.name == "" and root.value("link", "unset") is None and root.value("note") == ""
    assert root.get("note").type == AttrType.STRING and int(root.value("x")) == 3
    assert dmx.write(f) == text
    root.name = "named"
    assert b'"name" "string" "named"' in dmx.write(f)


def test_a_number_without_value_names_its_own_line():
    text = HEAD + b'"DmElement"\n{\n\t"id" "elementid" "3a5c0e1f-2b4d-4e6f-8a9b-0c1d2e3f4a5b"\n\t"x" int\n' \
        b'\t"position" "vector3" "0 0 0"\n}\n'
    with pytest.raises(FormatError, match=r"line 5: attribute 'x' \(int\) has no value"):
        dmx.read(text)


def test_skinbridge_diff_names_a_skeleton_row_by_its_bone(testdata):
    """A row of a skeleton frame is a bone's pose: `skinbridge diff` names it by the bone (the edit campaign
    then sees a moved bone or key as that bone's edit), not only by its place in the frame."""
    data = (testdata / "smd" / "bst_ActionFilter_X_Axis_anim.smd").read_bytes()
    moved = data.replace(b"1  1.000000 0.000000 0.000000", b"1  1.500000 0.000000 0.000000")
    (d,) = diff_files(formats.get("smd"), data, moved).differences
    assert (d.record, d.field, float(d.value_b)) == ("frames[1].rows[1] (Bone)", "position[0]", 1.5)
