"""A QC project into Blender: the health charger sample whole (its body, three LODs, the idle sequence, the
collision model), counts taken from the QC text and the SMD files it names; a fault leaves nothing behind;
`convert --to smd` writes a QC that `compare` reads (Fox's Run sampled at 120 fps)."""
from __future__ import annotations

import pathlib
import re

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from conftest import run_cli  # noqa: E402

from skinbridge import formats  # noqa: E402
from skinbridge.app.options import ConvertOptions  # noqa: E402
from skinbridge.core.errors import FormatError  # noqa: E402
from skinbridge.io_smd.qc import qc  # noqa: E402
from skinbridge.io_smd.smd import smd  # noqa: E402

pytestmark = pytest.mark.blender

QC_DIR = pathlib.Path(__file__).resolve().parents[2].parent / "shared" / "testdata" / "qc" / "health_charger001"
QC = QC_DIR / "health_charger001.qc"


def _triangles(name: str) -> int:
    """Triangles of an SMD with three distinct corners (Blender keeps no others)."""
    f = smd.read((QC_DIR / name).read_bytes())
    pos = f.triangles.positions.reshape(-1, 3, 3)
    same = (np.abs(pos[:, 0] - pos[:, 1]).max(1) == 0) | (np.abs(pos[:, 1] - pos[:, 2]).max(1) == 0) | \
        (np.abs(pos[:, 0] - pos[:, 2]).max(1) == 0)
    return int((~same).sum())


def _import(path) -> list[str]:
    return formats.identify_file(path).get("blender_import")(bpy.context, str(path), ConvertOptions())


def test_health_charger_imports_whole(clean_scene):
    text = QC.read_text()
    warnings = _import(QC)
    root = bpy.data.collections["health_charger001"]
    children = {c.name: c for c in root.children}
    studio = re.findall(r'studio "([^"]+)"', text)
    lods = re.findall(r'\$LOD (\d+)\s*\{\s*replacemodel "[^"]+" "([^"]+)"', text)
    collision = re.search(r'\$CollisionModel "([^"]+)"', text).group(1)
    expected = [f"Body 0: {studio[0][:-4]}"] + [f"LOD {k + 1} ({t})" for k, (t, _) in enumerate(lods)] + ["collision"]
    assert list(children) == expected
    meshes = {c: [o for o in children[c].objects if o.type == "MESH"] for c in expected}
    files = [studio[0]] + [f for _, f in lods] + [collision]
    for c, name in zip(expected, files):
        assert [o.name for o in meshes[c]] == [name[:-4]]
        assert len(meshes[c][0].data.polygons) == _triangles(name), name
    # one armature: every LOD and the collision model share the body's bones and rest pose
    arms = [o for o in bpy.data.objects if o.type == "ARMATURE"]
    assert len(arms) == 1 and [b.name for b in arms[0].data.bones] == ["base", "healthbar", "roundcap"]
    assert len(bpy.data.armatures) == 1  # the LODs' and collision model's own armatures are gone, data too
    assert all(o.parent == arms[0] for c in expected for o in meshes[c])
    assert [children[c].hide_viewport for c in expected] == [False, True, True, True, True]
    assert meshes["collision"][0].display_type == "WIRE"
    sequences = re.findall(r'\$Sequence "([^"]+)"', text)
    assert [a.name for a in bpy.data.actions] == sequences == ["idle"]
    assert arms[0].animation_data.action.name == "idle"
    assert any("$staticprop" in w and "not interpreted" in w for w in warnings), warnings


def test_sequence_at_its_fps_and_a_fault_leaves_nothing(clean_scene, tmp_path):
    for name in ("health_charger001_reference.smd", "idle.smd"):
        (tmp_path / name).write_bytes((QC_DIR / name).read_bytes())
    motion = smd.read((QC_DIR / "idle.smd").read_bytes())
    motion.skeleton.append(smd.Frame(6, *[getattr(motion.skeleton[0], a) for a in ("bones", "positions",
                                                                                   "rotations")]))
    (tmp_path / "idle.smd").write_bytes(b"".join(smd.write_pieces(motion)))
    good = tmp_path / "m.qc"
    good.write_text('$body "b" "health_charger001_reference"\n$sequence idle "idle" fps 12 loop\n')
    _import(good)
    act = bpy.data.actions["idle"]
    scene_fps = bpy.context.scene.render.fps / bpy.context.scene.render.fps_base
    assert tuple(act.frame_range) == pytest.approx((0.0, 6 * scene_fps / 12))  # frame 6 at 12 fps: 0.5 s

    bpy.ops.wm.read_factory_settings(use_empty=True)
    (tmp_path / "broken.smd").write_text("version 1\nnodes\n0 \"a\" 5\nend\nskeleton\ntime 0\n0 0 0 0 0 0 0\nend\n")
    bad = tmp_path / "bad.qc"
    bad.write_text('$body "b" "health_charger001_reference"\n$lod 10\n{\n replacemodel '
                   '"health_charger001_reference" "broken"\n}\n')
    before = {k: len(getattr(bpy.data, k)) for k in ("objects", "meshes", "armatures", "collections", "actions")}
    with pytest.raises(FormatError, match="broken.smd is an SMD motion, named as a model"):  # after the body
        _import(bad)
    assert {k: len(getattr(bpy.data, k)) for k in before} == before


def test_static_prop_sequence_gives_no_action(clean_scene, tmp_path):
    # HammerAddons' props name their plain-mesh reference as the `idle` sequence (studiomdl's rest pose)
    smd_dir = QC_DIR.parents[1] / "smd"
    (tmp_path / "cube.smd").write_bytes((smd_dir / "bst_Cube_NoArmature_ref.smd").read_bytes())
    vta = (smd_dir / "bst_Cube_NoArmature_flex.vta").read_bytes()
    (tmp_path / "cube_flex.vta").write_bytes(vta)
    prop = tmp_path / "prop.qc"
    prop.write_text('$staticprop\n$model "studio" "cube.smd" {\n\tflexfile "cube_flex" {\n\t\tdefaultflex frame 0\n'
                    '\t}\n}\n$sequence "idle" "cube.smd"\n')
    warnings = _import(prop)
    assert [o.type for o in bpy.data.objects] == ["MESH"] and not bpy.data.actions
    shapes = [fr.comment for fr in smd.read(vta).skeleton[1:]]  # frame 0 is the basis
    keys = bpy.data.objects[0].data.shape_keys.key_blocks
    assert [k.name for k in keys] == ["Basis", *shapes] and all(k.value == 0 for k in keys[1:])
    assert "sequence 'idle': the model has no bones (a plain mesh): no action" in warnings


@pytest.mark.slow
def test_fox_to_smd_writes_a_qc_that_compare_reads(clean_scene, testdata, tmp_path):
    out = tmp_path / "fox"
    r = run_cli("convert", testdata / "gltf" / "Fox.glb", "--to", "smd", "-o", out)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "between whole frames" not in r.stdout + r.stderr  # Run is sampled at a rate that holds its keys
    p = qc.read(str(out / "Fox.qc"))
    written = sorted(pathlib.Path(f).name for f in p.files())
    assert written == sorted(f.name for f in out.iterdir() if f.suffix == ".smd")
    assert {s.name: s.fps for s in p.sequences} == {"Run": 120.0, "Survey": 24.0, "Walk": 24.0}
    assert len(smd.read((out / "Run.smd").read_bytes()).skeleton) == 140  # 27.8 / 24 s × 120, plus frame 0
    r = run_cli("compare", testdata / "gltf" / "Fox.glb", out)
    assert "result: same within the tolerances" in r.stdout, r.stdout + r.stderr
    # the SMD import reads the QC beside the files: Run's 139 frames at 120 fps end at scene frame 27.8
    _import(out / "Fox.smd")
    _import(out / "Run.smd")
    scene_fps = bpy.context.scene.render.fps / bpy.context.scene.render.fps_base
    assert tuple(bpy.data.actions["Run"].frame_range) == pytest.approx((0.0, 139 * scene_fps / 120))


def test_a_dmx_body(clean_scene, tmp_path):
    from skinbridge.io_smd.dmx import convert as dmx_convert

    data = (QC_DIR.parents[1] / "dmx" / "bst_Curve_Armature_BezierCurve.dmx").read_bytes()
    (tmp_path / "curve.dmx").write_bytes(data)
    (tmp_path / "curve.qc").write_text('$body "curve" "curve"\n')  # no extension: studiomdl tries .smd, then .dmx
    _import(tmp_path / "curve.qc")
    scene, _ = dmx_convert.load(str(tmp_path / "curve.dmx"), data)
    body = bpy.data.collections["curve"].children[0]  # the QC's collection holds the body's
    meshes = [o for o in body.objects if o.type == "MESH"]
    assert [len(o.data.vertices) for o in meshes] == [m.vertex_count for m in scene.meshes]
    assert [len(o.data.bones) for o in bpy.data.objects if o.type == "ARMATURE"] == [len(scene.skeleton.bones)]
