"""Wallpaper Engine projects without Blender: a project our writer makes with every layer type public projects
use (image, puppet with two animation layers, static model, particle system, an effect, a user property) reads
into typed layers, comes back byte-identical while unchanged, changes only the key that was changed, and places
each layer where the test's own reading of scene.json puts it."""
from __future__ import annotations

import json

import numpy as np
import pytest

from skinbridge.core.errors import FormatError
from skinbridge.io_wepuppet.project import info as project_info
from skinbridge.io_wepuppet.project import project as wp
from skinbridge.io_wepuppet.puppet.project_docs import format_json, layer_doc, project_doc, scene_doc
from skinbridge.io_wepuppet.texture.material import loads

from support import wepuppet as ws

EFFECT = {"file": "effects/shake/effect.json", "id": 40, "name": "", "passes": [{"constantshadervalues": {
    "speed": 2.5}, "id": 41}], "visible": True}
ANIMATION_LAYERS = [
    {"additive": False, "animation": 1, "blend": 0.5, "blendin": 0.25, "blendout": 0.5, "id": 30, "name": "idle",
     "rate": 1.0, "visible": True},
    {"additive": True, "animation": 2, "blend": 1.0, "id": 31, "name": "blink", "rate": 2.0,
     "visible": {"user": "showblink", "value": False}}]


def _make(folder) -> tuple[bytes, bytes]:
    props = {"puppetscale": {"order": 100, "text": "Puppet scale", "type": "slider", "value": 1.5, "min": 0.1,
                             "max": 4},
             "showblink": {"order": 101, "text": "Blink", "type": "bool", "value": True}}
    objects = [
        layer_doc("image", "models/background.json", 1, "background", (960, 540, 0), size="1920.00000 1080.00000"),
        layer_doc("image", "models/goose.json", 2, "goose", (700.5, 300.25, 0), angles=(0, 0, 0.5),
                     animationlayers=ANIMATION_LAYERS),
        layer_doc("model", "models/crate.mdl", 3, "crate", (100, 200, -50), angles=(0.3, -0.2, 0.1),
                     scale=(2, 3, 4)),
        layer_doc("particle", "particles/snow.json", 4, "snow", (960, 1080, 0), instanceoverride={"rate": 2}),
        layer_doc("image", "models/sign.json", 5, "sign", (1500, 800, 0), effects=[EFFECT]),
    ]
    objects[1]["scale"] = {"user": "puppetscale", "value": "1.00000 1.00000 1.00000"}
    models = folder / "models"
    models.mkdir()
    (models / "goose.json").write_bytes(format_json({"autosize": True, "material": "materials/goose.json",
                                                        "puppet": "models/goose_puppet.mdl"}))
    for name in ("background", "sign"):
        (models / f"{name}.json").write_bytes(format_json({"material": f"materials/{name}.json"}))
    project = format_json(project_doc("Goose", props))
    scene = format_json(scene_doc(1920, 1080, objects))
    (folder / "project.json").write_bytes(project)
    (folder / "scene.json").write_bytes(scene)
    return project, scene


def test_every_layer_type_reads_typed_and_comes_back_byte_identical(tmp_path):
    project_bytes, scene_bytes = _make(tmp_path)
    project, scene, warnings = wp.read_folder(str(tmp_path))
    assert warnings == []
    assert (project.title, project.file, project.properties["puppetscale"].value) == ("Goose", "scene.json", 1.5)
    assert (scene.width, scene.height) == (1920, 1080)
    assert [(la.kind, la.name) for la in scene.layers] == [
        ("image", "background"), ("puppet", "goose"), ("model", "crate"), ("particle", "snow"), ("image", "sign")]
    goose = scene.layers[1]
    assert goose.scale.tolist() == [1.5, 1.5, 1.5]  # the user property's default, not the stored value
    idle, blink = goose.animation_layers
    assert (idle.animation, idle.blend, idle.additive, idle.blend_in, idle.blend_out) == (1, 0.5, False, 0.25, 0.5)
    assert (blink.animation, blink.blend, blink.additive, blink.rate, blink.visible) == (2, 1.0, True, 2.0, True)
    assert scene.layers[4].effects == [EFFECT] and scene.layers[3].doc["instanceoverride"] == {"rate": 2}
    wp.apply(scene)
    assert project.source.dump() == project_bytes and scene.source.dump() == scene_bytes
    doc = json.loads(scene_bytes)
    props = json.loads(project_bytes)["general"]["properties"]
    for layer, obj in zip(scene.layers, doc["objects"], strict=True):
        assert np.allclose(layer.matrix(), ws.layer_matrix(obj, props), rtol=0, atol=1e-9), layer.name


def test_a_changed_layer_changes_only_its_own_key(tmp_path):
    _, scene_bytes = _make(tmp_path)
    _, scene, _ = wp.read_folder(str(tmp_path))
    scene.layers[2].origin = np.array([10.0, 20.0, 30.0])
    scene.layers[1].scale = np.array([2.0, 2.0, 2.0])  # bound to a user property: the binding stays
    wp.apply(scene)
    out = scene.source.dump()
    assert out != scene_bytes
    before, after = json.loads(scene_bytes), json.loads(out)
    assert after["objects"][2]["origin"] == "10.00000 20.00000 30.00000"
    assert after["objects"][1]["scale"] == {"user": "puppetscale", "value": "2.00000 2.00000 2.00000"}
    before["objects"][2]["origin"] = after["objects"][2]["origin"]
    before["objects"][1]["scale"] = after["objects"][1]["scale"]
    assert before == after
    again = wp.read_scene(out)
    assert again.layers[2].origin.tolist() == [10.0, 20.0, 30.0]


def test_a_project_of_type_scene_capitalised_reads_its_scene(tmp_path):
    _make(tmp_path)
    doc = json.loads((tmp_path / "project.json").read_bytes())
    doc["type"] = "Scene"  # as BlacRyu's Mega Man X project has it
    (tmp_path / "project.json").write_bytes(format_json(doc))
    project, scene, warnings = wp.read_path(str(tmp_path / "project.json"))
    assert (project.type, warnings, len(scene.layers)) == ("Scene", [], 5)


def test_a_scene_with_trailing_commas_reads_as_wallpaper_engine_reads_it(tmp_path):
    """A comma after the last item of an array or object (the public Shift_Hue and hueshift effect projects
    ship such a scene.json): read with the same layers as without it, its own bytes written back while
    unchanged; commas inside strings stay; a file still broken after that is refused."""
    _, scene_bytes = _make(tmp_path)
    text = scene_bytes.decode()
    commas = text.replace("\n\t]", ",\n\t]").replace("\n}", ",\n}")
    assert commas != text
    with pytest.raises(json.JSONDecodeError):
        json.loads(commas)
    loose = wp.read_scene(commas.encode())
    strict = wp.read_scene(scene_bytes)
    assert [la.name for la in loose.layers] == [la.name for la in strict.layers] and len(loose.layers) == 5
    assert loose.source.doc == strict.source.doc and loose.source.dump() == commas.encode()
    assert loads('{"a": ["x,]", "y,}",], "b": "\\",}",}') == {"a": ["x,]", "y,}"], "b": '",}'}
    with pytest.raises(FormatError, match="not JSON"):
        wp.read_scene(b'{"objects": [,]}')


def test_info_of_project_and_scene_and_bad_json(tmp_path):
    project_bytes, scene_bytes = _make(tmp_path)
    s = project_info.info_bytes(scene_bytes, "scene.json")
    assert (s["format"], s["layers"], s["animation_layers"], s["effects"]) == ("scene.json", 5, 2, 1)
    assert s["kinds"] == {"image": 3, "model": 1, "particle": 1}  # without the folder a puppet is an image
    p = project_info.info_bytes(project_bytes, "project.json")
    assert p["title"] == "Goose" and p["properties"]["showblink"] == {"type": "bool", "value": True}
    with pytest.raises(FormatError, match="not JSON"):
        wp.read_scene(b'{"objects": [')
    with pytest.raises(FormatError, match="list, not an object"):
        wp.read_project(b"[1, 2]")


def test_registry_knows_projects_by_content_and_info_reads_the_folder(tmp_path, testdata):
    from skinbridge import formats

    project_bytes, scene_bytes = _make(tmp_path)
    for name in ("project.json", "scene.json"):
        assert formats.identify_file(tmp_path / name).name == "weproject"
    for other in ("blacryu_goose_t.model.json", "blacryu_goose_t_puppet.editor.json"):
        with pytest.raises(FormatError):
            formats.identify_file(testdata / "wepuppet" / other)
    for name in ("project.json", "scene.json"):
        out = formats.get("weproject").get("info")((tmp_path / name).read_bytes(), str(tmp_path / name))
        assert out["title"] == "Goose" and out["size"] == [1920, 1080] and out["layers"] == 5
        assert out["kinds"] == {"image": 2, "puppet": 1, "model": 1, "particle": 1}  # models/goose.json: a puppet
        assert out["properties"]["puppetscale"] == {"type": "slider", "value": 1.5}
    assert project_info.info(scene_bytes)["kinds"]["image"] == 3  # no folder: the bytes alone
