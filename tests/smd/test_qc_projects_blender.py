"""A QC project imported and written back whole (`convert x.qc --to smd`, File › Import QC then File › Export
Valve SMD): every command as its text gave it, each model and sequence file under its own name and byte-identical
while untouched, changed only where the scene was; a static prop's sequence stays its reference."""
from __future__ import annotations

import pathlib
import re

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from conftest import run_cli  # noqa: E402
from skinbridge import formats  # noqa: E402
from skinbridge.app.options import ConvertOptions  # noqa: E402
from skinbridge.core.errors import ExportError  # noqa: E402
from skinbridge.io_smd.qc import qc  # noqa: E402
from skinbridge.io_smd.smd import smd  # noqa: E402

pytestmark = pytest.mark.blender

QC_DIR = pathlib.Path(__file__).resolve().parents[2].parent / "shared" / "testdata" / "qc" / "health_charger001"
QC = QC_DIR / "health_charger001.qc"


def _files(folder: pathlib.Path) -> dict[str, bytes]:
    """Every file under `folder` by its path relative to it."""
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def _commands(text: str) -> list[tuple[str, bool]]:
    """The QC's tokens, comments and layout left out: what studiomdl reads."""
    return [(t.text, t.quoted) for t in qc.tokenize(text)]


def _export(folder: pathlib.Path, name: str) -> tuple[dict[str, bytes], list[str]]:
    folder.mkdir()
    written, warnings = formats.targets()["smd"].get("export_target")(bpy.context, str(folder), name,
                                                                       ConvertOptions(target="smd"))
    files = _files(folder)
    assert sorted(pathlib.Path(p).relative_to(folder).as_posix() for p in written) == sorted(files)
    return files, warnings


def test_health_charger_converts_back_whole(tmp_path):
    out = tmp_path / "out"
    r = run_cli("convert", QC, "--to", "smd", "-o", out)
    assert r.returncode == 0, r.stdout + r.stderr
    source, written = _files(QC_DIR), _files(out)
    assert sorted(written) == sorted(source)  # the QC, its 4 model SMDs (body, 3 LODs), physics, idle
    assert _commands(written["health_charger001.qc"].decode()) == _commands(QC.read_text())
    for name in source:
        assert written[name] == source[name], name  # byte for byte: Crowbar's layout and comments too


def test_file_menu_round_trip_and_an_edit_to_the_reference(clean_scene, tmp_path):
    assert bpy.ops.import_scene.skinbridge_qc(filepath=str(QC)) == {"FINISHED"}
    body = bpy.data.collections["Body 0: health_charger001_reference"]
    ob = next(o for o in body.objects if o.type == "MESH")
    assert np.allclose(np.array(ob.matrix_world), np.eye(4))  # a vertex moved in the mesh moves so in the file
    co = np.empty(len(ob.data.vertices) * 3, np.float32)
    ob.data.vertices.foreach_get("co", co)
    ob.data.vertices.foreach_set("co", (co.reshape(-1, 3) + [1.0, 0.0, 0.0]).reshape(-1))
    ob.data.update()
    out = tmp_path / "out"
    out.mkdir()
    assert bpy.ops.export_scene.skinbridge_smd(filepath=str(out / "health_charger001.smd")) == {"FINISHED"}
    source, written = _files(QC_DIR), _files(out)
    assert sorted(written) == sorted(source)
    changed = [name for name in source if written[name] != source[name]]
    assert changed == ["health_charger001_reference.smd"]
    old = smd.read(source[changed[0]]).triangles
    new = smd.read(written[changed[0]]).triangles
    assert len(new.positions) == len(old.positions)
    assert np.abs(new.positions - old.positions - [1.0, 0.0, 0.0]).max() < 2e-6  # the file's 6 decimals
    assert np.array_equal(new.uvs, old.uvs) and np.abs(new.normals - old.normals).max() < 2e-6


def test_sequences_follow_their_actions(clean_scene, tmp_path):
    formats.identify_file(QC).get("blender_import")(bpy.context, str(QC), ConvertOptions())
    text = QC.read_text()
    idle = bpy.data.actions["idle"]
    idle.name = "rest"
    wave = idle.copy()  # Blender's duplicate: it holds what the import put on idle
    wave.name = "wave"
    written, _ = _export(tmp_path / "a", "health_charger001")
    block = text[text.index('$Sequence "idle" {'):text.index("}", text.index('$Sequence "idle" {')) + 1]
    expected = text.replace(block, block.replace('"idle"', '"rest"', 1) + '\n$sequence "wave" "wave.smd" fps 24')
    assert written["health_charger001.qc"].decode() == expected
    assert written["idle.smd"] == (QC_DIR / "idle.smd").read_bytes()  # the sequence's file keeps its name
    rows = smd.read((QC_DIR / "idle.smd").read_bytes()).skeleton[0]
    copy = smd.read(written["wave.smd"]).skeleton
    assert len(copy) == 1 and np.abs(copy[0].positions - rows.positions).max() < 2e-6

    bpy.data.actions.remove(wave)
    bpy.data.actions.remove(bpy.data.actions["rest"])
    written, warnings = _export(tmp_path / "b", "health_charger001")
    assert written["health_charger001.qc"].decode() == text.replace(block + "\n\n", "")
    assert "idle.smd" not in written
    assert any("not written" in w and "idle.smd" in w for w in warnings), warnings


def _smd(nodes: list[tuple[str, int]], rest: list[str], material: str) -> str:
    """A reference SMD of a tetrahedron on node 0, its nodes and rest rows as given."""
    corners = [(0, 0, 10), (10, 0, -5), (-5, 8, -5), (-5, -8, -5)]
    lines = ["version 1", "nodes"] + [f'{k} "{n}" {p}' for k, (n, p) in enumerate(nodes)] + ["end", "skeleton",
                                                                                              "time 0"]
    lines += [f"{k} {r}" for k, r in enumerate(rest)] + ["end", "triangles"]
    for tri in ((0, 1, 2), (0, 2, 3), (0, 3, 1), (1, 3, 2)):
        lines.append(material)
        lines += [f"0 {' '.join(f'{c:.6f}' for c in corners[i])} 0.000000 0.000000 1.000000 0.5 0.5" for i in tri]
    return "\n".join(lines + ["end", ""])


PAINT_BOMB = """$modelname "editor/prop_paint_bomb.mdl"

$body "Body" "prop_paint_bomb_ref.smd"

$staticprop

$cdmaterials "models/editor/ts/"

$sequence idle "prop_paint_bomb_ref"

$hbox 0 "static_prop" -28 -28 -28 28 28 28

$texturegroup skinfamilies {
\t{ "blob_surface_bounce" }
\t{ "blob_surface_reflect" }
}

// Paint bombs use the futbol prop for their collision size.
$collisionmodel "futbol_physics.smd" {
\t$mass 20
}
"""


def test_a_static_prop_sequence_stays_a_static_prop(clean_scene, tmp_path):
    # HammerAddons' prop_paint_bomb.qc: a plain-mesh reference named as the idle sequence, and a collision model
    # whose own rig turns its root a quarter turn at rest
    src = tmp_path / "src"
    src.mkdir()
    (src / "prop_paint_bomb.qc").write_text(PAINT_BOMB)
    (src / "prop_paint_bomb_ref.smd").write_text(_smd([("root", -1)], ["0 0 0 0 0 0"], "blob_surface_bounce"))
    (src / "futbol_physics.smd").write_text(_smd([("root", -1), ("Effect_spiral", 0)],
                                                 ["0 0 0 1.570796 0 0", "0 0 0 0 0 0"], "phy"))
    warnings = formats.identify_file(src / "prop_paint_bomb.qc").get("blender_import")(
        bpy.context, str(src / "prop_paint_bomb.qc"), ConvertOptions())
    assert not bpy.data.actions  # no action: not on the collision rig, whose root keeps its rest
    rig = next(o for o in bpy.data.objects if o.type == "ARMATURE")
    assert rig.users_collection[0].name == "collision" and rig.animation_data is None
    assert "sequence 'idle': the model has no bones (a plain mesh): no action" in warnings
    written, warnings = _export(tmp_path / "out", "prop_paint_bomb")
    assert written == _files(src) and not warnings  # the sequence still names the reference: a static prop
    assert re.search(r'^\$sequence idle "prop_paint_bomb_ref"$', written["prop_paint_bomb.qc"].decode(), re.M)


def test_a_body_flex_file_comes_back(clean_scene, tmp_path):
    smd_dir = QC_DIR.parents[1] / "smd"
    src = tmp_path / "src"
    src.mkdir()
    (src / "cube.smd").write_bytes((smd_dir / "bst_Cube_NoArmature_ref.smd").read_bytes())
    (src / "cube_flex.vta").write_bytes((smd_dir / "bst_Cube_NoArmature_flex.vta").read_bytes())
    (src / "prop.qc").write_text('$model "studio" "cube.smd" {\n\tflexfile "cube_flex" {\n\t\tdefaultflex frame 0\n'
                                 '\t}\n}\n')
    formats.identify_file(src / "prop.qc").get("blender_import")(bpy.context, str(src / "prop.qc"), ConvertOptions())
    written, warnings = _export(tmp_path / "out", "prop")
    assert written == _files(src) and not warnings


def test_a_kept_name_leaving_the_folder_writes_nothing(clean_scene, tmp_path):
    formats.identify_file(QC).get("blender_import")(bpy.context, str(QC), ConvertOptions())
    bpy.data.collections["collision"]["qc_file"] = "../escaped.smd"  # a .blend edited by hand
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(ExportError, match="'../escaped.smd': a file of the QC project named outside its folder"):
        formats.targets()["smd"].get("export_target")(bpy.context, str(out), "x", ConvertOptions(target="smd"))
    assert not list(tmp_path.rglob("*.smd")) and not list(out.iterdir())


def test_an_included_file_comes_back_with_its_sequence_renamed(clean_scene, tmp_path):
    src = tmp_path / "src"
    (src / "parts").mkdir(parents=True)
    (src / "ref.smd").write_bytes((QC_DIR / "health_charger001_reference.smd").read_bytes())
    (src / "walk.smd").write_bytes((QC_DIR / "idle.smd").read_bytes())
    main = '$modelname "m.mdl"\n$body "b" "ref.smd"\n$include "parts/seqs.qci"  // the sequences\n'
    (src / "m.qc").write_text(main)
    included = '// walking\n$sequence "walk" "walk.smd" fps 30\n$cdmaterials "a/"\n'
    (src / "parts" / "seqs.qci").write_text(included)
    formats.identify_file(src / "m.qc").get("blender_import")(bpy.context, str(src / "m.qc"), ConvertOptions())
    bpy.data.actions["walk"].name = "run"
    out = tmp_path / "out"
    written, warnings = _export(out, "m")
    source = _files(src)
    assert not warnings and sorted(written) == sorted(source) == ["m.qc", "parts/seqs.qci", "ref.smd", "walk.smd"]
    assert written["parts/seqs.qci"].decode() == included.replace('"walk" "walk.smd"', '"run" "walk.smd"')
    assert all(written[name] == source[name] for name in ("m.qc", "ref.smd", "walk.smd"))
