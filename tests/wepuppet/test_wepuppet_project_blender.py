"""Wallpaper Engine projects through Blender: a project our writer makes (an image with its texture, an image
parented to it, BlacRyu's goose puppet, a static model, a particle system and an effect kept as data) imports
with the camera over the scene's size and one object per layer whose world matrix is the test's own reading of
scene.json, mapped to Blender as puppet pixels are: (x, y, z) → 0.01 · (x, −z, y)."""
from __future__ import annotations

import json

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from skinbridge.io_wepuppet.project import blender_io as blender_project  # noqa: E402
from skinbridge.io_wepuppet.puppet import project_docs  # noqa: E402

from support import wepuppet as we  # noqa: E402

pytestmark = pytest.mark.blender

METRES_PER_PIXEL = 0.01  # the import's default, written out (not read from the add-on)


def _expected(objects: list[dict], index: int, properties: dict) -> np.ndarray:
    """World matrix in Blender of layer `index`: the parent's, then the layer's own T · Rz · Ry · Rx · S, each
    conjugated by the pixel → Blender map."""
    obj = objects[index]
    local = we.layer_matrix(obj, properties)
    s = METRES_PER_PIXEL
    to_blender = np.diag([s, s, s, 1.0])[:, [0, 2, 1, 3]] * np.array([1, -1, 1, 1])[:, None]
    world = to_blender @ local @ np.linalg.inv(to_blender)
    if "parent" in obj:
        parent = next(i for i, o in enumerate(objects) if o.get("id") == obj["parent"])
        world = _expected(objects, parent, properties) @ world
    return world


def test_project_imports_one_object_per_layer_where_scene_json_places_it(clean_scene, testdata, tmp_path):
    we.make_project(tmp_path, testdata)
    before = set(bpy.data.objects)
    assert bpy.ops.import_scene.skinbridge_weproject(filepath=str(tmp_path / "project.json")) == {"FINISHED"}
    result_objects = set(bpy.data.objects) - before
    layers = [ob for ob in result_objects if blender_project.LAYER_PROP in ob]
    doc = json.loads((tmp_path / "scene.json").read_bytes())
    props = json.loads((tmp_path / "project.json").read_bytes())["general"]["properties"]
    by_name = {json.loads(ob[blender_project.LAYER_PROP])["name"]: ob for ob in layers}
    assert sorted(by_name) == sorted(o["name"] for o in doc["objects"]) and len(layers) == len(doc["objects"])
    for i, obj in enumerate(doc["objects"]):
        world = np.array(by_name[obj["name"]].matrix_world, np.float64)
        expected = _expected(doc["objects"], i, props)
        # layer i is brought i steps towards the camera (−Y), the steps spanning 1e-3 of the scene's width
        expected[1, 3] -= i * 1e-3 / len(doc["objects"]) * 19.2
        assert np.allclose(world, expected, rtol=0, atol=1e-5), obj["name"]
    sky, goose, arwing, snow = (by_name[n] for n in ("sky", "goose", "arwing", "snow"))
    assert sky.type == "MESH" and sky.dimensions.x == pytest.approx(19.2 * 2) and \
        sky.dimensions.z == pytest.approx(10.8 * 1.5)
    image = next(n.image for n in sky.active_material.node_tree.nodes if n.type == "TEX_IMAGE")
    assert tuple(image.size) == (8, 4)
    assert goose.type == "ARMATURE" and len(goose.data.bones) > 1
    assert any(ob.type == "MESH" and ob.parent == goose for ob in result_objects)
    walk, hop = goose.animation_data.nla_tracks
    assert goose.animation_data.action is None and (walk.name, hop.name) == ("walk", "hop")
    (ws,), (hs,) = walk.strips, hop.strips
    assert (ws.blend_type, ws.influence, ws.scale, ws.blend_in, walk.mute) == ("REPLACE", 0.5, 1.0,
                                                                              pytest.approx(0.2 * 24), False)
    assert (hs.blend_type, hs.influence, hs.scale, hop.mute) == ("COMBINE", 1.0, 0.5, True)
    bpy.context.scene.frame_set(12)
    assert ws.influence == 0.5  # as evaluated: the influence key holds the weight
    assert arwing.type == "EMPTY" and len([c for c in arwing.children if c.type == "MESH"]) == 15
    assert snow.type == "EMPTY" and json.loads(snow[blender_project.LAYER_PROP])["instanceoverride"] == {"rate": 2}
    cam = bpy.context.scene.camera
    assert cam.data.type == "ORTHO" and cam.data.ortho_scale == pytest.approx(19.2)
    assert np.allclose(np.array(cam.matrix_world)[:3, 2], [0, -1, 0], atol=1e-6)  # looks along +Y at the layers
    assert (bpy.context.scene.render.resolution_x, bpy.context.scene.render.resolution_y) == (1920, 1080)
    coll = sky.users_collection[0]
    assert bytes(coll[blender_project.SCENE_PROP]) == (tmp_path / "scene.json").read_bytes()


def test_the_camera_frames_the_scene_wherever_a_2d_scene_puts_its_eye(clean_scene, tmp_path):
    doc = project_docs.scene_doc(512, 256, [])
    doc["camera"] = {"center": "0.000 0.000 -1.000", "eye": "0.000 0.000 0.000", "up": "0.000 1.000 0.000"}
    (tmp_path / "scene.json").write_bytes(project_docs.format_json(doc))  # as BlacRyu's Mega Man X scene has it
    cam = blender_project.import_project(bpy.context, str(tmp_path / "scene.json")).camera
    # scene pixel (256, 128, -1) is Blender 0.01 · (256, 1, 128); the camera stands 0.01 · 512 in front of it
    assert np.allclose(np.array(cam.matrix_world)[:3, 3], [2.56, 0.01 - 5.12, 1.28], atol=1e-6)
    assert cam.data.ortho_scale == pytest.approx(5.12)


def test_kept_layers_are_listed_in_one_warning_and_a_failure_leaves_nothing(clean_scene, testdata, tmp_path,
                                                                            monkeypatch):
    we.make_project(tmp_path, testdata)
    result = blender_project.import_project(bpy.context, str(tmp_path / "scene.json"))
    kept = [w for w in result.warnings if w.startswith("kept as data")]
    assert len(kept) == 1 and "particle 'snow' (particles/snow.json)" in kept[0] and \
        "effect effects/shake/effect.json on 'badge'" in kept[0]
    assert [ob.name for ob in result.layers][:1] == ["sky"] and result.collection.name == "Goose pond"
    bpy.ops.wm.read_factory_settings(use_empty=True)
    names = {c: set(getattr(bpy.data, c).keys()) for c in ("objects", "meshes", "images", "collections", "cameras")}

    def fail(stage: str) -> None:
        if stage == "done":
            raise RuntimeError("injected")
    monkeypatch.setattr("skinbridge.blender.scene.fail_hook", fail)
    with pytest.raises(RuntimeError, match="injected"):
        blender_project.import_project(bpy.context, str(tmp_path / "project.json"))
    assert {c: set(getattr(bpy.data, c).keys()) for c in names} == names
