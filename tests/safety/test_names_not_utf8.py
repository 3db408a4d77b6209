"""Names that are not valid in their format's encoding (issue 28, fault 4): a UMD2, SMD, UTF-8 PMX and Wallpaper
Engine puppet whose bone name holds the bytes ff fe. The codec keeps the bytes (read → write is byte-identical),
the mapping shows them as U+FFFD with a warning naming the element and where it is, `check` lists a warning
finding, and info, check, convert and the import operators succeed (docs/urho.md, docs/mmd.md, docs/source.md,
docs/wallpaper_engine.md: "Names")."""
from __future__ import annotations

import pathlib

import pytest
from conftest import run_cli
from support.umd2_samples import posed_umd2

from skinbridge.core import names
from skinbridge.io_pmx.model import check as pmx_check
from skinbridge.io_pmx.model import convert as pmx_convert
from skinbridge.io_pmx.model import pmx
from skinbridge.io_smd.smd import check as smd_check
from skinbridge.io_smd.smd import convert as smd_convert
from skinbridge.io_smd.smd import smd
from skinbridge.io_urhox.motion import convert as motion_convert, uani
from skinbridge.io_urhox.model import check as urho_check
from skinbridge.io_urhox.motion import check as ani_check
from skinbridge.io_urhox.model import convert as urho_convert
from skinbridge.io_urhox.model import umd2
from skinbridge.io_wepuppet.puppet import check as we_check
from skinbridge.io_wepuppet.puppet import convert as we_convert
from skinbridge.io_wepuppet.puppet import mdl

BAD = b"\xff\xfebad"
BAD_TEXT = BAD.decode("utf-8", "surrogateescape")
SHOWN = "\ufffd\ufffdbad"


def _umd2(testdata) -> bytes:
    m = posed_umd2()
    m.bones[1].name = BAD_TEXT
    return umd2.write(m)


def _smd(testdata) -> bytes:
    return (testdata / "smd" / "bst_Cube_Armature_ref.smd").read_bytes().replace(b'"Bone"', b'"' + BAD + b'"')


def _pmx(testdata) -> bytes:
    m = pmx.read_file(testdata / "pmx" / "babylonmmd_constraint_test.pmx")
    m.encoding = 1  # UTF-8
    m.bones[1].name = BAD_TEXT
    return pmx.write(m)


def _puppet(testdata) -> bytes:
    m = mdl.read((testdata / "wepuppet" / "blacryu_goose_t_puppet.mdl").read_bytes())
    m.skeleton.bones[1].name = BAD_TEXT
    return mdl.write(m)


# format: (maker, file name, read, to_scene, check, where the warning places the name)
FORMATS = {
    "umd2": (_umd2, "bad.mdl", umd2.read, lambda r: urho_convert.to_scene(r), urho_check.validate_model,
             "file offset "),
    "smd": (_smd, "bad.smd", smd.read, lambda r: smd_convert.to_scene(r, "bad"), smd_check.validate, "line 4"),
    "pmx": (_pmx, "bad.pmx", pmx.read, lambda r: pmx_convert.to_scene(r, "bad"), pmx_check.validate,
            "file offset "),
    "wepuppet": (_puppet, "bad.mdl", mdl.read, lambda r: we_convert.to_scene(r, textures=False),
                 we_check.validate_model, "file offset "),
}


@pytest.fixture(params=sorted(FORMATS))
def bad_file(request, testdata, tmp_path) -> tuple[str, pathlib.Path]:
    make, file_name = FORMATS[request.param][:2]
    path = tmp_path / file_name
    path.write_bytes(make(testdata))
    return request.param, path


def test_helpers_place_the_first_bad_byte():
    assert names.bad_byte("ok") is None and names.bad_byte("ab" + BAD_TEXT) == 2
    assert names.shown(BAD_TEXT) == SHOWN
    assert names.stored_bytes(BAD_TEXT) == BAD
    scene = {"a": [("x", BAD_TEXT)], BAD_TEXT: 1}
    warnings = names.clean(scene)
    assert scene == {"a": [("x", SHOWN)], SHOWN: 1} and len(warnings) == 1 and "0xff" in warnings[0]


def test_codec_keeps_the_bytes_and_mapping_shows_u_fffd_with_a_warning(bad_file):
    fmt, path = bad_file
    _, _, read, to_scene, _, where = FORMATS[fmt]
    data = path.read_bytes()
    records = read(data)
    write = {"umd2": umd2.write, "smd": smd.write, "pmx": pmx.write, "wepuppet": mdl.write}[fmt]
    if fmt == "smd":  # SMD writes numbers its own way (check compares tokens); the name's bytes are kept
        assert b'"' + BAD + b'"' in write(records)
    else:
        assert write(records) == data  # the untouched file round-trips byte-identical
    scene, warnings = to_scene(records)
    assert SHOWN in scene.skeleton.names and not any(names.bad_byte(n) is not None
                                                       for n in scene.skeleton.names)
    mine = [w for w in warnings if "not valid UTF-8" in w]
    assert len(mine) == 1 and "byte " in mine[0] and where in mine[0], warnings


def test_check_lists_the_name_as_a_warning_finding(bad_file):
    fmt, path = bad_file
    _, _, read, _, validate, _ = FORMATS[fmt]
    data = path.read_bytes()
    found = [f for f in validate(read(data)) if "not valid UTF-8" in f.message]
    assert len(found) == 1 and found[0].severity == "warning", found
    if fmt == "smd":
        assert found[0].element == "line 4"
    else:
        assert data[found[0].offset:found[0].offset + 2] == b"\xff\xfe"  # the offset is the bad byte's


INFO_NAMES = {"umd2"}  # formats whose info lists bone names


@pytest.mark.blender
def test_info_check_and_convert_succeed_with_one_line_warnings(bad_file, tmp_path):
    fmt, path = bad_file
    info = run_cli("info", path)
    assert info.returncode == 0 and "Traceback" not in info.stderr, info.stderr
    # issue 45, fault 13: info lists the name as check and import show it (U+FFFD), with the same warning
    assert "?bad" not in info.stdout and (SHOWN in info.stdout) == ("not valid UTF-8" in info.stderr), info.stderr
    assert fmt not in INFO_NAMES or (SHOWN in info.stdout and len(info.stderr.splitlines()) == 1), info.stderr
    check = run_cli("check", path)
    assert check.returncode == 0 and "not valid UTF-8" in check.stdout and "1 warning" in check.stdout, check.stdout
    out = tmp_path / "out"
    conv = run_cli("convert", path, "--to", "smd" if fmt != "smd" else "urhox", "-o", out)
    assert conv.returncode == 0, conv.stderr
    lines = [ln for ln in conv.stderr.splitlines() if "not valid UTF-8" in ln]
    assert len(lines) == 1 and "internal error" not in conv.stderr, conv.stderr
    written = b"".join(p.read_bytes() for p in out.rglob("*") if p.suffix in (".smd", ".mdl"))
    assert BAD in written and SHOWN.encode() not in written  # the name as read: its own bytes, not U+FFFD


EXPORT = {"umd2": ("import_scene.skinbridge_urhox", "export_scene.skinbridge_urhox", "out.mdl"),
          "smd": ("import_scene.skinbridge_smd", "export_scene.skinbridge_smd", "out.smd"),
          "wepuppet": ("import_scene.skinbridge_wepuppet", "export_scene.skinbridge_wepuppet", "out.mdl")}


def _operator(op_id: str):
    bpy = pytest.importorskip("bpy")
    group, name = op_id.split(".")
    return getattr(getattr(bpy.ops, group), name)


@pytest.mark.blender
@pytest.mark.parametrize("fmt", sorted(EXPORT))
def test_through_blender_the_name_keeps_its_bytes_until_renamed(fmt, clean_scene, testdata, tmp_path):
    """Import shows U+FFFD; an export of the unchanged bone writes the bytes the file had; a bone the user renamed
    is written as its new name."""
    bpy = pytest.importorskip("bpy")
    make, file_name = FORMATS[fmt][:2]
    path = tmp_path / file_name
    path.write_bytes(make(testdata))
    importer, exporter, out_name = EXPORT[fmt]
    _operator(importer)(filepath=str(path))
    arm = next(o for o in bpy.data.objects if o.type == "ARMATURE")
    assert SHOWN in arm.data.bones
    bpy.context.view_layer.objects.active = arm
    first = tmp_path / "first"
    _operator(exporter)(filepath=str(first / out_name) if fmt != "smd" else str(first / out_name))
    written = b"".join(p.read_bytes() for p in first.rglob("*") if p.is_file())
    assert BAD in written and SHOWN.encode() not in written
    arm.data.bones[SHOWN].name = "renamed"
    second = tmp_path / "second"
    _operator(exporter)(filepath=str(second / out_name))
    written = b"".join(p.read_bytes() for p in second.rglob("*") if p.is_file())
    assert b"renamed" in written and BAD not in written


@pytest.mark.blender
def test_multi_file_operator_import_keeps_the_good_file_and_warns(clean_scene, testdata, tmp_path):
    bpy = pytest.importorskip("bpy")
    (tmp_path / "bad.smd").write_bytes(_smd(testdata))
    (tmp_path / "cube.smd").write_bytes((testdata / "smd" / "bst_Cube_Armature_ref.smd").read_bytes())
    before = set(bpy.data.objects)
    assert bpy.ops.import_scene.skinbridge_smd(directory=str(tmp_path), files=[
        {"name": "bad.smd"}, {"name": "cube.smd"}]) == {"FINISHED"}
    armatures = [o for o in set(bpy.data.objects) - before if o.type == "ARMATURE"]
    assert len(armatures) == 2
    bone_names = {b.name for a in armatures for b in a.data.bones}
    assert SHOWN in bone_names


@pytest.mark.parametrize("variant", ["urhox", "urho3d"])
def test_uani_track_names_keep_their_bytes_show_u_fffd_and_are_check_findings(variant, testdata):
    """A UANI (UrhoX v2 and classic) whose track name holds bytes that are not UTF-8: the codec writes the file back
    byte-identical, the core animation shows U+FFFD with a warning, and check places the bad byte."""
    core, _ = motion_convert.to_core(uani.read((testdata / "urho3d" / "Ninja_Walk.ani").read_bytes()), "walk")
    anim, _ = motion_convert.from_core(core, "urhox" if variant == "urhox" else "urho3d", fmt=variant)
    anim.tracks[1].name = BAD_TEXT
    data = uani.write(anim)
    assert uani.detect_variant(data) == variant
    back = uani.read(data)
    assert uani.write(back) == data
    core, warnings = motion_convert.to_core(back, "walk")
    assert core.tracks[1].bone == SHOWN
    assert len([w for w in warnings if "not valid UTF-8" in w]) == 1, warnings
    [found] = [f for f in ani_check.validate_animation(back) if "not valid UTF-8" in f.message]
    assert found.severity == "warning" and data[found.offset:found.offset + 2] == b"\xff\xfe"
