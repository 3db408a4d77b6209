"""What `convert` keeps on the way into a Wallpaper Engine model from a core Scene: a material per mesh (a mesh
with several is split, with a warning), distinct clip ids, and each clip's own frame rate."""
from __future__ import annotations

import copy

import numpy as np

from skinbridge.core import model as cm
from skinbridge.io_wepuppet.puppet import convert

from support import wepuppet as ws


def _foreign(scene: cm.Scene) -> cm.Scene:
    """The scene as another format would give it: none of the Wallpaper Engine extras."""
    out = copy.deepcopy(scene)
    out.extras.clear()
    for thing in out.meshes + out.materials + out.animations + out.skeleton.bones:
        thing.extras.pop(convert.KEY, None)
    for thing in out.meshes + out.animations:
        thing.extras.clear()
    return out


def test_a_mesh_with_two_materials_becomes_two_meshes_each_with_its_own():
    scene = _foreign(ws.built_puppet()[0])
    scene.materials = [cm.Material(name="skin"), cm.Material(name="cloth")]
    mesh = scene.meshes[0]
    mesh.materials = [0, 1]
    mesh.material_indices = (np.arange(len(mesh.triangles)) >= 2).astype(np.int32)
    model, warnings = convert.from_scene(scene)
    assert [m.materials for m in model.meshes] == [["materials/skin.json"], ["materials/cloth.json"]]
    assert [len(m.indices) for m in model.meshes] == [6, 3 * (len(mesh.triangles) - 2)]
    assert sum(len(m.vertices) for m in model.meshes) == len(mesh.positions)
    assert any("2 materials, written as 2 meshes" in w for w in warnings)
    first = model.meshes[0]
    assert np.allclose(first.vertices["position"][first.indices.astype(int)].reshape(-1, 3),
                       mesh.positions[mesh.triangles[:2].reshape(-1)] @ (convert.AXES / 0.01), atol=1e-3)


def test_clips_from_another_format_get_distinct_ids_and_keep_their_rate():
    scene = _foreign(ws.built_puppet(samples=16)[0])
    anim = scene.animations[0]
    thirty = copy.deepcopy(anim)
    thirty.name = "Thirty"
    for t in thirty.tracks:  # the same 16 keys, 1/30 s apart
        t.translation_times = t.rotation_times = t.scale_times = np.arange(16) / 30.0
    thirty.length = 15 / 30.0
    scene.animations.append(thirty)
    model, warnings = convert.from_scene(scene, fps=24.0)
    clips = model.animations.clips
    assert [c.id for c in clips] == [1, 2]
    assert [float(c.fps) for c in clips] == [12.0, 30.0] and [c.length for c in clips] == [15, 15]
    assert not any("frame rate" in w for w in warnings)


def test_a_kept_id_stays_and_new_clips_take_others():
    scene = ws.built_puppet()[0]
    extra = _foreign(scene).animations[0]
    extra.name = "Other"
    scene.animations.append(extra)
    clips = convert.from_scene(scene)[0].animations.clips
    assert [c.id for c in clips] == [77, 78]


def test_clips_on_no_rate_are_sampled_at_the_default_rate_with_one_warning():
    scene = _foreign(ws.built_puppet()[0])
    for k in range(2):
        anim = copy.deepcopy(scene.animations[0])
        anim.name = f"uneven{k}"
        for t in anim.tracks:
            t.translation_times = t.rotation_times = t.scale_times = np.sqrt(np.arange(9)) / 7.0
        scene.animations.append(anim)
    model, warnings = convert.from_scene(scene, fps=24.0)
    assert [float(c.fps) for c in model.animations.clips] == [12.0, 24.0, 24.0]
    assert sum("frame rate" in w for w in warnings) == 1
