"""Issue 45 for Valve Source files, without Blender: what a DMX may unpack and build is bounded by its size
(docs/architecture.md §7.1 "Budgets"), a QC above Source's own limits is refused in one line, and a joint chain
is read in one pass whatever its depth. Each hostile file is built here: a gzip stream of one compressed
block repeated (a few KB per hundred MB it claims). The tests count work (regex matches, matrix calls, files
read) rather than timing it; `bench/scale` times the same multipliers (bench/scale_cases/source.py)."""
from __future__ import annotations

import itertools
import os
import struct
import sys
import uuid
import zlib

import numpy as np
import pytest

from support import limited

import skinbridge
from skinbridge.core.budget import OBJECTS_FLOOR
from skinbridge.core.errors import FormatError
from skinbridge.io_smd.dmx import convert, dmx, kv2
from skinbridge.io_smd.dmx.records import Attribute, AttrType, DmxFile, Element
from skinbridge.io_smd.qc import qc

KV2 = b"<!-- dmx encoding keyvalues2 1 format model 22 -->\n"
MIB = 1 << 20


def gzip_repeat(head: bytes, unit: bytes, count: int, declared: int | None = None) -> bytes:
    """A gzip member of `head` then `unit` `count` times, its trailer declaring `declared` bytes (the true size
    by default). `unit` is compressed once and its block repeated: a full flush makes each copy stand alone."""
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    first = c.compress(head) + c.flush(zlib.Z_FULL_FLUSH)
    block = c.compress(unit) + c.flush(zlib.Z_FULL_FLUSH)
    crc = zlib.crc32(head)
    for _ in range(count):
        crc = zlib.crc32(unit, crc)
    size = len(head) + len(unit) * count if declared is None else declared
    return (b"\x1f\x8b\x08\x00\0\0\0\0\x02\xff" + first + block * count + c.flush()
            + struct.pack("<II", crc & 0xFFFFFFFF, size & 0xFFFFFFFF))


def chain_dmx(n: int, encoding: str = "binary") -> bytes:
    """A DMX model of n joints, each the only child of the one before (kv2: each written inline in its parent
    as deep as the writer nests, 200 levels, then by reference)."""
    def element(etype: str, name: str, *attrs: Attribute) -> Element:
        return Element(etype, name, uuid.UUID(int=next(ids)), list(attrs))

    ids = itertools.count(1)
    one = np.array([0, 0, 1], np.float32)
    joints = [element("DmeJoint", f"j{k}", Attribute("transform", AttrType.ELEMENT, False, element(
        "DmeTransform", f"j{k}", Attribute("position", AttrType.VECTOR3, False, one),
        Attribute("orientation", AttrType.QUATERNION, False, np.array([0, 0, 0, 1], np.float32)))))
        for k in range(n)]
    for j, child in zip(joints, joints[1:] + [None]):
        j.attributes.append(Attribute("children", AttrType.ELEMENT, True, [child] if child else []))
    model = element("DmeModel", "chain", Attribute("children", AttrType.ELEMENT, True, joints[:1]))
    root = element("DmElement", "root", Attribute("model", AttrType.ELEMENT, False, model))
    if encoding == "binary":
        return dmx.write(DmxFile("binary", 9, "model", 22, [root], after_header=b"\n\0"))
    return dmx.write(DmxFile("keyvalues2", 1, "model", 22, [root]))


def one_finding(out: limited.Outcome) -> str:
    """`check`'s way of refusing a file: exit 1, one error finding on stdout, nothing else gone wrong."""
    errors = [ln for ln in out.stdout.splitlines() if ln.strip().startswith("error:")]
    assert not out.timed_out and out.returncode == 1, out
    assert len(errors) == 1 and "Traceback" not in out.stderr + out.stdout, out
    return errors[0]


# -- item 5: the gzip DMX bomb ------------------------------------------------------------------------------------

def bomb(megabytes: int, declared: int | None = None) -> bytes:
    """A kv2 DMX of `megabytes` MiB of spaces (a kilobyte of gzip each), declaring `declared` bytes (the truth by
    default)."""
    return gzip_repeat(KV2, b" " * MIB, megabytes, declared)


@pytest.mark.parametrize("megabytes, declared", [(640, None), (70, 0xFFFFFFFF)])
def test_a_gzip_dmx_bomb_is_refused_by_info_and_check(tmp_path, megabytes, declared):
    """640 KB that unpack to 640 MiB (unpacked whole, then decoded, that is a MemoryError under 1 GB), and 70 KB
    declaring 4 GiB: a file that small may unpack to 64 MiB, so both are refused in one line naming the gzip
    size before a byte is unpacked, under a 1 GB address space."""
    path = tmp_path / "bomb.dmx"
    path.write_bytes(bomb(megabytes, declared))
    assert path.stat().st_size < megabytes * 1100
    out = limited.cli("info", path, address_space=limited.CODEC_LIMIT, timeout=10)
    assert limited.one_line_refusal(out), out
    assert "field gzip size" in out.stderr and "above the 67108864-byte budget" in out.stderr
    assert out.peak_rss < 300 << 20
    line = one_finding(limited.cli("check", path, address_space=limited.CODEC_LIMIT, timeout=10))
    assert "gzip size" in line and "budget" in line


def test_a_gzip_stream_is_unpacked_in_steps_within_what_it_declares():
    """A trailer that lies low stops the unpacking one byte past it; an honest stream above the budget is
    refused by its declared size; a good one reads and writes back as it was."""
    with pytest.raises(FormatError, match="more than the 1000 bytes it declares"):
        dmx.read(bomb(70, declared=1000))
    with pytest.raises(FormatError, match="budget of a"):
        dmx.read(bomb(70))
    spaces = bomb(3)  # 3 MiB of spaces: within the budget, no element
    d = dmx.read(spaces)
    assert d.warnings == ["the file holds no element"] and dmx.write(d) == spaces


def test_kv2_tokens_count_against_the_budget(tmp_path):
    """A megabyte of valid kv2 elements in a 2 KB gzip: 450,000 tokens, refused once the budget's 65,536 are
    scanned (a step past them at most), in one line naming the line reached."""
    path = tmp_path / "tokens.dmx"
    path.write_bytes(gzip_repeat(KV2, b'"a" {} ' * (MIB // 7), 1))
    assert path.stat().st_size < 4000
    out = limited.cli("info", path, address_space=limited.CODEC_LIMIT, timeout=10)
    assert limited.one_line_refusal(out), out
    assert "field token count" in out.stderr and f"above the {OBJECTS_FLOOR}" in out.stderr


class _Counted:
    """kv2's token pattern with its `match` calls counted."""

    def __init__(self, pattern):
        self.pattern, self.calls = pattern, 0

    def match(self, *args):
        self.calls += 1
        return self.pattern.match(*args)


@pytest.mark.parametrize("filler, reads", [(b" ", True), (b"\t\r\n", True), (b"{", False), (b'""', False),
                                          (b"// x\n", True), (b",", False)])
def test_a_megabyte_of_degenerate_text_costs_a_bounded_scan(monkeypatch, filler, reads):
    """A run of trivia is one match; text that is not kv2 ends the scan within one step of its first fault."""
    counted = _Counted(kv2._TOKEN)
    monkeypatch.setattr(kv2, "_TOKEN", counted)
    data = KV2 + filler * (MIB // len(filler))
    if reads:
        assert dmx.read(data).warnings == ["the file holds no element"]
        assert counted.calls == 1
    else:
        with pytest.raises(FormatError):
            dmx.read(data)
        assert counted.calls <= kv2.TOKEN_STEP + 1


def test_binary_dmx_elements_count_against_the_budget(tmp_path):
    """131,070 element headers (3 MiB unpacked, all in the bytes left) from a 4 KB gzip: refused at the element
    count, before the first is built, in one line under a 1 GB address space."""
    unit = struct.pack("<ii", 0, 0) + bytes(16)  # binary 5 element header: type, name (table indices), id
    per = MIB // len(unit)
    count = per * 3
    head = b"<!-- dmx encoding binary 5 format model 22 -->\n\0" + struct.pack("<i", 1) + b"DmElement\0"
    data = gzip_repeat(head + struct.pack("<i", count), unit * per, 3)
    assert len(data) < 5000
    with pytest.raises(FormatError, match=r"field element count: declares \d+ items, above the 65536"):
        dmx.read(data)
    path = tmp_path / "elements.dmx"
    path.write_bytes(data)
    out = limited.cli("info", path, address_space=limited.CODEC_LIMIT, timeout=10)
    assert limited.one_line_refusal(out) and "element count" in out.stderr, out


# -- item 11: QC multipliers ----------------------------------------------------------------------------------

REF = ('version 1\nnodes\n0 "root" -1\nend\nskeleton\ntime 0\n0 0 0 0 0 0 0\nend\ntriangles\nmat\n'
       "0 0 0 0 0 0 1 0 0 1 0 1.0\n0 1 0 0 0 0 1 1 0 1 0 1.0\n0 0 1 0 0 0 1 0 1 1 0 1.0\nend\n")


def _qc(tmp_path, *lines: str):
    (tmp_path / "ref.smd").write_text(REF)
    path = tmp_path / "m.qc"
    path.write_text("\n".join(['$modelname "m.mdl"', *lines]) + "\n")
    return path


@pytest.mark.parametrize("lines, words", [
    ([f'$lod {k}\n{{\n replacemodel "ref" "ref"\n}}' for k in range(9)],
     "m.qc line 34: $lod: more $lod commands than Source's studiomdl takes (8)"),
    ([f'$body b{k} "ref"' for k in range(33)], "m.qc line 34: $body: more body parts"),
    ([f'$body b{k} "ref"' for k in range(16)] + [f"$bodygroup g{k}\n{{\n studio ref\n}}" for k in range(17)],
     "$bodygroup: more body parts ($body, $model and $bodygroup) than Source's studiomdl takes (32)"),
    (["$bodygroup g\n{\n" + "studio ref\n" * 20 + "blank\n" * 13 + "}"],
     "$bodygroup: more choices in one $bodygroup than Source's studiomdl takes (32)"),
    (['$lod 1\n{\n' + 'replacemodel "ref" "ref"\n' * 1025 + "}"],
     "$lod: more replacemodel lines in one $lod than Source's studiomdl takes (1024)"),
    ([f'$sequence s{k} "ref"' for k in range(1525)], "$sequence: more $sequence commands than"),
    ([f'$animation a{k} "ref"' for k in range(2001)], "$animation: more $animation commands than"),
])
def test_a_qc_above_sources_limits_is_refused_naming_the_line(tmp_path, lines, words):
    path = _qc(tmp_path, *lines)
    with pytest.raises(FormatError) as e:
        qc.read(str(path))
    assert words in str(e.value)


def test_a_qc_at_sources_limits_reads_and_info_refuses_one_more_in_one_line(tmp_path):
    lines = ['$body main "ref"'] + [f'$lod {k}\n{{\n replacemodel "ref" "./ref.smd"\n}}' for k in range(8)]
    lines += ["$bodygroup g\n{\n" + "studio ref\n" * 31 + "blank\n}"]
    p = qc.read(str(_qc(tmp_path, *lines)))
    assert len(p.lods) == 8 and len(p.body_groups[0].choices) == 32 and p.files() == [str(tmp_path / "ref.smd")]
    path = _qc(tmp_path, *(lines + ['$lod 9\n{\n replacemodel "ref" "ref"\n}']))
    out = limited.cli("info", path, address_space=limited.CODEC_LIMIT, timeout=10)
    assert limited.one_line_refusal(out) and "more $lod commands" in out.stderr, out


# -- item 11: a joint chain -------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def chains(tmp_path_factory) -> dict[str, bytes]:
    return {encoding: chain_dmx(5000, encoding) for encoding in ("binary", "kv2")}


def test_a_deep_joint_chain_is_one_pass_of_matrix_work(monkeypatch, chains):
    """5,000 joints, each the child of the last: the local matrices, binds and rest values are a constant
    number of numpy calls, not one per joint (the binds still the product down the chain)."""
    calls = {"matrix_to_trs": 0, "trs_to_matrix": 0}
    for name in calls:
        def counted(*args, _real=getattr(convert, name), _name=name):
            calls[_name] += 1
            return _real(*args)

        monkeypatch.setattr(convert, name, counted)
    scene, _ = convert.to_scene(dmx.read(chains["binary"]), "chain")
    bones = scene.skeleton.bones
    assert len(bones) == 5000 and [b.parent for b in bones] == list(range(-1, 4999))
    assert calls == {"matrix_to_trs": 1, "trs_to_matrix": 1}
    assert np.allclose([b.bind[2, 3] for b in bones], np.arange(1, 5001))
    assert np.allclose([b.rest_translation for b in bones], [[0, 0, 1]] * 5000)


@pytest.mark.slow
def test_a_deep_joint_chain_reads_converts_and_writes_back_under_a_low_recursion_limit(tmp_path, chains):
    """Nothing on the DMX path recurses per level: a 5,000-joint chain, binary and kv2 (the kv2 one nested 200
    levels deep), is read, mapped to a scene, checked and written back, and the scene written as SMD, with
    Python's recursion limit at 200, in a child under 1 GB."""
    assert chains["kv2"].count(b"DmeJoint") == 5000 and b"\t" * 200 in chains["kv2"]
    for encoding, data in chains.items():
        (tmp_path / f"{encoding}.dmx").write_bytes(data)
    package = os.path.dirname(os.path.dirname(skinbridge.__file__))  # this checkout, as the tests import it
    code = f"""
import sys
sys.path.insert(0, {package!r})
from skinbridge.io_smd.dmx import check, convert, dmx
from skinbridge.io_smd.smd import scene_files
sys.setrecursionlimit(200)
for name in ("binary", "kv2"):
    data = open({str(tmp_path)!r} + "/" + name + ".dmx", "rb").read()
    d = dmx.read(data)
    scene, _ = convert.to_scene(d, "chain")
    assert len(scene.skeleton.bones) == 5000 and dmx.write(d) == data
    assert check.check(name, data, lambda line: None) == 0
    scene_files.write_scene(scene, {str(tmp_path)!r}, name)
print("ok")
"""
    out = limited.run_limited([sys.executable, "-c", code], limited.CODEC_LIMIT, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out
    assert (tmp_path / "binary.smd").read_bytes().count(b'" ') >= 5000


# -- through Blender ------------------------------------------------------------------------------------------------

REF_BONES = ('version 1\nnodes\n0 "root" -1\n1 "b1" 0\nend\nskeleton\ntime 0\n0 0 0 0 0 0 0\n1 0 0 1 0 0 0\nend\n'
             "triangles\nmat\n0 0 0 0 0 0 1 0 0 1 0 1.0\n1 1 0 0 0 0 1 1 0 1 1 1.0\n0 0 1 0 0 0 1 0 1 1 1 1.0\nend\n")


def _model_dmx() -> bytes:
    """A DMX model of one triangle on one joint (binary 9, our writer's layout)."""
    one = np.array([0, 0, 1], np.float32)
    ids = itertools.count(100)

    def element(etype: str, name: str, *attrs: Attribute) -> Element:
        return Element(etype, name, uuid.UUID(int=next(ids)), list(attrs))

    def array(name: str, t: AttrType, values) -> Attribute:
        return Attribute(name, t, True, np.asarray(values, FIXED_DTYPE[t]))

    joint = element("DmeJoint", "j", Attribute("transform", AttrType.ELEMENT, False, element(
        "DmeTransform", "j", Attribute("position", AttrType.VECTOR3, False, one),
        Attribute("orientation", AttrType.QUATERNION, False, np.array([0, 0, 0, 1], np.float32)))),
        Attribute("children", AttrType.ELEMENT, True, []))
    data = element("DmeVertexData", "bind", array("position$0", AttrType.VECTOR3, np.eye(3)),
                   array("position$0Indices", AttrType.INT, [0, 1, 2]))
    faces = element("DmeFaceSet", "faces", array("faces", AttrType.INT, [0, 1, 2, -1]))
    mesh = element("DmeMesh", "tri", Attribute("bindState", AttrType.ELEMENT, False, data),
                   Attribute("faceSets", AttrType.ELEMENT, True, [faces]))
    dag = element("DmeDag", "tri", Attribute("shape", AttrType.ELEMENT, False, mesh))
    model = element("DmeModel", "m", Attribute("children", AttrType.ELEMENT, True, [joint, dag]))
    root = element("DmElement", "root", Attribute("model", AttrType.ELEMENT, False, model))
    return dmx.write(DmxFile("binary", 9, "model", 22, [root], after_header=b"\n\0"))


FIXED_DTYPE = {AttrType.VECTOR3: np.float32, AttrType.INT: np.int32}


@pytest.mark.blender
def test_each_file_a_qc_names_is_read_once_and_built_once(clean_scene, tmp_path, monkeypatch):
    """A QC naming two SMDs and a DMX 21 times between them, by several spellings (with and without the
    extension, through a linked folder), as bodies, bodygroup choices, LOD files, sequences and the collision
    model: each file is read once and built once; every later placement is a copy sharing its data."""
    bpy = pytest.importorskip("bpy")
    from skinbridge.io_smd import blender_qc
    from skinbridge.io_smd.dmx import convert as dmx_convert
    from skinbridge.io_smd.smd import blender_io as smd_io
    from skinbridge.io_smd.smd import smd

    (tmp_path / "ref.smd").write_text(REF_BONES)
    (tmp_path / "lod.smd").write_text(REF_BONES)
    (tmp_path / "model.dmx").write_bytes(_model_dmx())
    (tmp_path / "same").symlink_to(tmp_path, target_is_directory=True)
    (tmp_path / "m.qc").write_text("\n".join([
        '$modelname "m.mdl"', '$body a "ref"', '$body b "same/ref.smd"', '$body c "model"', '$body d "same/model.dmx"',
        '$bodygroup g\n{\n studio "ref"\n studio "same/ref"\n blank\n studio "model.dmx"\n}',
        '$lod 10\n{\n replacemodel "ref" "lod"\n replacemodel "same/ref" "same/lod.smd"\n}',
        '$lod 20\n{\n replacemodel "ref" "lod.smd"\n}',
        '$sequence idle "ref"', '$sequence idle2 "same/ref"', '$collisionmodel "same/lod"']) + "\n")
    calls = {"smd.read": 0, "dmx.read": 0, "import_reference": 0, "to_scene": 0}
    for owner, name, key in ((smd, "read", "smd.read"), (dmx, "read", "dmx.read"),
                             (smd_io, "import_reference", "import_reference"), (dmx_convert, "to_scene", "to_scene")):
        def counted(*args, _real=getattr(owner, name), _key=key, **kwargs):
            calls[_key] += 1
            return _real(*args, **kwargs)

        monkeypatch.setattr(owner, name, counted)
    blender_qc.blender_import(bpy.context, str(tmp_path / "m.qc"))
    assert calls == {"smd.read": 2, "dmx.read": 1, "import_reference": 2, "to_scene": 1}
    root = bpy.data.collections["m"]
    placed = {c.name: [o for o in c.objects if o.type == "MESH"] for c in root.children}
    assert {name: len(obs) for name, obs in placed.items()} == {
        "a": 1, "b": 1, "c": 1, "d": 1, "g 0: ref": 1, "g 1: ref": 1, "g 2: blank": 0, "g 3: model": 1,
        "LOD 1 (10)": 1, "LOD 2 (20)": 1, "collision": 1}
    assert len(bpy.data.meshes) == 3  # ref, lod and the DMX's triangle: built once each
    shared = {name: obs[0].data.name for name, obs in placed.items() if obs}
    assert len({shared[n] for n in ("a", "b", "g 0: ref", "g 1: ref")}) == 1
    assert len({shared[n] for n in ("c", "d", "g 3: model")}) == 1
    assert shared["LOD 1 (10)"] == shared["LOD 2 (20)"] == shared["collision"]
    assert placed["collision"][0].display_type == "WIRE" and placed["LOD 1 (10)"][0].display_type != "WIRE"
    main = placed["a"][0].parent  # the first body's armature: every copy of the SMDs (same bones) is bound to it
    assert main.type == "ARMATURE" and len(bpy.data.armatures) == 2  # the SMDs' one and the DMX's own
    for name in ("b", "g 0: ref", "g 1: ref", "LOD 1 (10)", "collision"):
        ob = placed[name][0]
        assert ob.parent == main and [m.object for m in ob.modifiers if m.type == "ARMATURE"] == [main]
    dmx_rig = placed["c"][0].parent  # the DMX keeps its own armature; each copy of it holds a copy of that
    assert dmx_rig != main and placed["d"][0].parent not in (main, dmx_rig)
    assert placed["d"][0].parent.data == dmx_rig.data
    assert sorted(a.name for a in bpy.data.actions) == ["idle", "idle2"]


@pytest.mark.blender
@pytest.mark.slow
def test_a_gzip_dmx_bomb_through_blender_is_one_line_and_costs_no_more_than_a_good_file(tmp_path, testdata):
    """`convert` (Blender's import of the file) of the 640 KB bomb: refused in one line within 10 s under 3 GB,
    its peak memory at most 1 GB above the same command on a good DMX, and no output folder."""
    path = tmp_path / "bomb.dmx"
    path.write_bytes(bomb(640))
    good = limited.cli("convert", testdata / "dmx" / "bst_Cube_NoArmature.dmx", "--to", "smd", "-o",
                       tmp_path / "good", address_space=limited.BLENDER_LIMIT, timeout=60)
    assert good.returncode == 0, good
    out = limited.cli("convert", path, "--to", "smd", "-o", tmp_path / "out", address_space=limited.BLENDER_LIMIT,
                      timeout=10)
    assert limited.one_line_refusal(out) and "field gzip size" in out.stderr, out
    assert out.peak_rss <= good.peak_rss + (1 << 30), (out.peak_rss, good.peak_rss)
    assert not (tmp_path / "out").exists()


@pytest.mark.blender
def test_the_dmx_import_operator_refuses_a_bomb_and_leaves_the_scene(clean_scene, tmp_path):
    bpy = pytest.importorskip("bpy")
    path = tmp_path / "bomb.dmx"
    path.write_bytes(bomb(70, declared=0xFFFFFFFF))
    before = {o.name for o in bpy.data.objects}
    with pytest.raises(RuntimeError, match="budget"):
        bpy.ops.import_scene.skinbridge_dmx(filepath=str(path))
    assert {o.name for o in bpy.data.objects} == before
