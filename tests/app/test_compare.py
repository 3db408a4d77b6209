"""`skinbridge compare` and core/compare.py."""
from __future__ import annotations

import shutil
import struct

import numpy as np
import pytest

from skinbridge import formats

from conftest import run_cli
from skinbridge.core import model as cm
from skinbridge.core.compare import compare_scenes, nearest_distances
from skinbridge.core.transforms import quat_multiply
from support.umd2_offsets import fox_layout


def test_nearest_distances_match_brute_force():
    rng = np.random.default_rng(3)
    p = rng.normal(size=(400, 3))
    q = np.concatenate([p[:300] + rng.normal(scale=1e-3, size=(300, 3)), rng.normal(size=(50, 3))])
    brute = np.sqrt(((p[:, None] - q[None]) ** 2).sum(axis=2)).min(axis=1)
    got = nearest_distances(p, q, 0.05)
    near = brute <= 0.05
    np.testing.assert_allclose(got[near], brute[near], rtol=0, atol=1e-12)
    assert np.isinf(got[~near]).all()


def _tiny_scene(angle: float = 0.0) -> cm.Scene:
    """Two bones and a quad; one animation turning the child about Z by 0 → 1 rad (+ `angle` at the end)."""
    eye = np.eye(4)
    child = np.eye(4)
    child[2, 3] = 1.0
    skel = cm.Skeleton(bones=[cm.Bone("root", -1, eye, np.zeros(3), np.array([1.0, 0, 0, 0]), np.ones(3)),
                              cm.Bone("child", 0, child, np.array([0, 0, 1.0]), np.array([1.0, 0, 0, 0]),
                                      np.ones(3))])
    mesh = cm.Mesh("quad", np.array([[0, 0, 0], [1, 0, 0], [1, 0, 2], [0, 0, 2]], np.float32),
                   np.array([[0, 1, 2], [0, 2, 3]], np.int32))

    def about_z(a):
        return np.array([np.cos(a / 2), 0, 0, np.sin(a / 2)])

    rot = np.array([about_z(0.0), quat_multiply(about_z(angle), about_z(1.0))])
    track = cm.Track("child", rotation_times=np.array([0.0, 1.0]), rotations=rot)
    return cm.Scene(skeleton=skel, meshes=[mesh], animations=[cm.Animation("Turn", 1.0, [track])])


def test_core_compare_reports_a_turned_key_and_ignores_it_at_rest():
    same = compare_scenes(_tiny_scene(), _tiny_scene())
    assert same.same, same.lines()
    turned = compare_scenes(_tiny_scene(), _tiny_scene(0.01))
    [d] = turned.differences
    assert (d.part, d.element, d.field) == ("animation", "animation Turn bone child", "pose rotation")
    assert d.value == pytest.approx(0.01, rel=1e-6)
    assert compare_scenes(_tiny_scene(), _tiny_scene(0.01), rest=True).same


def _split_quad(extra: np.ndarray) -> cm.Scene:
    """The tiny scene's quad with its vertex 2 written twice (a split by a corner attribute: the second copy
    gets the normal of `extra`), the second triangle using the copy; `extra` also moves the copy by its z."""
    scene = _tiny_scene()
    m = scene.meshes[0]
    m.normals = np.tile(np.array([[0, -1, 0]], np.float32), (4, 1))
    copy = m.positions[2] + np.array([0, 0, extra[3]], np.float32)
    m.positions = np.vstack([m.positions, copy[None]]).astype(np.float32)
    m.normals = np.vstack([m.normals, extra[None, :3]]).astype(np.float32)
    m.triangles = np.array([[0, 1, 2], [0, 4, 3]], np.int32)
    return scene


def test_vertex_count_merges_duplicates_by_position_and_links():
    split = _split_quad(np.array([0, -1, 1e-7, 0]))  # the normal a rounding away, as a 6-decimal file loses it
    result = compare_scenes(_tiny_scene(), split, rest=True)
    assert result.same, result.lines()
    assert any("before merging A 4, B 5" in n for n in result.notes), result.notes
    moved = compare_scenes(_tiny_scene(), _split_quad(np.array([0, -1, 0, 1e-3])), rest=True)
    assert ("vertex count", "4 in A, 5 in B") in [(d.field, d.message) for d in moved.differences]


def _compare(*args):
    r = run_cli("compare", *map(str, args))
    diffs = [line for line in r.stdout.splitlines() if line.startswith("difference:")]
    return r, diffs


@pytest.mark.blender
def test_fox_glb_against_our_model_at_rest(testdata, fox_mdl):
    r, diffs = _compare(testdata / "gltf" / "Fox.glb", fox_mdl.parent, "--rest")
    assert r.returncode == 0 and diffs == [], r.stdout + r.stderr
    assert "result: same within the tolerances" in r.stdout
    assert "skeleton: 24 bones in A, 24 in B, 24 by the same name" in r.stdout


@pytest.mark.blender
def test_a_moved_bone_is_reported_by_name_and_distance(fox_mdl, tmp_path):
    data = fox_mdl.read_bytes()
    lay = fox_layout(data)
    name, _, parent_at = lay["bones"][6]
    offset_at = parent_at + 4 + 40  # after parent, initial position, rotation and scale: the 3×4 offset matrix
    offset = np.array(struct.unpack_from("<12f", data, offset_at), np.float64).reshape(3, 4)
    # move the bone's bind head by v (file axes): offset' = offset · T(−v), i.e. t' = t − R·v
    v = np.array([3.0, -4.0, 12.0])  # |v| = 13
    moved = offset.copy()
    moved[:, 3] -= offset[:, :3] @ v
    copy = bytearray(data)
    struct.pack_into("<12f", copy, offset_at, *moved.astype(np.float32).ravel())
    (tmp_path / "moved.mdl").write_bytes(bytes(copy))
    r, diffs = _compare(fox_mdl, tmp_path / "moved.mdl", "--rest")
    assert r.returncode == 1, r.stdout + r.stderr
    [line] = diffs
    assert line.startswith(f"difference: skeleton: bone {name}: rest head: moved by 13 ")


def _pmx_target():
    bpy = pytest.importorskip("bpy")
    from skinbridge.app import pipeline

    return bpy, pipeline


@pytest.mark.blender
def test_fox_pmx_at_rest_and_while_walk_plays_at_frame_10(clean_scene, testdata, tmp_path):
    """The regression routine of docs/mmd.md §5.7 (item 1): export the same character while a motion plays and at
    rest; the rest skeletons must not differ."""
    bpy, pipeline = _pmx_target()
    from skinbridge.app.options import ConvertOptions

    written = {}
    for tag, frame in (("rest", None), ("walk10", 10)):
        pipeline.reset_scene()
        formats.get("gltf").get("blender_import")(bpy.context, str(testdata / "gltf" / "Fox.glb"),
                                                  ConvertOptions(target="pmx"))
        if frame is not None:
            arm = next(o for o in bpy.context.scene.objects if o.type == "ARMATURE")
            arm.animation_data.action = bpy.data.actions["Walk"]
            bpy.context.scene.frame_set(frame)
        paths, _ = formats.targets()["pmx"].get("export_target")(bpy.context, str(tmp_path / tag), "Fox",
                                                                 ConvertOptions(target="pmx"))
        written[tag] = paths[0]
    r, diffs = _compare(written["rest"], written["walk10"], "--rest")
    assert r.returncode == 0 and diffs == [], r.stdout + r.stderr


@pytest.mark.blender
@pytest.mark.slow
def test_fox_glb_against_our_model_with_its_animations(clean_scene, testdata, fox_mdl, tmp_path):
    """B as a folder of outputs: the model with its Animations/ (written here with the UANI exporter when the
    converted folder has none)."""
    folder = fox_mdl.parent
    if not (folder / "Animations").is_dir():
        import bpy

        from skinbridge.app.options import ConvertOptions

        from skinbridge.io_urhox.motion import blender_io as motion_io
        folder = tmp_path / "out"
        folder.mkdir()
        shutil.copy(fox_mdl, folder / "Fox.mdl")
        formats.get("gltf").get("blender_import")(bpy.context, str(testdata / "gltf" / "Fox.glb"), ConvertOptions())
        arm = next(o for o in bpy.context.scene.objects if o.type == "ARMATURE")
        motion_io.export_actions(bpy.context, str(folder), arm)
    assert sorted(p.name for p in (folder / "Animations").glob("*.ani")) == ["Run.ani", "Survey.ani", "Walk.ani"]
    r, diffs = _compare(testdata / "gltf" / "Fox.glb", folder)
    assert r.returncode == 0 and diffs == [], r.stdout + r.stderr
    assert "animations: 3 in A, 3 in B, 3 by name" in r.stdout
