"""Wallpaper Engine models through Blender with no change come back byte-identical (padding, vertex records with
their slot order and tangents, index lists), and an edited vertex changes that vertex's record alone."""
from __future__ import annotations

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from skinbridge.io_wepuppet.puppet import blender_io, mdl  # noqa: E402

from support.bytes_compare import assert_same_bytes  # noqa: E402

pytestmark = pytest.mark.blender

MODELS = ["blacryu_goose_t_puppet.mdl", "blacryu_d2r_Hood_puppet.mdl", "blacryu_Arwing_static.mdl",
          "blacryu_d2r_Wanderer_4096_DXT5_puppet.mdl", "blacryu_ps2_cone_low_static_v4.mdl"]


def _round_trip(path, out) -> bytes:
    blender_io.import_wepuppet(bpy.context, str(path))
    blender_io.export_wepuppet(bpy.context, str(out))
    return out.read_bytes()


@pytest.mark.parametrize("name", MODELS)
def test_unchanged_model_comes_back_byte_identical(clean_scene, testdata, tmp_path, name):
    path = testdata / "wepuppet" / name
    assert_same_bytes(_round_trip(path, tmp_path / name), path.read_bytes(), mdl.read, name)


def test_unpadded_file_comes_back_unpadded(clean_scene, testdata, tmp_path):
    m = mdl.read((testdata / "wepuppet" / "blacryu_goose_t_puppet.mdl").read_bytes())
    m.tail = b""
    data = mdl.write(m)
    assert len(data) < 1 << 20
    path = tmp_path / "in" / "goose_puppet.mdl"
    path.parent.mkdir()
    path.write_bytes(data)
    assert_same_bytes(_round_trip(path, tmp_path / "goose_puppet.mdl"), data, mdl.read)


def _changed_bytes(got: bytes, want: bytes) -> np.ndarray:
    assert len(got) == len(want)
    return np.flatnonzero(np.frombuffer(got, np.uint8) != np.frombuffer(want, np.uint8))


@pytest.mark.parametrize("name,mesh,vertex", [("blacryu_goose_t_puppet.mdl", 0, 17),
                                              ("blacryu_Arwing_static.mdl", 3, 5)])
def test_edited_vertex_changes_that_vertex_record_alone(clean_scene, testdata, tmp_path, name, mesh, vertex):
    path = testdata / "wepuppet" / name
    want = path.read_bytes()
    m = mdl.read(want)
    result = blender_io.import_wepuppet(bpy.context, str(path))
    ob = [o for o in result.objects if o.type == "MESH"][mesh]
    ob.data.vertices[vertex].co.x += 0.1
    out = tmp_path / name
    blender_io.export_wepuppet(bpy.context, str(out))
    got = out.read_bytes()
    stride = m.meshes[mesh].vertices.dtype.itemsize
    start = m.offsets[f"mesh {mesh} vertices"] + vertex * stride
    changed = _changed_bytes(got, want)
    assert len(changed) and changed.min() >= start and changed.max() < start + stride, changed[:8]
    back = mdl.read(got).meshes[mesh].vertices[vertex]
    assert back["position"][0] == pytest.approx(m.meshes[mesh].vertices[vertex]["position"][0] + 10, abs=1e-3)


def test_convert_writes_a_material_file_per_material(clean_scene, testdata, tmp_path):
    path = testdata / "wepuppet" / "blacryu_Arwing_static.mdl"
    m = mdl.read(path.read_bytes())
    blender_io.import_wepuppet(bpy.context, str(path))
    written, _ = blender_io.export_target(bpy.context, str(tmp_path), "Arwing", None)
    back = mdl.read((tmp_path / "models" / "Arwing_puppet.mdl").read_bytes())
    want = [f"materials/{x.materials[0].split('/')[-1]}" for x in m.meshes]
    assert [x.materials for x in back.meshes] == [[p] for p in want]
    for p in want:
        assert (tmp_path / p).is_file() and str(tmp_path / p) in written
