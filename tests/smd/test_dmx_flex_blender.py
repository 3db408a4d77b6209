"""DMX flex in Blender: a corrective shape (a delta state named after the shapes it corrects, `A_B`) is driven by
the least of their values, as Blender Source Tools builds it; the flex controllers of the combination operator
set their keys' slider ranges and are written back on export (read by srctools, an independent reader), with
one default controller per other shape key; a controller property edited into something else is warned about."""
from __future__ import annotations

import io

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from skinbridge.core import model as cm  # noqa: E402
from skinbridge.io_smd.dmx import blender_io as blender_dmx  # noqa: E402
from skinbridge.io_smd.dmx import dmx  # noqa: E402
from skinbridge.io_smd.dmx import write as dmx_write  # noqa: E402

try:
    import srctools.dmx as srctools_dmx
except ImportError:  # the independent reader is test-only
    srctools_dmx = None

pytestmark = pytest.mark.blender


def _flex_scene() -> cm.Scene:
    p = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0]], np.float32)
    m = cm.Mesh("tri", p, np.array([[0, 1, 2]], np.int32))
    m.shape_keys = [cm.ShapeKey("A", p + [0, 0, 1]), cm.ShapeKey("B", p + [0, 0, 2]),
                    cm.ShapeKey("A_B", p + [0, 0, 3]), cm.ShapeKey("Lid_Up", p + [1, 0, 0])]
    return cm.Scene(meshes=[m], extras={"dmx_controls": [
        {"name": "A", "raw": ["A"], "min": -1.0, "max": 2.0, "stereo": False, "eyelid": False}]})


def _srctools_controls(path: str) -> list[tuple[str, list[str], float, float]]:
    d = dmx.read(open(path, "rb").read())
    d.encoding_version, d.strings, d.header, d.prefix = 5, None, None, []
    root = srctools_dmx.Element.parse(io.BytesIO(dmx.write(d)))[0]
    op = root["combinationOperator"].val_elem
    assert [t.name for t in op["targets"].iter_elem()] == ["tri"]
    return [(c.name, list(c["rawControlNames"].iter_str()), c["flexMin"].val_float, c["flexMax"].val_float)
            for c in op["controls"].iter_elem()]


def test_corrective_driver_and_controls(clean_scene, tmp_path):
    scene = _flex_scene()
    scene.extras.clear()  # no controllers kept: one per shape key that is no corrective (Lid_Up's parts are none)
    path = dmx_write.write_files(scene, str(tmp_path), "flex")[0][0]
    if srctools_dmx is not None:
        assert _srctools_controls(path) == [("A", ["A"], 0.0, 1.0), ("B", ["B"], 0.0, 1.0),
                                            ("Lid_Up", ["Lid_Up"], 0.0, 1.0)]
    blender_dmx.blender_import(bpy.context, path)
    (ob,) = [o for o in bpy.data.objects if o.type == "MESH"]
    keys = ob.data.shape_keys
    drivers = {d.data_path: d.driver for d in keys.animation_data.drivers}
    assert list(drivers) == ['key_blocks["A_B"].value'] and drivers['key_blocks["A_B"].value'].type == "MIN"
    for a, b in [(0.3, 0.7), (0.9, 0.2), (0.0, 1.0)]:
        keys.key_blocks["A"].value, keys.key_blocks["B"].value = a, b
        bpy.context.view_layer.update()
        assert keys.key_blocks["A_B"].value == pytest.approx(min(a, b), abs=1e-7)


def test_kept_controls_set_sliders_and_are_written_back(clean_scene, tmp_path):
    path = dmx_write.write_files(_flex_scene(), str(tmp_path), "flex")[0][0]
    blender_dmx.blender_import(bpy.context, path)
    (ob,) = [o for o in bpy.data.objects if o.type == "MESH"]
    kb = ob.data.shape_keys.key_blocks["A"]
    assert (kb.slider_min, kb.slider_max) == (-1.0, 2.0)
    out = tmp_path / "again"
    out.mkdir()
    again = blender_dmx.export_target(bpy.context, str(out), "flex", None)[0][0]
    if srctools_dmx is not None:
        assert _srctools_controls(again) == [("A", ["A"], -1.0, 2.0), ("B", ["B"], 0.0, 1.0),
                                             ("Lid_Up", ["Lid_Up"], 0.0, 1.0)]  # the kept one, then defaults
    bpy.data.objects["tri"]["dmx_controls"] = "not JSON"
    warnings = blender_dmx.export_target(bpy.context, str(out), "flex", None)[1]
    assert any("dmx_controls property is not" in w for w in warnings)
