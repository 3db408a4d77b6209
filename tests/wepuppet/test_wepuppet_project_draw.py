"""Wallpaper Engine scenes drawn as Wallpaper Engine draws them (docs/wallpaper_engine.md §7): layers at one depth
in scene.json's order, alpha-blended, over the scene's clear colour; a perspective camera with the scene's fov and
clipping, the order offsets keeping every layer's projected place; the offsets never reach the written project."""
from __future__ import annotations

import json

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from bpy_extras.object_utils import world_to_camera_view  # noqa: E402
from mathutils import Matrix, Vector  # noqa: E402

from skinbridge.io_wepuppet.project import blender_io as blender_project  # noqa: E402
from skinbridge.io_wepuppet.project import project  # noqa: E402
from skinbridge.io_wepuppet.puppet.project_docs import format_json, layer_doc  # noqa: E402
from skinbridge.io_wepuppet.texture import tex  # noqa: E402

from support.wepuppet import make_project  # noqa: E402

pytestmark = pytest.mark.blender

ALPHA = 153  # 0.6 of 255


def _layers_project(folder, pairs=(("red", "blue"),), camera=None, general=None) -> None:
    """Per pair a row of two half-overlapping 32 × 16 image layers at one depth (the first at x 8..40, the
    second at 24..56), each its colour at alpha 0.6, in the pair's order in scene.json, on a 64 × 32 scene per
    row (top row first) cleared to mid grey."""
    (folder / "models").mkdir(exist_ok=True)
    (folder / "materials").mkdir(exist_ok=True)
    for name, colour in (("red", (255, 0, 0)), ("blue", (0, 0, 255))):
        rgba = np.zeros((8, 8, 4), np.uint8)
        rgba[..., :3], rgba[..., 3] = colour, ALPHA
        (folder / "materials" / f"{name}.tex").write_bytes(tex.write(tex.from_rgba(rgba)))
        (folder / "materials" / f"{name}.json").write_bytes(
            format_json({"passes": [{"shader": "genericimage2", "textures": [name]}]}))
        (folder / "models" / f"{name}.json").write_bytes(format_json({"material": f"materials/{name}.json"}))
    height = 32 * len(pairs)
    objects = []
    for row, pair in enumerate(pairs):
        y = height - 16 - 32 * row
        for x, name in zip((24, 40), pair):
            objects.append(layer_doc("image", f"models/{name}.json", len(objects) + 1, name, (x, y, 0),
                                     size="32 16"))
    doc = {"camera": camera or {"center": "0 0 -1", "eye": "0 0 0", "up": "0 1 0"},
           "general": general or {"clearcolor": "0.50000 0.50000 0.50000", "clearenabled": True,
                                  "orthogonalprojection": {"width": 64, "height": height}},
           "objects": objects}
    (folder / "scene.json").write_bytes(format_json(doc))


def _render(tmp_path) -> np.ndarray:
    scene = bpy.context.scene
    engines = [e.identifier for e in type(scene.render).bl_rna.properties["engine"].enum_items]
    scene.render.engine = "BLENDER_EEVEE_NEXT" if "BLENDER_EEVEE_NEXT" in engines else "BLENDER_EEVEE"
    scene.eevee.taa_render_samples = 1
    scene.render.filepath = str(tmp_path / "render.png")
    scene.render.image_settings.file_format = "PNG"
    bpy.ops.render.render(write_still=True)
    img = bpy.data.images.load(str(tmp_path / "render.png"))
    try:
        w, h = img.size
        px = np.empty(w * h * 4, np.float32)
        img.pixels.foreach_get(px)
        return np.round(px.reshape(h, w, 4)[::-1] * 255)  # top row first, 0..255 as the file holds them
    finally:
        bpy.data.images.remove(img)


def _srgb(linear: np.ndarray) -> np.ndarray:
    return np.where(linear <= 0.0031308, linear * 12.92, 1.055 * linear ** (1 / 2.4) - 0.055) * 255


@pytest.mark.slow
@pytest.mark.default_leg  # one render, on the default leg
def test_overlapping_layers_at_one_depth_render_in_scene_json_order(clean_scene, tmp_path):
    pairs = (("red", "blue"), ("blue", "red"))
    _layers_project(tmp_path, pairs)
    blender_project.import_project(bpy.context, str(tmp_path / "scene.json"))
    px = _render(tmp_path)
    assert px.shape == (64, 64, 4)
    a = ALPHA / 255
    grey = ((0.5 + 0.055) / 1.055) ** 2.4  # the clear colour, linear
    channel = {"red": 0, "blue": 2}
    for row, (under, over) in enumerate(pairs):
        # in the overlap (x 24..40) the later layer is drawn over the earlier one over the clear colour,
        # blended in linear light: over · a + (under · a + grey · (1 − a)) · (1 − a)
        expect = np.full(3, grey * (1 - a) ** 2)
        expect[channel[over]] += a
        expect[channel[under]] += a * (1 - a)
        y = 16 + 32 * row
        assert np.abs(px[y, 32, :3] - _srgb(expect)).max() <= 3, (under, over, px[y, 32])
        assert np.abs(px[y, 2, :3] - _srgb(np.full(3, grey))).max() <= 2  # outside the layers: the clear colour


def test_a_perspective_camera_takes_the_scenes_fov_and_keeps_each_layers_projected_place(clean_scene, tmp_path):
    general = {"clearcolor": "0 0 0", "fov": {"user": "fov", "value": 53.0}, "nearz": 1.0, "farz": 10000.0,
               "orthogonalprojection": None}
    camera = {"center": "32.00000 16.00000 0.00000", "eye": "32.00000 16.00000 60.00000", "up": "0 1 0"}
    _layers_project(tmp_path, camera=camera, general=general)
    result = blender_project.import_project(bpy.context, str(tmp_path / "scene.json"))
    cam = result.camera
    assert cam.data.type == "PERSP" and cam.data.sensor_fit == "VERTICAL"
    assert cam.data.angle_y == pytest.approx(np.radians(53.0), abs=1e-6)
    assert (cam.data.clip_start, cam.data.clip_end) == (pytest.approx(0.01), pytest.approx(100.0))
    bpy.context.view_layer.update()
    red, blue = result.layers
    assert tuple(red.delta_scale) == (1, 1, 1) and blue.delta_scale[0] < 1  # the later layer is brought forward
    for ob in (red, blue):
        offset = [world_to_camera_view(bpy.context.scene, cam, ob.matrix_world @ v.co) for v in ob.data.vertices]
        placed = np.array(blender_project.layer_matrix(
            next(la for la in _scene_layers(tmp_path) if la.name == ob.name), 0.01))
        plain = [world_to_camera_view(bpy.context.scene, cam, Matrix(placed.tolist()) @ Vector(v.co))
                 for v in ob.data.vertices]
        assert np.abs(np.array([p[:2] for p in offset]) - np.array([p[:2] for p in plain])).max() < 1e-6
        assert min(p[2] for p in offset) <= min(p[2] for p in plain)  # nearer the eye (or where it was)


def _scene_layers(folder):
    return project.read_scene((folder / "scene.json").read_bytes()).layers


def test_the_order_offsets_never_reach_the_written_project(clean_scene, tmp_path):
    (tmp_path / "src").mkdir()
    _layers_project(tmp_path / "src")
    result = blender_project.import_project(bpy.context, str(tmp_path / "src" / "scene.json"))
    assert result.layers[1].delta_location.length > 0
    bpy.context.view_layer.objects.active = result.layers[0]
    written, _ = blender_project.export_project(bpy.context, str(tmp_path / "out" / "scene.json"))
    assert (tmp_path / "out" / "scene.json").read_bytes() == (tmp_path / "src" / "scene.json").read_bytes()
    result.layers[1].location.x += 0.5  # 50 pixels to the right: only that layer's origin changes
    blender_project.export_project(bpy.context, str(tmp_path / "out2" / "scene.json"))
    a = json.loads((tmp_path / "src" / "scene.json").read_bytes())
    b = json.loads((tmp_path / "out2" / "scene.json").read_bytes())
    assert b["objects"][1].pop("origin") == "90.00000 16.00000 0.00000"
    a["objects"][1].pop("origin")
    assert a == b


def _odd_layers_project(folder, testdata) -> None:
    """Our writer's project around the shared goose puppet, with a mirrored layer (negative scale), one turned
    beyond π and one scaled to 0, all far from the origin (so float32 does not give their matrices back exactly)."""
    make_project(folder, testdata)
    doc = json.loads((folder / "scene.json").read_bytes())
    doc["objects"] += [
        layer_doc("image", "models/sky.json", 11, "mirrored", (1811.08606, 1981.93896, 0), scale=(-2, 2, 1),
                  size="64 32"),
        layer_doc("image", "models/sky.json", 12, "turned", (1806.61584, 415.69427, 0), angles=(0, 0, 4.0),
                  size="64 32"),
        layer_doc("image", "models/sky.json", 13, "gone", (2048.0, 948.0, 0), scale=(0, 0, 0), size="64 32")]
    (folder / "scene.json").write_bytes(format_json(doc))


@pytest.mark.parametrize("name", ["mirrored", "turned", "gone"])
def test_odd_layers_come_back_as_they_were_and_an_edit_changes_only_its_own_origin(clean_scene, testdata,
                                                                                    tmp_path, name):
    src = tmp_path / "src"
    src.mkdir()
    _odd_layers_project(src, testdata)
    result = blender_project.import_project(bpy.context, str(src / "project.json"))
    bpy.context.view_layer.objects.active = result.layers[0]
    blender_project.export_project(bpy.context, str(tmp_path / "same" / "project.json"))
    assert (tmp_path / "same" / "scene.json").read_bytes() == (src / "scene.json").read_bytes()
    ob = next(o for o in result.layers if json.loads(o[blender_project.LAYER_PROP])["name"] == name)
    ob.location.x += 0.1  # 10 scene pixels to the right
    blender_project.export_project(bpy.context, str(tmp_path / "moved" / "project.json"))
    old = json.loads((src / "scene.json").read_bytes())
    new = json.loads((tmp_path / "moved" / "scene.json").read_bytes())
    for a, b in zip(old["objects"], new["objects"]):
        if a["name"] == name:
            x, y, z = (float(v) for v in a["origin"].split())
            assert [float(v) for v in b.pop("origin").split()] == pytest.approx([x + 10, y, z], abs=2e-3)
            a.pop("origin")
        assert a == b, a["name"]


def test_an_edited_image_of_an_image_layer_is_written_and_nothing_else(clean_scene, tmp_path):
    (tmp_path / "src").mkdir()
    _layers_project(tmp_path / "src")
    result = blender_project.import_project(bpy.context, str(tmp_path / "src" / "scene.json"))
    img = next(n.image for n in result.layers[0].active_material.node_tree.nodes if n.type == "TEX_IMAGE")
    px = np.array(img.pixels[:], np.float32)
    px[0::4] = 0.0
    px[1::4] = 1.0  # red becomes green
    img.pixels.foreach_set(px)
    bpy.context.view_layer.objects.active = result.layers[0]
    blender_project.export_project(bpy.context, str(tmp_path / "out" / "scene.json"))
    files = sorted(p.relative_to(tmp_path / "src") for p in (tmp_path / "src").rglob("*") if p.is_file())
    changed = [str(p) for p in files if (tmp_path / "src" / p).read_bytes() != (tmp_path / "out" / p).read_bytes()]
    assert changed == ["materials/red.tex"]
    green = tex.image_pixels(tex.read((tmp_path / "out" / "materials" / "red.tex").read_bytes()))
    assert (green[..., 0] == 0).all() and (green[..., 1] == 255).all() and (green[..., 3] == ALPHA).all()


def test_a_vertex_edit_on_the_second_layer_of_a_shared_model_is_written(clean_scene, testdata, tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    make_project(src, testdata)
    doc = json.loads((src / "scene.json").read_bytes())
    doc["objects"].append(layer_doc("model", "models/arwing.mdl", 21, "arwing 2", (900, 200, -50)))
    (src / "scene.json").write_bytes(format_json(doc))
    result = blender_project.import_project(bpy.context, str(src / "project.json"))
    second = result.layers[-1]
    mesh = next(ob for ob in second.children if ob.type == "MESH")
    mesh.data.vertices[0].co.x += 0.05
    bpy.context.view_layer.objects.active = second
    _, warnings = blender_project.export_project(bpy.context, str(tmp_path / "out" / "project.json"))
    files = sorted(p.relative_to(src) for p in src.rglob("*") if p.is_file())
    changed = [str(p) for p in files if (src / p).read_bytes() != (tmp_path / "out" / p).read_bytes()]
    assert changed == ["models/arwing.mdl"]
    assert any("'arwing', 'arwing 2' share it" in w for w in warnings), warnings


def test_an_object_added_beside_the_project_is_named_as_not_written(clean_scene, tmp_path):
    (tmp_path / "src").mkdir()
    _layers_project(tmp_path / "src")
    result = blender_project.import_project(bpy.context, str(tmp_path / "src" / "scene.json"))
    bpy.ops.mesh.primitive_cube_add(size=0.2)  # where the user's new objects go: not the project's collection
    bpy.context.object.name = "AddedCube"
    bpy.context.view_layer.objects.active = result.layers[0]
    _, warnings = blender_project.export_project(bpy.context, str(tmp_path / "out" / "scene.json"))
    assert (tmp_path / "out" / "scene.json").read_bytes() == (tmp_path / "src" / "scene.json").read_bytes()
    assert [w for w in warnings if "AddedCube" in w] == [
        f"not written (not in the project's collection {result.collection.name!r}, and objects added to a project "
        "are not yet exported as layers): AddedCube"]


def test_an_image_put_on_a_puppets_material_is_written_to_its_texture(clean_scene, testdata, tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    make_project(src, testdata)
    result = blender_project.import_project(bpy.context, str(src / "project.json"))
    goose = next(o for o in result.layers if o.type == "ARMATURE")
    mat = next(ob for ob in goose.children if ob.type == "MESH").active_material
    node = next(n for n in mat.node_tree.nodes if n.type == "TEX_IMAGE")
    node.image = bpy.data.images.new("edited_image", 4, 4)
    bpy.context.view_layer.objects.active = goose
    _, warnings = blender_project.export_project(bpy.context, str(tmp_path / "out" / "project.json"))
    files = sorted(p.relative_to(src) for p in src.rglob("*") if p.is_file())
    changed = [str(p) for p in files if (src / p).read_bytes() != (tmp_path / "out" / p).read_bytes()]
    assert changed == ["materials/goose_t.tex"]
    assert tex.image_pixels(tex.read((tmp_path / "out" / "materials" / "goose_t.tex").read_bytes())).shape[:2] == (4, 4)
    assert f"material {mat.name!r}: its image is now 'edited_image': written as materials/goose_t.tex" in warnings


def test_a_vertex_moved_on_an_image_layers_plane_is_named_as_not_written(clean_scene, tmp_path):
    (tmp_path / "src").mkdir()
    _layers_project(tmp_path / "src")
    result = blender_project.import_project(bpy.context, str(tmp_path / "src" / "scene.json"))
    result.layers[1].data.vertices[0].co.x += 0.05
    bpy.context.view_layer.objects.active = result.layers[0]
    _, warnings = blender_project.export_project(bpy.context, str(tmp_path / "out" / "scene.json"))
    assert (tmp_path / "out" / "scene.json").read_bytes() == (tmp_path / "src" / "scene.json").read_bytes()
    assert "not written (an image layer is drawn as its size and texture; its plane's vertices or shape keys " \
        f"were edited): {result.layers[1].name}" in warnings


def test_a_deleted_layer_object_and_shape_keys_on_a_plane_are_named_as_not_written(clean_scene, tmp_path):
    (tmp_path / "src").mkdir()
    _layers_project(tmp_path / "src", (("red", "blue"), ("blue", "red")))
    result = blender_project.import_project(bpy.context, str(tmp_path / "src" / "scene.json"))
    plane, gone = result.layers[0], result.layers[3]
    gone_name = gone.name
    plane.shape_key_add(name="Basis", from_mix=False)
    plane.shape_key_add(name="Edited", from_mix=False).data[0].co.x += 0.05
    bpy.data.objects.remove(gone)
    bpy.context.view_layer.objects.active = plane
    _, warnings = blender_project.export_project(bpy.context, str(tmp_path / "out" / "scene.json"))
    assert (tmp_path / "out" / "scene.json").read_bytes() == (tmp_path / "src" / "scene.json").read_bytes()
    assert "not written (deleting a layer's object is not yet written: the layers are kept as they were): " \
        f"{gone_name} (layer 'red')" in warnings
    assert "not written (an image layer is drawn as its size and texture; its plane's vertices or shape keys " \
        f"were edited): {plane.name} (shape keys Edited)" in warnings
