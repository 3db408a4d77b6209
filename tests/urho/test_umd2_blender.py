"""Through Blender: UMD2 import/export round trip, initial pose ≠ bind pose against
core/skinning.py, failed imports leave bpy.data as it was, export leaves the scene unchanged."""
from __future__ import annotations

import os

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from support.failures import cut_files_refused, export_fails_at, import_fails_at  # noqa: E402

from skinbridge.blender.mesh import evaluated_world_positions  # noqa: E402
from support.fingerprint import diff_fingerprints, scene_fingerprint  # noqa: E402
from skinbridge.core import skinning  # noqa: E402
from skinbridge.core.fileio import write_atomic  # noqa: E402
from skinbridge.core.transforms import BLENDER_TO_GLTF, trs_to_matrix  # noqa: E402
from skinbridge.io_urhox.model import umd2  # noqa: E402

from support.umd2_samples import posed_umd2  # noqa: E402

pytestmark = pytest.mark.blender






def _mesh_object():
    return next(o for o in bpy.data.objects if o.type == "MESH")


# -- item 2 ---------------------------------------------------------------------------------------

def test_fox_import_export_round_trip(clean_scene, fox_mdl, tmp_path):
    original = umd2.read(fox_mdl.read_bytes())
    assert bpy.ops.import_scene.skinbridge_urhox(filepath=str(fox_mdl)) == {"FINISHED"}
    out = tmp_path / "Fox_again.mdl"
    assert bpy.ops.export_scene.skinbridge_urhox(filepath=str(out)) == {"FINISHED"}
    again = umd2.read(out.read_bytes())
    assert out.stat().st_size == fox_mdl.stat().st_size
    va, vb = original.vertex_buffers[0], again.vertex_buffers[0]
    assert [e.descriptor for e in va.elements] == [e.descriptor for e in vb.elements]
    assert len(va.vertices) == len(vb.vertices)
    for name in va.vertices.dtype.names:
        a, b = va.vertices[name], vb.vertices[name]
        if a.dtype.kind == "u":
            np.testing.assert_array_equal(a, b, err_msg=name)
        else:
            tol = np.maximum(1e-5, 4 * np.spacing(np.abs(a).astype(np.float32)))
            assert np.all(np.abs(a.astype(np.float64) - b) <= tol), name
    np.testing.assert_array_equal(original.index_buffers[0].indices, again.index_buffers[0].indices)
    assert [g.bone_mapping.tolist() for g in original.geometries] == [g.bone_mapping.tolist() for g in again.geometries]
    assert [(lod.primitive_type, lod.index_start, lod.index_count) for g in again.geometries for lod in g.lods] == \
        [(lod.primitive_type, lod.index_start, lod.index_count) for g in original.geometries for lod in g.lods]
    for x, y in zip(original.bones, again.bones, strict=True):
        assert (x.name, x.parent, x.collision_mask) == (y.name, y.parent, y.collision_mask)
        for f in ("position", "scale", "offset"):
            np.testing.assert_allclose(getattr(x, f), getattr(y, f), atol=1e-5, err_msg=f"{x.name} {f}")
        q = y.rotation if np.dot(x.rotation, y.rotation) >= 0 else -y.rotation
        np.testing.assert_allclose(x.rotation, q, atol=1e-5, err_msg=x.name)
    np.testing.assert_allclose(original.bbox_min, again.bbox_min, atol=1e-5)
    np.testing.assert_allclose(original.bbox_max, again.bbox_max, atol=1e-5)
    assert len(again.centers) == len(original.centers)


# -- item 3 ---------------------------------------------------------------------------------------

def test_initial_pose_differs_from_bind_pose(clean_scene, tmp_path):
    model = posed_umd2()
    path = tmp_path / "posed.mdl"
    path.write_bytes(umd2.write(model))
    assert bpy.ops.import_scene.skinbridge_urhox(filepath=str(path)) == {"FINISHED"}

    # Reference: linear blend skinning of the file's own data (file space), posed at the initial transforms.
    parents = [i if b.parent == i else b.parent for i, b in enumerate(model.bones)]
    parents = [-1 if p == i else p for i, p in enumerate(parents)]
    local = trs_to_matrix([b.position for b in model.bones], [b.rotation for b in model.bones],
                          [b.scale for b in model.bones])
    world = skinning.world_matrices(parents, local)
    bind = np.array([np.linalg.inv(np.vstack([b.offset.reshape(3, 4), [0, 0, 0, 1]])) for b in model.bones])
    v = model.vertex_buffers[0].vertices
    expected = skinning.skin(v["POSITION0"], v["BLENDINDICES0"], v["BLENDWEIGHTS0"],
                             skinning.skin_matrices(world, bind))
    rest = v["POSITION0"].astype(np.float64)
    assert np.abs(expected - rest).max() > 0.1  # the initial pose really moves the mesh

    got = evaluated_world_positions(_mesh_object()) @ BLENDER_TO_GLTF[:3, :3].T
    diag = np.linalg.norm(rest.max(0) - rest.min(0))
    assert np.abs(got - expected).max() <= 1e-5 * diag


# -- item 4 ---------------------------------------------------------------------------------------

def test_failed_reads_leave_bpy_data_unchanged(clean_scene, testdata, tmp_path):
    data = (testdata / "urho3d" / "MaterialPreview.mdl").read_bytes()
    cut_files_refused(bpy.ops.import_scene.skinbridge_urhox, data, (4, len(data) // 3, len(data) - 30), tmp_path)


@pytest.mark.parametrize("stage", ["armature", "materials", "mesh", "done"])
def test_import_failing_while_building_removes_everything(clean_scene, fox_mdl, stage, monkeypatch):
    import_fails_at(monkeypatch, stage, bpy.ops.import_scene.skinbridge_urhox, filepath=str(fox_mdl))


# -- item 5 ---------------------------------------------------------------------------------------

@pytest.fixture
def posed(clean_scene):
    from support.blender_scenes import build_posed_scene

    info = build_posed_scene()
    assert bpy.context.mode == "POSE" and bpy.context.scene.frame_current == 17
    return info


def test_export_leaves_the_scene_unchanged(posed, tmp_path):
    before = scene_fingerprint()
    out = tmp_path / "posed.mdl"
    assert bpy.ops.export_scene.skinbridge_urhox(filepath=str(out)) == {"FINISHED"}
    assert diff_fingerprints(before, scene_fingerprint()) == []
    m = umd2.read(out.read_bytes())
    assert [b.name for b in m.bones] == ["root", "spine", "head"]
    assert len(m.vertex_buffers[0].vertices) > 0
    assert sorted(os.listdir(tmp_path)) == ["posed.mdl"]


@pytest.mark.parametrize("stage", ["skeleton", "meshes", "write"])
def test_failed_export_leaves_scene_and_no_file(posed, tmp_path, monkeypatch, stage):
    export_fails_at(monkeypatch, stage, bpy.ops.export_scene.skinbridge_urhox, tmp_path / "posed.mdl")


def test_export_failing_inside_the_file_write_leaves_no_partial_file(posed, tmp_path, monkeypatch):
    before = scene_fingerprint()
    import skinbridge.core.fileio as fileio

    def broken_replace(src, dst):
        assert os.path.getsize(src) > 0  # the bytes were written to the temporary file
        raise OSError("disk full (injected)")

    monkeypatch.setattr(fileio.os, "replace", broken_replace)
    out = tmp_path / "posed.mdl"
    with pytest.raises(RuntimeError, match="injected"):
        bpy.ops.export_scene.skinbridge_urhox(filepath=str(out))
    assert os.listdir(tmp_path) == []
    assert diff_fingerprints(before, scene_fingerprint()) == []


def test_write_atomic_keeps_an_existing_file_on_failure(tmp_path, monkeypatch):
    import skinbridge.core.fileio as fileio

    target = tmp_path / "keep.mdl"
    target.write_bytes(b"old")
    monkeypatch.setattr(fileio.os, "replace", lambda a, b: (_ for _ in ()).throw(OSError("injected")))
    with pytest.raises(OSError):
        write_atomic(target, b"new bytes")
    assert target.read_bytes() == b"old"
    assert os.listdir(tmp_path) == ["keep.mdl"]
