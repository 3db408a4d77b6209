"""File › Export › Valve SMD and `convert --to smd` take the same options, the smd spec's (io_smd/__init__.py:
flavour, animations, flex, write_qc), and go through the one `export_target`: the same scene written both ways
gives the same files byte for byte, and the options change what is written (GoldSrc: CRLF line ends, no link
columns; flex and write_qc: the VTA and the QC or not)."""
from __future__ import annotations

import pathlib

import pytest

bpy = pytest.importorskip("bpy")

from skinbridge import formats  # noqa: E402
from skinbridge.app.options import ConvertOptions  # noqa: E402
from skinbridge.io_smd.smd import smd  # noqa: E402
from support.blender_scenes import walking_humanoid  # noqa: E402

pytestmark = pytest.mark.blender


def _humanoid_with_a_shape() -> None:
    """The demo's humanoid with its Walk and one shape key (so there is a VTA to write)."""
    _, mesh_ob = walking_humanoid(1)
    mesh_ob.shape_key_add(name="Basis", from_mix=False)
    smile = mesh_ob.shape_key_add(name="Smile", from_mix=False)
    smile.data[0].co.z += 0.05


def _files(folder: pathlib.Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def _convert(folder: pathlib.Path, **values) -> list[str]:
    """`convert --to smd` as the pipeline runs it: the target's `export_target` with a ConvertOptions."""
    folder.mkdir()
    written, _ = formats.get("smd").get("export_target")(bpy.context, str(folder), "model",
                                                         ConvertOptions(target="smd", **values))
    return sorted(pathlib.Path(p).name for p in written)


def _vertex_lines(data: bytes) -> list[bytes]:
    """The vertex lines of a reference's triangles block (three after each material line)."""
    lines = data.splitlines()
    block = lines[lines.index(b"triangles") + 1:lines.index(b"end", lines.index(b"triangles"))]
    return [line for k, line in enumerate(block) if k % 4]


@pytest.mark.parametrize("flex, write_qc", [(True, True), (False, False)])
def test_operator_and_convert_write_the_same_bytes(clean_scene, tmp_path, flex, write_qc):
    _humanoid_with_a_shape()
    values = dict(flavour="GOLDSRC", animations=True, flex=flex, write_qc=write_qc)
    (tmp_path / "operator").mkdir()
    assert bpy.ops.export_scene.skinbridge_smd(filepath=str(tmp_path / "operator" / "model.smd"),
                                               **values) == {"FINISHED"}
    written = _convert(tmp_path / "convert", **values)
    by_operator, by_convert = _files(tmp_path / "operator"), _files(tmp_path / "convert")
    expected = ["Walk.smd", "model.smd"] + ["model.vta"] * flex + ["model.qc"] * write_qc
    assert sorted(by_operator) == sorted(by_convert) == sorted(written) == sorted(expected)
    for name in by_operator:
        assert by_operator[name] == by_convert[name], name

    # the flavour changed the bytes: GoldSrc has CRLF line ends and no link columns, Source LF and links
    gold = by_operator["model.smd"]
    _convert(tmp_path / "source", **{**values, "flavour": "SOURCE"})
    source = (tmp_path / "source" / "model.smd").read_bytes()
    assert gold != source
    assert smd.read(gold).goldsrc and not smd.read(source).goldsrc
    assert gold.count(b"\r\n") == gold.count(b"\n") and b"\r\n" not in source
    assert {len(line.split()) for line in _vertex_lines(gold)} == {9}
    assert min(len(line.split()) for line in _vertex_lines(source)) >= 11  # link count, then bone and weight
    if write_qc:
        assert '$sequence "Walk" "Walk.smd"' in by_operator["model.qc"].decode()


@pytest.mark.parametrize("values", [{}, {"animations": False}])
def test_the_defaults_and_animations_off_are_the_same_both_ways(clean_scene, tmp_path, values):
    """Not given, an option has the one default of its record on both sides (so the sidebar's check, convert and
    File › Export write the same); animations off writes no action file."""
    _humanoid_with_a_shape()
    written = _convert(tmp_path / "convert", **values)
    (tmp_path / "operator").mkdir()
    assert bpy.ops.export_scene.skinbridge_smd(filepath=str(tmp_path / "operator" / "model.smd"),
                                               **values) == {"FINISHED"}
    assert _files(tmp_path / "operator") == _files(tmp_path / "convert")
    assert written == sorted(["model.qc", "model.smd", "model.vta"] + ["Walk.smd"] * (values == {}))


def test_a_vta_file_name_writes_the_vta_alone_in_the_flavour_chosen(clean_scene, tmp_path):
    _humanoid_with_a_shape()
    out = tmp_path / "smile.vta"
    assert bpy.ops.export_scene.skinbridge_smd(filepath=str(out), flavour="GOLDSRC") == {"FINISHED"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["smile.vta"]
    data = out.read_bytes()
    assert smd.read(data).kind == "flex" and data.count(b"\r\n") == data.count(b"\n")


@pytest.mark.slow
def test_the_command_line_and_the_operator_write_the_same_bytes(clean_scene, testdata, tmp_path):
    """`skinbridge convert REF --to smd --flavour GOLDSRC --no-write-qc` in a process of its own, and File › Import
    then File › Export with the same choices in this one: the same files, byte for byte, and GoldSrc's."""
    from conftest import run_cli  # the command line's runner (a fresh process), shared by the CLI tests

    ref = testdata / "smd" / "bst_Cube_Armature_ref.smd"
    r = run_cli("convert", ref, "--to", "smd", "--flavour", "GOLDSRC", "--no-write-qc", "-o", tmp_path / "cli")
    assert r.returncode == 0, r.stdout + r.stderr
    assert bpy.ops.import_scene.skinbridge_smd(filepath=str(ref)) == {"FINISHED"}
    (tmp_path / "operator").mkdir()
    assert bpy.ops.export_scene.skinbridge_smd(filepath=str(tmp_path / "operator" / ref.name), flavour="GOLDSRC",
                                               write_qc=False) == {"FINISHED"}
    by_cli, by_operator = _files(tmp_path / "cli"), _files(tmp_path / "operator")
    assert sorted(by_cli) == sorted(by_operator) and ref.name in by_cli and not any(n.endswith(".qc") for n in by_cli)
    for name in by_cli:
        assert by_cli[name] == by_operator[name], name
    data = by_cli[ref.name]
    assert smd.read(data).goldsrc and data.count(b"\r\n") == data.count(b"\n") and data != ref.read_bytes()
