"""Wallpaper Engine layers put over what is behind them as their material's `blending` says, seen through the
scene's camera (`render.camera_view`, what `skinbridge render` writes beside the sheet: docs/wallpaper_engine.md
§7); the scripts, effects and particles the import does not draw are named in its warning."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import run_cli
from support.png_decode import decode_png

bpy = pytest.importorskip("bpy")

from skinbridge.app import render  # noqa: E402
from skinbridge.io_wepuppet.project import blender_io as blender_project  # noqa: E402
from skinbridge.io_wepuppet.puppet.project_docs import format_json, layer_doc  # noqa: E402
from skinbridge.io_wepuppet.texture import tex  # noqa: E402

pytestmark = pytest.mark.blender

ALPHA = 153  # the textures' alpha, 0.6 of 255
GREY = ((0.5 + 0.055) / 1.055) ** 2.4  # the clear colour (sRGB 0.5), linear


def _blend_project(folder, modes) -> None:
    """Per mode a 64 × 32 row of the scene (top row first, cleared to mid grey): a blue translucent layer at
    x 8..40 and over it a red layer at x 24..56 whose material blends as the mode says (None: the pass names
    no `blending`), both 32 × 16, at one depth, their textures' alpha 0.6."""
    (folder / "models").mkdir(exist_ok=True)
    (folder / "materials").mkdir(exist_ok=True)
    for name, colour in (("red", (255, 0, 0)), ("blue", (0, 0, 255))):
        rgba = np.zeros((8, 8, 4), np.uint8)
        rgba[..., :3], rgba[..., 3] = colour, ALPHA
        (folder / "materials" / f"{name}.tex").write_bytes(tex.write(tex.from_rgba(rgba)))
    kinds = [("blue", "translucent", "blue")] + [(f"red_{k}", mode, "red") for k, mode in enumerate(modes)]
    for model, mode, texture in kinds:
        blend = {} if mode is None else {"blending": mode}
        (folder / "materials" / f"{model}.json").write_bytes(
            format_json({"passes": [{"shader": "genericimage2", "textures": [texture], **blend}]}))
        (folder / "models" / f"{model}.json").write_bytes(format_json({"material": f"materials/{model}.json"}))
    height = 32 * len(modes)
    objects = []
    for row in range(len(modes)):
        y = height - 16 - 32 * row
        for x, model in ((24, "blue"), (40, f"red_{row}")):
            objects.append(layer_doc("image", f"models/{model}.json", len(objects) + 1, model, (x, y, 0),
                                     size="32 16"))
    doc = {"camera": {"center": "0 0 -1", "eye": "0 0 0", "up": "0 1 0"},
           "general": {"clearcolor": "0.50000 0.50000 0.50000", "clearenabled": True,
                       "orthogonalprojection": {"width": 64, "height": height}},
           "objects": objects}
    (folder / "scene.json").write_bytes(format_json(doc))


def _srgb(linear) -> np.ndarray:
    linear = np.clip(np.asarray(linear, np.float64), 0.0, 1.0)
    return np.where(linear <= 0.0031308, linear * 12.92, 1.055 * linear ** (1 / 2.4) - 0.055) * 255


@pytest.mark.slow
@pytest.mark.default_leg  # one render, on the default leg
def test_each_blending_is_drawn_as_wallpaper_engine_blends_and_an_unknown_one_as_translucent(clean_scene,
                                                                                              tmp_path):
    modes = ("translucent", None, "normal", "additive", "translucent_pa", "screen")
    _blend_project(tmp_path, modes)
    result = blender_project.import_project(bpy.context, str(tmp_path / "scene.json"))
    assert [w for w in result.warnings if "blends" in w] == [
        "image layer 'red_5': its material materials/red_5.json blends 'screen', which is not drawn: drawn "
        "translucent (alpha-blended)"]
    scene = bpy.context.scene
    settings = (scene.render.engine, scene.render.filepath, scene.eevee.taa_render_samples)
    px = render.camera_view(bpy.context).astype(np.float64)
    assert px.shape == (32 * len(modes), 64, 4)
    assert (scene.render.engine, scene.render.filepath, scene.eevee.taa_render_samples) == settings
    assert "Render Result" not in bpy.data.images
    a = ALPHA / 255
    red = np.array([1.0, 0, 0])
    under = np.array([0, 0, a]) + GREY * (1 - a)  # the blue layer over the clear colour, linear light
    # d the colour behind (here the blue layer over grey), c and a the red texture's colour and alpha:
    expect = {"translucent": red * a + under * (1 - a),  # c·a + d·(1 − a)
              None: red * a + under * (1 - a),  # Wallpaper Engine's default: translucent
              "normal": red,  # no blending: c
              "additive": under + red * a,  # c·a + d
              "translucent_pa": red + under * (1 - a),  # c + d·(1 − a), red clipped to 1
              "screen": red * a + under * (1 - a)}  # not drawn as such: translucent
    alone = {"normal": red, "additive": GREY + red * a, "translucent_pa": red + GREY * (1 - a)}
    for row, mode in enumerate(modes):
        y = 16 + 32 * row
        assert np.abs(px[y, 32, :3] - _srgb(expect[mode])).max() <= 3, (mode, px[y, 32])  # over the blue one
        assert np.abs(px[y, 52, :3] - _srgb(alone.get(mode, red * a + GREY * (1 - a)))).max() <= 3, \
            (mode, px[y, 52])  # over the clear colour alone
        assert np.abs(px[y, 2, :3] - _srgb(np.full(3, GREY))).max() <= 2  # outside the layers


def test_scripts_effects_and_particles_are_named_as_not_drawn(clean_scene, tmp_path):
    _blend_project(tmp_path, ("translucent",))
    path = tmp_path / "scene.json"
    doc = __import__("json").loads(path.read_bytes())
    doc["objects"][0]["visible"] = {"script": "export function update(value) { return value; }", "value": True}
    doc["objects"][1]["effects"] = [{"file": "effects/shake/effect.json", "passes": []}]
    doc["objects"].append(layer_doc("particle", "particles/snow.json", 9, "snow", (0, 0, 0)))
    path.write_bytes(format_json(doc))
    result = blender_project.import_project(bpy.context, str(path))
    assert [w for w in result.warnings if w.startswith("kept as data")] == [
        "kept as data, not shown (3): script on 'blue' (visible: not run, its stored value drawn); "
        "effect effects/shake/effect.json on 'red_0'; particle 'snow' (particles/snow.json)"]
    assert not result.layers[0].hide_render  # the script's stored value: visible


@pytest.mark.slow
@pytest.mark.default_leg  # two command-line renders, on the default leg
def test_render_writes_the_camera_view_beside_the_sheet_for_a_scene_with_a_camera_only(tmp_path, testdata):
    (tmp_path / "project").mkdir()
    _blend_project(tmp_path / "project", ("normal",))
    r = run_cli("render", tmp_path / "project" / "scene.json", "-o", tmp_path / "out" / "scene.png")
    assert r.returncode == 0, r.stderr
    camera = tmp_path / "out" / "scene_camera.png"
    assert r.stdout.split() == [str(tmp_path / "out" / "scene.png"), str(camera)]
    assert f"{camera}: 64x32, the view through the scene's camera" in r.stderr
    px = decode_png(camera.read_bytes()).astype(np.float64)
    assert px.shape == (32, 64, 4)
    assert np.abs(px[16, 52, :3] - _srgb([1.0, 0, 0])).max() <= 3  # the red layer, opaque ("normal")
    assert np.abs(px[16, 2, :3] - _srgb(np.full(3, GREY))).max() <= 2  # the clear colour
    r = run_cli("render", testdata / "wepuppet" / "blacryu_goose_t_puppet.mdl", "-o", tmp_path / "goose.png")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == [str(tmp_path / "goose.png")]  # a model alone: no camera, the sheet only
    assert not (tmp_path / "goose_camera.png").exists()


def _quad_puppet(folder, material: str) -> None:
    """models/quad.mdl: a 32 × 16 pixel quad centred on its origin, skinned to one bone, drawn with `material`."""
    from skinbridge.io_wepuppet.puppet import convert, mdl

    v = np.zeros(4, mdl.vertex_dtype(mdl.FORMAT_NARROW))
    v["position"] = [(-16, -8, 0), (16, -8, 0), (-16, 8, 0), (16, 8, 0)]
    v["weights"][:, 0] = 1.0
    v["uv0"] = [(0, 1), (1, 1), (0, 0), (1, 0)]
    model = mdl.Model(tag="MDLV0013")
    model.meshes = [mdl.Mesh([material], 0, None, None, mdl.FORMAT_NARROW, v, np.array([0, 1, 2, 1, 3, 2], "<u2"))]
    bone = mdl.Bone("", 1, -1, convert.to_column_major(np.eye(4)).astype("<f4"), "")
    model.sections = [mdl.Section("MDLS0001", mdl.Skeleton(1, [bone]))]
    (folder / "models" / "quad.mdl").write_bytes(mdl.write(model))


@pytest.mark.slow
@pytest.mark.default_leg  # one render, on the default leg
def test_a_puppet_layer_blends_as_its_material_says(clean_scene, tmp_path):
    from skinbridge.io_wepuppet.puppet.project_docs import puppet_layer_doc

    modes = ("additive", "normal")
    _blend_project(tmp_path, modes)
    _quad_puppet(tmp_path, "materials/red_0.json")
    path = tmp_path / "scene.json"
    doc = __import__("json").loads(path.read_bytes())
    for k, layer in enumerate(doc["objects"]):  # each red image layer becomes a puppet of its material
        if layer["name"].startswith("red_"):
            (tmp_path / "models" / f"{layer['name']}.json").write_bytes(
                format_json({"material": f"materials/{layer['name']}.json", "puppet": "models/quad.mdl"}))
            x, y, _ = (float(c) for c in layer["origin"].split())
            doc["objects"][k] = puppet_layer_doc(layer["id"], layer["name"], layer["image"], (x, y, 0), (32, 16))
    path.write_bytes(format_json(doc))
    result = blender_project.import_project(bpy.context, str(path))
    assert [ob.type for ob in result.layers] == ["MESH", "ARMATURE"] * 2
    px = render.camera_view(bpy.context).astype(np.float64)
    a = ALPHA / 255
    red = np.array([1.0, 0, 0])
    under = np.array([0, 0, a]) + GREY * (1 - a)
    expect = {"additive": (under + red * a, GREY + red * a), "normal": (red, red)}
    for row, mode in enumerate(modes):
        y = 16 + 32 * row
        over_blue, alone = expect[mode]
        assert np.abs(px[y, 32, :3] - _srgb(over_blue)).max() <= 3, (mode, px[y, 32])
        assert np.abs(px[y, 52, :3] - _srgb(alone)).max() <= 3, (mode, px[y, 52])
