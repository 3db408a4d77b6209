"""SMD mapping without Blender: the corner merge rule, plain meshes, animations with held bones, VTA shapes
through the corner map or by position, and Scene → SMD giving the files back."""
from __future__ import annotations

import pathlib

import numpy as np
import pytest

from skinbridge.core import model as cm
from skinbridge.core.errors import FormatError
from skinbridge.io_smd.smd import check
from skinbridge.io_smd.smd import convert
from skinbridge.io_smd.smd import smd

SMD_DIR = pathlib.Path(__file__).resolve().parents[2].parent / "shared" / "testdata" / "smd"
REFS = ["bst_Cube_Armature_ref.smd", "bst_Cube_Armature_GoldSource_ref.smd", "bst_Cube_NoArmature_ref.smd",
        "bst_Curve_Armature_BezierCurve_ref.smd", "bst_Overlapping_DifferentWeights.smd"]


def _load(name):
    path = SMD_DIR / name
    return convert.load(str(path), path.read_bytes())


def _mapped(name):
    return convert.to_scene(smd.read((SMD_DIR / name).read_bytes()), name)


@pytest.mark.parametrize("name,vertices", zip(REFS, [8, 8, 8, 26, 6]))
def test_corners_merge_on_position_and_links(name, vertices):
    scene, warnings = _mapped(name)
    assert warnings == []
    m = scene.meshes[0]
    assert m.vertex_count == vertices
    f = smd.read((SMD_DIR / name).read_bytes())
    corner_vertex = m.extras["smd"]["corner_vertex"]
    assert np.array_equal(m.positions[corner_vertex], f.triangles.positions.astype(np.float32))


def test_merge_corners_equals_a_dictionary_of_rows():
    """Many corners over few distinct rows (a small table: buckets shared by different rows), -0.0 beside 0.0:
    the same vertices, numbered in order of first appearance, as a dictionary keyed by each row's tuple."""
    rng = np.random.default_rng(3)
    pool_pos = rng.integers(-2, 3, (300, 3)).astype(np.float64) * 0.5  # many zeros, to be signed below
    pool_bones = rng.integers(-1, 4, (300, 2))
    pool_weights = rng.integers(0, 3, (300, 2)) / 2
    pick = rng.integers(0, 300, 5000)
    positions, bones, weights = pool_pos[pick].copy(), pool_bones[pick], pool_weights[pick].copy()
    negative_zero = (positions == 0) & (rng.random(positions.shape) < 0.5)
    positions[negative_zero] = -0.0
    first, vertex_of = convert.merge_corners(positions, bones, weights)
    seen: dict = {}
    want_vertex = [seen.setdefault((*positions[c].tolist(), *bones[c].tolist(), *weights[c].tolist()), len(seen))
                   for c in range(5000)]  # -0.0 == 0.0 in a tuple comparison and hash
    assert vertex_of.tolist() == want_vertex
    assert first.tolist() == [want_vertex.index(v) for v in range(len(seen))]
    assert len(seen) < 300 and np.signbit(positions).any()


def test_load_splits_vertices_per_normal_and_uv():
    scene, _ = _load("bst_Cube_Armature_ref.smd")
    m = scene.meshes[0]
    assert m.vertex_count == 24  # four corners per face of the cube, one normal each
    f = smd.read((SMD_DIR / "bst_Cube_Armature_ref.smd").read_bytes())
    corners = m.triangles.reshape(-1)
    assert np.array_equal(m.normals[corners], f.triangles.normals.astype(np.float32))
    assert np.array_equal(m.uvs[0][1][corners], f.triangles.uvs.astype(np.float32))


def test_plain_mesh_has_no_armature():
    scene, _ = _mapped("bst_Cube_NoArmature_ref.smd")
    assert scene.skeleton is None and scene.meshes[0].weights is None
    scene, _ = _mapped("bst_Cube_Armature_ref.smd")
    assert scene.skeleton.names == ["blender_implicit", "Bone"]
    assert np.allclose(scene.skeleton.bones[1].bind[:3, :3], [[1, 0, 0], [0, 0, -1], [0, 1, 0]], atol=1e-6)


def test_links_are_kept_as_written():
    text = (b"version 1\nnodes\n0 \"a\" -1\n1 \"b\" 0\nend\nskeleton\ntime 0\n0 0 0 0 0 0 0\n1 0 0 1 0 0 0\nend\n"
            b"triangles\nm\n0 0 0 0 0 0 1 0 0 2 0 0.02 1 0.5\n0 1 0 0 0 0 1 0 0 1 1 1.0\n0 0 1 0 0 0 1 0 0 0\nend\n")
    scene, _ = convert.to_scene(smd.read(text), "t")
    m = scene.meshes[0]
    assert m.weights[0].tolist()[:2] == pytest.approx([0.02, 0.5]) and m.joints[0].tolist()[:2] == [0, 1]
    assert m.weights[2, 0] == 1.0 and m.joints[2, 0] == 0  # count 0: the parent bone


def test_bad_ids_and_cycles_are_refused_on_import():
    text = (b"version 1\nnodes\n0 \"a\" 1\n1 \"b\" 0\nend\nskeleton\ntime 0\n0 0 0 0 0 0 0\nend\n")
    with pytest.raises(FormatError, match="line 3: .*cycle|line 4: .*cycle"):
        convert.to_scene(smd.read(text), "t")
    text = (b"version 1\nnodes\n0 \"a\" -1\nend\nskeleton\ntime 0\n0 0 0 0 0 0 0\nend\ntriangles\nm\n"
            b"0 0 0 0 0 0 1 0 0 1 4 1\n0 0 0 0 0 0 1 0 0\n0 0 0 0 0 0 1 0 0\nend\n")
    with pytest.raises(FormatError, match="line 11: link bone 4"):
        convert.to_scene(smd.read(text), "t")


def test_animation_holds_missing_bones():
    text = (b"version 1\nnodes\n0 \"a\" -1\n1 \"b\" 0\nend\nskeleton\ntime 0\n0 0 0 0 0 0 0\n1 1 0 0 0 0 0\n"
            b"time 1\n0 5 0 0 0 0 0\ntime 2\n1 3 0 0 0 0 0\nend\n")
    scene, _ = convert.to_scene(smd.read(text), "walk")
    a, b = scene.animations[0].tracks
    assert a.translations[:, 0].tolist() == [0, 5, 5] and b.translations[:, 0].tolist() == [1, 1, 3]
    assert scene.skeleton is None


def test_anim_file_frames():
    scene, _ = _load("bst_ActionFilter_X_Axis_anim.smd")
    anim = scene.animations[0]
    assert [t.bone for t in anim.tracks] == ["blender_implicit", "Bone"]
    assert anim.tracks[1].translations[:, 0].tolist() == [0, 1, 2]
    assert np.allclose(anim.tracks[1].rotation_times * convert.FPS, [0, 1, 2])


def test_vta_shapes_by_corner_map_and_by_position():
    ref = smd.read((SMD_DIR / "bst_Cube_NoArmature_ref.smd").read_bytes())
    vta = smd.read((SMD_DIR / "bst_Cube_NoArmature_flex.vta").read_bytes())
    scene, _ = convert.to_scene(ref, "c")
    m = scene.meshes[0]
    by_map = convert.flex_shapes(vta, m.positions.astype(np.float64), m.extras["smd"]["corner_vertex"])
    by_pos = convert.flex_shapes(vta, m.positions.astype(np.float64), None)
    assert [s.name for s in by_map] == ["Key 1"]
    moved = np.flatnonzero(np.abs(by_map[0].positions - m.positions).max(1) > 0)
    assert len(moved) == 4 and np.all(by_map[0].positions[moved, 2] == 2.0)
    assert np.array_equal(by_map[0].positions, by_pos[0].positions)
    bad = (SMD_DIR / "bst_Cube_NoArmature_flex.vta").read_bytes().replace(b"35 -1.000000 1.000000 1.000000",
                                                                         b"35 -7.000000 1.000000 1.000000", 1)
    with pytest.raises(FormatError, match="line 46: .*matches no vertex"):
        convert.flex_shapes(smd.read(bad), m.positions.astype(np.float64), None)


@pytest.mark.parametrize("name", REFS)
def test_scene_back_to_the_same_file(name):
    data = (SMD_DIR / name).read_bytes()
    f = smd.read(data)
    scene, _ = convert.to_scene(f, "x")
    warnings: list[str] = []
    out = convert.reference_of(scene, warnings, f.newline, f.goldsrc)
    assert check.token_difference(data, smd.write(out)) is None


def test_vta_written_in_corner_order():
    ref = smd.read((SMD_DIR / "bst_Cube_NoArmature_ref.smd").read_bytes())
    data = (SMD_DIR / "bst_Cube_NoArmature_flex.vta").read_bytes()
    scene, _ = convert.to_scene(ref, "c")
    m = scene.meshes[0]
    shapes = convert.flex_shapes(smd.read(data), m.positions.astype(np.float64), m.extras["smd"]["corner_vertex"])
    corners = m.extras["smd"]["corner_vertex"]
    out = convert.vta_of(ref, [(s.name, s.positions[corners]) for s in shapes])
    assert smd.write(out) == data


def test_euler_round_trip():
    rng = np.random.default_rng(1)
    e = rng.uniform(-3, 3, (500, 3))
    e[:, 1] = rng.uniform(-1.5, 1.5, 500)
    m = convert.euler_to_matrix3(e)
    assert np.allclose(convert.euler_to_matrix3(convert.matrix3_to_euler(m)), m, atol=1e-12)
    x = convert.euler_to_matrix3(np.array([1.570796, 0, 0]))
    assert np.allclose(x, [[1, 0, 0], [0, 0, -1], [0, 1, 0]], atol=1e-6)


def test_keys_between_whole_frames_are_named_once():
    def anim(times):
        times = np.asarray(times, np.float64)
        rot = np.tile([1.0, 0, 0, 0], (len(times), 1))
        return cm.Animation("Run", float(times[-1]), [cm.Track("b", rotation_times=times, rotations=rot)])

    assert convert.off_frame_warning(anim(np.arange(28) / 24), 24.0) is None
    warned = convert.off_frame_warning(anim(np.r_[np.arange(17), np.arange(8) + 20.8] / 24), 24.0)
    assert warned is not None and "'Run': 8 key times" in warned and "frame 20.8" in warned, warned
    assert convert.off_frame_warning(anim(np.r_[np.arange(17), np.arange(8) + 20.8] / 24), 120.0) is None
