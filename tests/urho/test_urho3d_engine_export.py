"""In Blender: a model imported and exported under `--profile urho3d` keeps the file's own values (each bone's
initial transform and offset matrix, the vertex elements, the geometry centres) while they are unchanged, and
a bind with a little residue maps its animation without a warning and as the engine plays it."""
from __future__ import annotations

import numpy as np
import pytest
from conftest import run_cli

from support.evaluation import evaluated_positions
from support.urho_engine import Engine, diagonal, urho3d_to_blender

pytestmark = pytest.mark.blender


def _quat(axis, angle) -> np.ndarray:
    axis = np.asarray(axis, np.float64) / np.linalg.norm(axis)
    return np.concatenate([[np.cos(angle / 2)], np.sin(angle / 2) * axis])


def _qmul(a, b) -> np.ndarray:
    aw, ax, ay, az = a
    bw, bx, by, bz = b
    return np.array([aw * bw - ax * bx - ay * by - az * bz, aw * bx + ax * bw + ay * bz - az * by,
                     aw * by - ax * bz + ay * bw + az * bx, aw * bz + ax * by - ay * bx + az * bw])


def _ninja_with_moved_initials(testdata, tmp_path):
    """Ninja as a UMDL whose initial pose is not its bind pose: one bone at initial scale 0.01, one turned
    0.45 rad more, one moved; returns (path, the bone indices changed)."""
    from skinbridge.io_urhox.model import umd2

    model = umd2.read((testdata / "urho3d" / "Ninja.mdl").read_bytes())
    assert model.magic == "UMDL"
    parents = [b.parent for b in model.bones]
    leaf = next(i for i in range(len(model.bones)) if i not in parents and model.bones[i].parent != i)
    turned = model.bones[leaf].parent
    moved = model.bones[turned].parent
    model.bones[leaf].scale = np.full(3, 0.01, np.float32)
    model.bones[turned].rotation = _qmul(model.bones[turned].rotation.astype(np.float64),
                                         _quat([0.3, 1.0, 0.2], 0.45)).astype(np.float32)
    model.bones[moved].position = (model.bones[moved].position + np.float32(0.049)).astype(np.float32)
    path = tmp_path / "NinjaPosed.mdl"
    path.write_bytes(umd2.write(model))
    return path, (leaf, turned, moved)


def _import_export(path, out):
    import bpy
    from skinbridge.io_urhox.model import blender_io

    bpy.ops.wm.read_factory_settings(use_empty=True)
    blender_io.import_mdl(bpy.context, str(path), "auto")
    blender_io.export_mdl(bpy.context, str(out), "urho3d")


def _assert_file_values_kept(original, written):
    from skinbridge.io_urhox.model import umd2

    a = umd2.read(original.read_bytes())
    b = umd2.read(written.read_bytes())
    assert [x.name for x in a.bones] == [x.name for x in b.bones]
    for x, y in zip(a.bones, b.bones):
        for field in ("position", "rotation", "scale", "offset"):
            assert np.asarray(getattr(x, field)).tobytes() == np.asarray(getattr(y, field)).tobytes(), (x.name, field)
    assert [e.descriptor for e in a.vertex_buffers[0].elements] == [e.descriptor for e in b.vertex_buffers[0].elements]
    n = len(a.geometries)
    assert len(b.centers) == n
    assert np.asarray(a.centers[:n], np.float32).tobytes() == np.asarray(b.centers, np.float32).tobytes()


def test_initial_pose_elements_and_centres_come_back(clean_scene, testdata, tmp_path):
    from skinbridge.io_urhox.model import umd2

    path, changed = _ninja_with_moved_initials(testdata, tmp_path)
    out = tmp_path / "out.mdl"
    _import_export(path, out)
    _assert_file_values_kept(path, out)
    b = umd2.read(out.read_bytes())
    assert np.allclose(b.bones[changed[0]].scale, 0.01)  # not the bind's 1.0
    result = run_cli("compare", "--rest", path, out)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Traceback" not in result.stdout + result.stderr


@pytest.mark.parametrize("name", ["Ninja", "Mushroom", "Kachujin"])
def test_real_models_keep_their_values(clean_scene, testdata, tmp_path, name):
    path = testdata / "urho3d" / f"{name}.mdl"
    out = tmp_path / f"{name}.mdl"
    _import_export(path, out)
    _assert_file_values_kept(path, out)
    result = run_cli("compare", "--rest", path, out)
    assert result.returncode == 0, result.stdout + result.stderr


def test_an_edited_mesh_keeps_the_files_centres(clean_scene, testdata, tmp_path):
    """A moved vertex is the edit; the geometry centres (a hint for sorting by distance) stay the file's, so
    that nothing else changes (issue 46)."""
    import bpy
    from skinbridge.io_urhox.model import blender_io, umd2

    path = testdata / "urho3d" / "Ninja.mdl"
    result = blender_io.import_mdl(bpy.context, str(path), "auto")
    mesh = next(o for o in result.objects if o.type == "MESH")
    mesh.data.vertices[0].co.x += 0.5
    out = tmp_path / "edited.mdl"
    blender_io.export_mdl(bpy.context, str(out), "urho3d")
    a = umd2.read(path.read_bytes())
    b = umd2.read(out.read_bytes())
    assert np.asarray(a.centers[:len(a.geometries)], np.float32).tobytes() == np.asarray(b.centers).tobytes()
    assert a.vertex_buffers[0].vertices["POSITION0"][0, 0] != b.vertex_buffers[0].vertices["POSITION0"][0, 0]


def test_a_bind_with_residue_maps_its_animation_without_a_warning(clean_scene, testdata, tmp_path):
    """A leaf bone whose bind carries 2e-5 of off-diagonal residue (no track, no weights) is not named, and
    the mesh deforms as the engine plays the walk."""
    import bpy
    from skinbridge.io_urhox.motion import blender_io as motion_io, uani
    from skinbridge.io_urhox.model import blender_io, umd2

    model = umd2.read((testdata / "urho3d" / "Ninja.mdl").read_bytes())
    walk = uani.read((testdata / "urho3d" / "Ninja_Walk.ani").read_bytes())
    parents = {b.parent for i, b in enumerate(model.bones) if b.parent != i}
    weighted = set(np.unique(model.vertex_buffers[0].vertices["BLENDINDICES0"][
        model.vertex_buffers[0].vertices["BLENDWEIGHTS0"] > 0]).tolist())
    mapping = model.geometries[0].bone_mapping
    if len(mapping):
        weighted = {int(mapping[i]) for i in weighted}
    tracked = {t.name for t in walk.tracks}
    leaf = next(i for i, b in enumerate(model.bones)
                if i not in parents and i not in weighted and b.name not in tracked)
    offset = np.asarray(model.bones[leaf].offset, np.float64).reshape(3, 4).copy()
    bind = np.linalg.inv(np.vstack([offset, [0, 0, 0, 1]]))
    bind[:3, :3] = bind[:3, :3] @ (np.eye(3) + 2e-5 * np.array([[0, 1, 0], [1, 0, 1], [0, 1, 0]]))
    model.bones[leaf].offset = np.linalg.inv(bind)[:3, :].reshape(-1).astype(np.float32)
    path = tmp_path / "Residue.mdl"
    path.write_bytes(umd2.write(model))

    result = blender_io.import_mdl(bpy.context, str(path), "auto")
    mesh = next(o for o in result.objects if o.type == "MESH")
    _, warnings = motion_io.import_ani(bpy.context, [str(testdata / "urho3d" / "Ninja_Walk.ani")],
                                         result.armature, "urho3d")
    assert not any(model.bones[leaf].name in w for w in warnings), warnings
    engine = Engine(model)
    diag = diagonal(engine.positions)
    fps = bpy.context.scene.render.fps / bpy.context.scene.render.fps_base
    worst = 0.0
    for t in (np.arange(8) + 0.37) * float(walk.length) / 8:
        got = evaluated_positions(mesh, float(t), fps)
        worst = max(worst, float(np.abs(got - urho3d_to_blender(engine.skin(walk, t))).max()) / diag)
    assert worst <= 1e-5, worst


def test_the_default_pose_is_the_files_initial_pose(clean_scene, testdata, tmp_path):
    """Without an animation Blender shows the file's initial pose (scale 0.01, a turn, a move) as the engine
    does: skin = initial world · offset."""
    import bpy
    from skinbridge.io_urhox.model import blender_io, umd2

    path, _ = _ninja_with_moved_initials(testdata, tmp_path)
    result = blender_io.import_mdl(bpy.context, str(path), "auto")
    mesh = next(o for o in result.objects if o.type == "MESH")
    engine = Engine(umd2.read(path.read_bytes()))
    expected = urho3d_to_blender(engine.skin(None, 0.0))
    assert np.abs(expected - urho3d_to_blender(engine.positions)).max() > 0.01  # the pose is not the bind
    got = evaluated_positions(mesh, 0.0, bpy.context.scene.render.fps)
    assert np.abs(got - expected).max() <= 1e-5 * diagonal(engine.positions)
