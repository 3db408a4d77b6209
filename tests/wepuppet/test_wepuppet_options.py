"""The Wallpaper Engine puppet's export options reach one writer: File › Export with units_per_metre,
layout_format and project_files, and `convert --to wepuppet` (export_target with a ConvertOptions) given the same
values, write byte-identical files; the earlier operator property `scale` (metres per pixel) still sets the
written units per metre, and the import operators' earlier `scale` still sets their metres per pixel."""
from __future__ import annotations

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from skinbridge import formats  # noqa: E402
from skinbridge.app.options import ConvertOptions  # noqa: E402
from skinbridge.io_wepuppet.puppet import mdl  # noqa: E402

from support import wepuppet as we  # noqa: E402

pytestmark = pytest.mark.blender

GOOSE = "blacryu_goose_t_puppet.mdl"
CHOSEN = {"units_per_metre": 50.0, "layout_format": "WIDE"}  # neither is the default


def _files(root) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _import_goose(testdata) -> None:
    path = testdata / "wepuppet" / GOOSE
    assert bpy.ops.import_scene.skinbridge_wepuppet(filepath=str(path)) == {"FINISHED"}


def test_operator_and_convert_write_the_same_files(clean_scene, testdata, tmp_path):
    _import_goose(testdata)
    by_operator, by_convert = tmp_path / "operator", tmp_path / "convert"
    out = by_operator / "models" / "goose_t_puppet.mdl"
    out.parent.mkdir(parents=True)
    assert bpy.ops.export_scene.skinbridge_wepuppet(filepath=str(out), project_files=True, **CHOSEN) == {"FINISHED"}
    spec = formats.get("wepuppet")
    spec.get("export_target")(bpy.context, str(by_convert), "goose_t", ConvertOptions(target="wepuppet", **CHOSEN))
    ours, theirs = _files(by_operator), _files(by_convert)
    assert set(ours) == {"models/goose_t_puppet.mdl", "models/goose_t.json", "materials/goose_t.json",
                         "materials/goose_t.tex"}
    assert set(theirs) == set(ours) | {"project.json", "scene.json"}  # convert lays out the whole project
    for rel, data in ours.items():
        assert theirs[rel] == data, rel
    written = mdl.read(ours["models/goose_t_puppet.mdl"])
    source = mdl.read((testdata / "wepuppet" / GOOSE).read_bytes())
    assert written.tag == "MDLV0023"
    # imported at 0.01 m per pixel, written at 50 px per metre: every position half the file's
    half = np.asarray(source.meshes[0].vertices["position"], np.float64) * 0.5
    assert np.allclose(np.asarray(written.meshes[0].vertices["position"], np.float64), half, atol=1e-3)


def test_the_earlier_scale_property_sets_units_per_metre(clean_scene, testdata, tmp_path):
    _import_goose(testdata)
    old, new = tmp_path / "old.mdl", tmp_path / "new.mdl"
    assert bpy.ops.export_scene.skinbridge_wepuppet(filepath=str(old), scale=0.02) == {"FINISHED"}
    assert bpy.ops.export_scene.skinbridge_wepuppet(filepath=str(new), units_per_metre=50.0) == {"FINISHED"}
    assert old.read_bytes() == new.read_bytes()
    assert bpy.ops.export_scene.skinbridge_wepuppet(filepath=str(old), scale=0.0) == {"FINISHED"}  # as imported
    assert old.read_bytes() == (testdata / "wepuppet" / GOOSE).read_bytes()


def test_the_earlier_import_scale_is_metres_per_unit(clean_scene, testdata, tmp_path):
    path = str(testdata / "wepuppet" / GOOSE)

    def width(**choice) -> float:
        before = set(bpy.data.objects)
        assert bpy.ops.import_scene.skinbridge_wepuppet(filepath=path, **choice) == {"FINISHED"}
        mesh = next(o for o in set(bpy.data.objects) - before if o.type == "MESH")
        return float(np.ptp([v.co.x for v in mesh.data.vertices]))

    default, new, old = width(), width(metres_per_unit=0.02), width(scale=0.02)
    assert new == pytest.approx(2 * default) and old == new
    we.make_project(tmp_path, testdata)
    for choice, metres in (({"scale": 0.02}, 0.02), ({"metres_per_unit": 0.03}, 0.03)):
        assert bpy.ops.import_scene.skinbridge_weproject(filepath=str(tmp_path / "project.json"), **choice) \
            == {"FINISHED"}
        assert bpy.context.scene.camera.data.ortho_scale == pytest.approx(metres * 1920)
