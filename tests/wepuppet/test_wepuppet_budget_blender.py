"""Issue 45, Wallpaper Engine, inside Blender: File › Export and the Collection Exporter of a project copy nothing
from outside it and take their own collection's project; a scene of many layers costs the same file reads and
datablocks whatever its size (each model, material and texture read once, one image, material and plane per
texture and size); layers scaled to 0 come in, compare and go out unchanged; a sprite sheet whose frames claim
gigabytes comes in as its image with one warning; a missing layer model is named with its layers."""
from __future__ import annotations

import json
import os
import pathlib
import runpy

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from skinbridge.blender import scene as bscene  # noqa: E402
from skinbridge.blender.ops_common import LAST_OUTCOME  # noqa: E402
from skinbridge.io_wepuppet.project import blender_io as blender_project  # noqa: E402
from skinbridge.io_wepuppet.puppet.project_docs import layer_doc  # noqa: E402
from skinbridge.io_wepuppet.texture import blender_io as texture_io  # noqa: E402

from support import limited  # noqa: E402
from support import wepuppet_hostile as h  # noqa: E402

pytestmark = pytest.mark.blender

LINKS = ("hostname_link", "materials/secret.txt", "models/outside_dir")
COPIED = ["materials/alias.json", "materials/picture.json", "materials/picture.tex", "models/picture.json",
          "project.json", "scene.json"]


def _files(folder: pathlib.Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def _assert_nothing_from_outside(out: pathlib.Path, src: pathlib.Path, warnings: list[str], pipe=False) -> None:
    got = _files(out)
    assert sorted(got) == COPIED and not any(p.is_symlink() for p in out.rglob("*"))
    assert all(h.SECRET not in data for data in got.values())
    assert got["materials/alias.json"] == (src / "materials" / "picture.json").read_bytes()
    for name in LINKS + (("materials/pipe.tex",) if pipe else ()):
        assert len([w for w in warnings if w.startswith(f"{name}: ")]) == 1, (name, warnings)


def test_file_export_copies_nothing_from_outside_the_project(clean_scene, tmp_path):
    path, _ = h.linked_project(tmp_path, pipe=True)  # and a pipe, skipped too (the export waited on it, or refused)
    assert bpy.ops.import_scene.skinbridge_weproject(filepath=path) == {"FINISHED"}
    out = tmp_path / "out"
    assert bpy.ops.export_scene.skinbridge_weproject(filepath=str(out / "project.json")) == {"FINISHED"}
    _assert_nothing_from_outside(out, tmp_path / "project", LAST_OUTCOME.warnings, pipe=True)


def test_the_collection_exporter_takes_its_own_collections_project(clean_scene, tmp_path):
    path_a, _ = h.linked_project(tmp_path)
    path_b = h.image_project(tmp_path / "other", layers=h.zero_scale_layers())
    a = blender_project.import_project(bpy.context, path_a)
    b = blender_project.import_project(bpy.context, path_b)
    bpy.context.view_layer.objects.active = b.layers[0]  # the active object is the other project's
    with bpy.context.temp_override(collection=a.collection):
        assert bpy.ops.collection.exporter_add(name="IO_FH_skinbridge_weproject") == {"FINISHED"}
    out = tmp_path / "out"
    a.collection.exporters[0].export_properties.filepath = str(out / "project.json")
    with bpy.context.temp_override(collection=a.collection):
        assert bpy.ops.collection.exporter_export(index=0) == {"FINISHED"}
    _assert_nothing_from_outside(out, tmp_path / "project", LAST_OUTCOME.warnings)
    assert (out / "scene.json").read_bytes() == (tmp_path / "project" / "scene.json").read_bytes()
    # a collection holding no project gives its own model as a new project: here none, never another's planes
    empty = bpy.data.collections.new("Empty")
    bpy.context.scene.collection.children.link(empty)
    with pytest.raises(RuntimeError, match="nothing to export"):
        bpy.ops.export_scene.skinbridge_weproject(filepath=str(tmp_path / "none" / "project.json"), collection="Empty")
    assert not (tmp_path / "none").exists()


# ------------------------------------------------------------------------------------------------------------
# 11: work per layer

_layers_project = runpy.run_path(str(limited.ROOT / "bench" / "scale_cases" / "wepuppet.py"))["layers_project"]


def _counted(monkeypatch, tmp_path, n: int) -> dict:
    """Import and export a project of `n` layers (bench/scale's case), counting every file opened (by path),
    every texture import and the datablocks made."""
    path = _layers_project(n, tmp_path / f"src{n}")
    opened: dict[str, int] = {}
    real_open = os.open

    def counting_open(p, *args, **kwargs):
        key = os.path.relpath(os.fspath(p), tmp_path / f"src{n}") if str(p).startswith(str(tmp_path)) else "other"
        opened[key] = opened.get(key, 0) + 1
        return real_open(p, *args, **kwargs)

    imports = []
    real_import = texture_io.import_texture
    monkeypatch.setattr(os, "open", counting_open)
    monkeypatch.setattr(texture_io, "import_texture", lambda *a, **k: imports.append(a[1]) or real_import(*a, **k))
    before = {c: len(getattr(bpy.data, c)) for c in ("objects", "meshes", "materials", "images")}
    result = blender_project.import_project(bpy.context, str(path))
    made = {c: len(getattr(bpy.data, c)) - before[c] for c in before}
    read = dict(opened)
    opened.clear()
    bpy.context.view_layer.objects.active = result.layers[0]
    written, _ = blender_project.export_project(bpy.context, str(tmp_path / f"out{n}" / "project.json"))
    monkeypatch.undo()
    return {"made": made, "read": read, "copied": dict(opened), "imports": len(imports),
            "warnings": result.warnings, "layers": len(result.layers), "written": len(written)}


def test_a_scene_of_many_layers_reads_each_file_once_and_shares_its_datablocks(clean_scene, tmp_path, monkeypatch):
    small = _counted(monkeypatch, tmp_path, 64)
    bpy.ops.wm.read_factory_settings(use_empty=True)
    large = _counted(monkeypatch, tmp_path, 128)
    assert (small["layers"], large["layers"]) == (64, 128)
    # one object per layer (and the camera); one image, two materials (textured, untextured), two planes
    assert small["made"] == {"objects": 65, "meshes": 2, "materials": 2, "images": 1}
    assert large["made"] == {"objects": 129, "meshes": 2, "materials": 2, "images": 1}
    assert small["imports"] == large["imports"] == 1
    # every project file opened once on import, whatever the number of layers that name it
    for counts in (small, large):
        assert {k: v for k, v in counts["read"].items() if k != "other"} == \
            {"project.json": 1, "scene.json": 1, "models/tile.json": 1, "materials/tile.json": 1,
             "materials/tile.tex": 1}, counts["read"]
        # export: each file copied once (project.json and scene.json are written from what was imported), the
        # image layers' model read once more (does it name a puppet?), nothing read per layer
        assert {k: v for k, v in counts["copied"].items() if not k.startswith(("other", "../"))} == \
            {"models/tile.json": 2, "materials/tile.json": 1, "materials/tile.tex": 1}, counts["copied"]
        assert counts["written"] == 5
    # a built-in model 8 or 16 layers name: one warning naming it, its first layer and the count of the rest
    assert [w for w in small["warnings"] if "solidlayer" in w] == [
        "image layer 'layer 7': 'models/util/solidlayer.json': not in the project folder (a Wallpaper Engine "
        "built-in file?) (and 7 more layers)"]
    assert len(small["warnings"]) == len(large["warnings"]) == 3  # that, one for no size, the kept groups


# ------------------------------------------------------------------------------------------------------------
# 16: layers scaled to 0

def test_layers_scaled_to_zero_import_gather_and_export_unchanged(clean_scene, tmp_path):
    src = tmp_path / "src"
    path = h.image_project(src, layers=h.zero_scale_layers())
    result = blender_project.import_project(bpy.context, path)
    obs = {json.loads(ob[blender_project.LAYER_PROP])["name"]: ob for ob in result.layers}
    assert not np.array(obs["script module"].matrix_world)[:3, :3].any()
    scene, _ = bscene.gather_scene(bpy.context)  # what compare reads: "Singular matrix" before
    assert np.isfinite(np.concatenate([m.normals for m in scene.meshes])).all()
    out = tmp_path / "out"
    blender_project.export_project(bpy.context, str(out / "project.json"))
    assert _files(out) == _files(src)
    # a layer scaled to 0 keeps its angles when moved: its matrix holds no rotation to read them back from
    obs["turned"].matrix_world.translation.x += 1.0  # 100 scene pixels
    again = tmp_path / "again"
    blender_project.export_project(bpy.context, str(again / "project.json"))
    turned = next(o for o in json.loads((again / "scene.json").read_bytes())["objects"] if o["name"] == "turned")
    assert (turned["origin"], turned["angles"], turned["scale"]) == \
        ("140.00000 30.00000 0.00000", "0.10000 0.20000 0.30000", "0.00000 0.00000 0.00000")


# ------------------------------------------------------------------------------------------------------------
# 7 and 14 through the import operators

def test_the_texture_import_operator_refuses_a_sheet_claiming_too_many_pixels(clean_scene, tmp_path):
    path = tmp_path / "bomb.tex"
    path.write_bytes(h.sheet(1100, 256))  # 1,100 frames of 64 Ki pixels, 72 Mi in all: over the cap at 1,024
    assert bpy.ops.import_scene.skinbridge_wetex(filepath=str(path)) == {"FINISHED"}
    assert len(LAST_OUTCOME.warnings) == 1 and "frame 1024 rectangle" in LAST_OUTCOME.warnings[0]
    assert "sprite sheet shown as its whole image" in LAST_OUTCOME.warnings[0]


def test_a_missing_layer_model_is_named_with_its_layers(clean_scene, tmp_path):
    layers = [layer_doc("image", "models/util/solidlayer.json", k, f"solid {k}", (0, 0, 0)) for k in (1, 2, 3)]
    layers.append(layer_doc("model", "models/gone.mdl", 4, "gone", (0, 0, 0)))
    path = h.image_project(tmp_path, layers=layers)
    result = blender_project.import_project(bpy.context, path)
    assert not any("Errno" in w for w in result.warnings)
    assert "image layer 'solid 1': 'models/util/solidlayer.json': not in the project folder (a Wallpaper Engine " \
        "built-in file?) (and 2 more layers)" in result.warnings
    assert "model layer 'gone': 'models/gone.mdl': not in the project folder (a Wallpaper Engine built-in file?)" \
        in result.warnings
