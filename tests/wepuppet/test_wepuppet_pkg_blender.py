"""Wallpaper Engine packages in Blender and through `convert`: the project our writer builds around the goose
puppet, written with the package option, holds in `scene.pkg` exactly the files the folder export writes (project.json
beside it), read back by a reader written here; that package, and one an independent packer written here makes from
the same files, import (File › Import, the command line) to the same files, and an unchanged imported package
written back as a package is the same bytes (its entry order and magic kept)."""
from __future__ import annotations

import os
import struct
import types

import pytest

bpy = pytest.importorskip("bpy")

from conftest import run_cli  # noqa: E402

from skinbridge import formats  # noqa: E402
from skinbridge.io_wepuppet.project import blender_io as project_io  # noqa: E402
from skinbridge.io_wepuppet.project import pkg  # noqa: E402
from skinbridge.io_wepuppet.puppet import blender_io as puppet_io  # noqa: E402

pytestmark = pytest.mark.blender

PACKAGE = types.SimpleNamespace(package=True)


def s32(raw: bytes) -> bytes:
    return struct.pack("<i", len(raw)) + raw


def independent_pack(files: list[tuple[str, bytes]], magic: bytes) -> bytes:
    """RePKG's layout, written here: magic, count, (path, offset from the header's end, size) each, the data."""
    head, at = s32(magic) + struct.pack("<i", len(files)), 0
    for path, data in files:
        head += s32(path.encode()) + struct.pack("<ii", at, len(data))
        at += len(data)
    return head + b"".join(d for _, d in files)


def independent_read(data: bytes) -> tuple[bytes, dict[str, bytes]]:
    n = struct.unpack_from("<i", data)[0]
    magic, at = data[4:4 + n], 8 + n
    entries = []
    for _ in range(struct.unpack_from("<i", data, 4 + n)[0]):
        k = struct.unpack_from("<i", data, at)[0]
        entries.append((data[at + 4:at + 4 + k].decode(), *struct.unpack_from("<ii", data, at + 4 + k)))
        at += 12 + k
    return magic, {p: data[at + o:at + o + s] for p, o, s in entries}


def tree(folder) -> dict[str, bytes]:
    out = {}
    for base, _, names in os.walk(folder):
        for name in names:
            path = os.path.join(base, name)
            out[os.path.relpath(path, folder).replace(os.sep, "/")] = open(path, "rb").read()
    return out


@pytest.fixture
def goose_project(clean_scene, testdata, tmp_path):
    """The goose puppet's project as our writer builds it: the folder, and the same written as a package."""
    puppet_io.import_wepuppet(bpy.context, str(testdata / "wepuppet" / "blacryu_goose_t_puppet.mdl"))
    project_io.export_target(bpy.context, str(tmp_path / "folder"), "goose", None)
    written, _ = project_io.export_target(bpy.context, str(tmp_path / "packed"), "goose", PACKAGE)
    return tmp_path / "folder", tmp_path / "packed", written


def test_the_goose_project_as_a_package_holds_the_folder_exports_files(goose_project):
    folder, packed, written = goose_project
    files = tree(folder)
    assert sorted(files) == ["materials/goose.json", "materials/goose.tex", "models/goose.json",
                             "models/goose_puppet.mdl", "project.json", "scene.json"]
    assert sorted(written) == [str(packed / "project.json"), str(packed / "scene.pkg")]
    assert tree(packed).keys() == {"project.json", "scene.pkg"}
    assert (packed / "project.json").read_bytes() == files.pop("project.json")
    data = (packed / "scene.pkg").read_bytes()
    magic, members = independent_read(data)
    assert magic == b"PKGV0009" and members == files and list(members) == sorted(files)
    assert formats.identify_file(str(packed / "scene.pkg")).name == "weproject"  # the sidebar's format line
    assert ".pkg" in bpy.types.IO_FH_skinbridge_weproject.bl_file_extensions.split(";")  # drag and drop
    glob = bpy.ops.import_scene.skinbridge_weproject.get_rna_type().properties["filter_glob"].default
    assert "*.pkg" in glob.split(";")  # File › Import's file filter


def test_our_package_and_an_independent_one_import_to_the_same_files_and_write_back_the_same(goose_project,
                                                                                             tmp_path):
    folder, packed, _ = goose_project
    files = tree(folder)
    other = tmp_path / "other"
    other.mkdir()
    (other / "project.json").write_bytes(files["project.json"])
    listed = sorted((p for p in files if p != "project.json"), reverse=True)  # another order and magic
    (other / "scene.pkg").write_bytes(independent_pack([(p, files[p]) for p in listed], b"PKGV0005"))
    for where in (packed, other):
        assert tree(pkg.unpacked(str(where))[0]) == files  # what the unpacked folder would hold, byte for byte
        bpy.ops.wm.read_factory_settings(use_empty=True)
        assert bpy.ops.import_scene.skinbridge_weproject(filepath=str(where / "scene.pkg")) == {"FINISHED"}
        (coll,) = [c for c in bpy.data.collections if project_io.ROOT_PROP in c]
        assert coll[project_io.ROOT_PROP] == str(where / "scene.pkg")
        (arm,) = [ob for ob in coll.all_objects if ob.type == "ARMATURE"]
        assert arm.name == "goose_puppet_rig" and len(arm.animation_data.nla_tracks) == 1
        out = tmp_path / f"{where.name}_again"
        if where == packed:
            project_io.export_target(bpy.context, str(out), "goose", PACKAGE)
        else:  # File › Export with its Package choice
            assert bpy.ops.export_scene.skinbridge_weproject(filepath=str(out / "project.json"), package=True) == \
                {"FINISHED"}
        assert (out / "scene.pkg").read_bytes() == (where / "scene.pkg").read_bytes()
        assert (out / "project.json").read_bytes() == files["project.json"]


@pytest.mark.default_leg  # two command lines in fresh processes (10 s); the reader's refusals run in every leg
def test_the_command_line_unpacks_a_package_and_refuses_a_hostile_one_writing_nothing(goose_project, tmp_path):
    folder, packed, _ = goose_project
    done = run_cli("convert", packed / "scene.pkg", "--to", "weproject", "-o", tmp_path / "unpacked")
    assert done.returncode == 0, done.stderr
    assert tree(tmp_path / "unpacked") == tree(folder)
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "project.json").write_bytes((folder / "project.json").read_bytes())
    (bad / "scene.pkg").write_bytes(independent_pack([("scene.json", (folder / "scene.json").read_bytes()),
                                                      ("../escaped.txt", b"outside")], b"PKGV0001"))
    refused = run_cli("convert", bad / "scene.pkg", "--to", "weproject", "-o", tmp_path / "out")
    assert refused.returncode != 0
    at = 4 + 8 + 4 + (4 + 10 + 8) + 4  # magic, count, entry 0, entry 1's path length: its path
    line = f"offset {at} (0x{at:x}), field entry 1 path: '../escaped.txt': path climbs with '..'"
    assert [x for x in refused.stderr.splitlines() if x.startswith("error")] == [f"error: {bad / 'scene.pkg'}: "
                                                                                  f"scene.pkg: {line}"]
    assert not (tmp_path / "out").exists() and not (tmp_path / "escaped.txt").exists()
    assert sorted(os.listdir(bad)) == ["project.json", "scene.pkg"]
