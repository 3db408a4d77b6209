"""`convert --to wepuppet` writes project.json and scene.json beside the model: the layer of a puppet and of a
static model carries exactly the keys the layers of that type have in BlacRyu's public projects (the sets below
are copied from those files as docs/wallpaper_engine.md §7 lists them), and the project imports back with the
puppet at the scene's centre playing its clips as NLA tracks."""
from __future__ import annotations

import json

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from skinbridge.io_wepuppet.project import blender_io as blender_project  # noqa: E402
from skinbridge.io_wepuppet.puppet import blender_io, mdl  # noqa: E402
from skinbridge.io_wepuppet.texture import tex  # noqa: E402

pytestmark = pytest.mark.blender

# BlacRyu/Wallpaper-Engine-Assets-and-Effects scene.json, the goose_t layer (an image whose model JSON names a
# puppet), and BlacRyu/PS2-Menu-Wallpaper-Engine scene.json, the prism layers (models)
PUBLIC_PUPPET_KEYS = {"alignment", "alpha", "angles", "brightness", "color", "colorBlendMode", "copybackground", "id",
                      "image", "ledsource", "locktransforms", "name", "origin", "parallaxDepth", "perspective",
                      "scale", "size", "solid", "visible"}
PUBLIC_MODEL_KEYS = {"angles", "id", "locktransforms", "model", "name", "origin", "parallaxDepth", "perspective",
                     "scale"}
# the keys of an animation layer catsout's and CaptSilver's scene readers take (docs §7)
ANIMATION_LAYER_KEYS = {"additive", "animation", "blend", "blendin", "blendout", "id", "name", "rate", "visible"}
# the keys of the Assets-and-Effects project.json but its Workshop `visibility`
PUBLIC_PROJECT_KEYS = {"contentrating", "description", "file", "general", "preview", "tags", "title", "type",
                       "version"}


def test_a_converted_puppet_comes_with_a_project_whose_layer_has_the_public_keys(clean_scene, testdata, tmp_path):
    path = testdata / "wepuppet" / "blacryu_d2r_Hood_puppet.mdl"
    m = mdl.read(path.read_bytes())
    blender_io.import_wepuppet(bpy.context, str(path))
    written, _ = blender_io.export_target(bpy.context, str(tmp_path), "Hood", None)
    assert str(tmp_path / "project.json") in written and str(tmp_path / "scene.json") in written
    project = json.loads((tmp_path / "project.json").read_bytes())
    scene = json.loads((tmp_path / "scene.json").read_bytes())
    assert set(project) == PUBLIC_PROJECT_KEYS and project["file"] == "scene.json" and project["type"] == "scene"
    (layer,) = scene["objects"]
    assert set(layer) - {"animationlayers"} == PUBLIC_PUPPET_KEYS
    assert layer["image"] == "models/Hood.json" and (tmp_path / "models" / "Hood.json").is_file()
    assert [(a["animation"], a["name"], a["visible"]) for a in layer["animationlayers"]] == \
        [(c.id, c.name, k == 0) for k, c in enumerate(m.animations.clips)]
    assert all(set(a) == ANIMATION_LAYER_KEYS for a in layer["animationlayers"])
    assert not (tmp_path / "materials" / "Hood.tex").exists()  # no image came in: sized as its mesh
    reach = np.abs(np.asarray(m.meshes[0].vertices["position"], np.float64)).max(axis=0)
    assert layer["size"] == f"{np.ceil(2 * reach[0]):.5f} {np.ceil(2 * reach[1]):.5f}"
    assert scene["general"]["orthogonalprojection"] == {"height": 1080, "width": 1920}

    bpy.ops.wm.read_factory_settings(use_empty=True)
    result = blender_project.import_project(bpy.context, str(tmp_path / "project.json"))
    (arm,) = result.layers
    assert arm.type == "ARMATURE" and np.allclose(np.array(arm.matrix_world)[:3, 3], [9.6, 0, 5.4], atol=1e-6)
    tracks = arm.animation_data.nla_tracks
    assert [t.name for t in tracks] == [c.name for c in m.animations.clips] and [t.mute for t in tracks] == \
        [False, True]


def test_a_converted_puppet_with_a_texture_is_sized_as_its_image(clean_scene, testdata, tmp_path):
    blender_io.import_wepuppet(bpy.context, str(testdata / "wepuppet" / "blacryu_goose_t_puppet.mdl"))
    blender_io.export_target(bpy.context, str(tmp_path), "goose_t", None)
    (layer,) = json.loads((tmp_path / "scene.json").read_bytes())["objects"]
    t = tex.read((testdata / "wepuppet" / "blacryu_goose_t.tex").read_bytes())
    assert (t.image_width, t.image_height) == (150, 150)
    assert layer["size"] == "150.00000 150.00000" and layer["animationlayers"][0]["animation"] == 459


def test_a_converted_static_model_is_a_model_layer_with_the_public_keys(clean_scene, testdata, tmp_path):
    blender_io.import_wepuppet(bpy.context, str(testdata / "wepuppet" / "blacryu_Arwing_static.mdl"))
    blender_io.export_target(bpy.context, str(tmp_path), "Arwing", None)
    (layer,) = json.loads((tmp_path / "scene.json").read_bytes())["objects"]
    assert set(layer) == PUBLIC_MODEL_KEYS and layer["model"] == "models/Arwing_puppet.mdl"
    assert (tmp_path / layer["model"]).is_file()
