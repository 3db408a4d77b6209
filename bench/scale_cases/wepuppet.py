"""Wallpaper Engine cases of bench/scale: a project of N layers (image layers sharing one model, material and
texture; group layers, half the image layers parented to one; layers naming a built-in model that is not in the
folder) converted to a project again, which imports every layer into Blender and writes the project back."""
from __future__ import annotations

import json
import pathlib
import runpy

runpy.run_path(str(pathlib.Path(__file__).resolve().parents[1] / "_checkout.py"))

from skinbridge.io_wepuppet.texture import tex  # noqa: E402  (after the checkout is importable)

import numpy as np  # noqa: E402


def layers_project(n: int, folder: pathlib.Path) -> pathlib.Path:
    """A project of `n` layers in `folder` (made); returns its project.json."""
    (folder / "models").mkdir(parents=True, exist_ok=True)
    (folder / "materials").mkdir(exist_ok=True)
    rgba = np.full((4, 4, 4), 200, np.uint8)
    (folder / "materials" / "tile.tex").write_bytes(tex.write(tex.from_rgba(rgba)))
    (folder / "materials" / "tile.json").write_text(json.dumps({"passes": [{"textures": ["tile"]}]}))
    (folder / "models" / "tile.json").write_text(json.dumps({"material": "materials/tile.json"}))
    objects = []
    group = None
    for k in range(n):
        o = {"id": k + 1, "name": f"layer {k}", "origin": f"{k % 97} {k % 89} 0", "scale": "1 1 1",
             "angles": "0 0 0"}
        if k % 8 == 0:  # a group: an empty holding the layers after it
            group = k + 1
        elif k % 8 == 7:
            o["image"] = "models/util/solidlayer.json"  # a Wallpaper Engine built-in, not in the folder
        else:
            o["image"] = "models/tile.json"
            o["size"] = "16 16"
            if k % 2:
                o["parent"] = group
        objects.append(o)
    scene = {"camera": {"center": "0 0 0", "eye": "0 0 1", "up": "0 1 0"},
             "general": {"orthogonalprojection": {"width": 1920, "height": 1080}}, "objects": objects}
    (folder / "scene.json").write_text(json.dumps(scene, indent="\t"))
    (folder / "project.json").write_text(json.dumps({"file": "scene.json", "title": "layers", "type": "scene"}))
    return folder / "project.json"


def _layers(n: int, folder: pathlib.Path) -> list[str]:
    return ["convert", str(layers_project(n, folder / "src")), "--to", "weproject", "-o", str(folder / "out")]


CASES = [dict(name="weproject layers (convert)", n=2000, build=_layers,
              what="layers of a scene.json, imported into Blender and written back")]
