"""The project files written around a puppet or model (docs/wallpaper_engine.md §7): what `convert --to wepuppet`
and the export's Write project files lay out, a project.json and a scene.json with the keys and default values
the public projects have ("Layer key sets"), and how our writer spells a document and a vector (which the
project part also writes changed documents with). No bpy.
"""
from __future__ import annotations

import json
from typing import Any

PROJECT_FILE, SCENE_FILE = "project.json", "scene.json"


def format_json(doc: Any) -> bytes:
    """How our writer spells a document: tab-indented, keys in their order, non-ASCII kept, a final newline."""
    return (json.dumps(doc, indent="\t", ensure_ascii=False) + "\n").encode("utf-8")


def format_vector(v) -> str:
    """Our spelling of a vector, five decimals as Wallpaper Engine's editor writes them."""
    return " ".join(f"{float(x):.5f}" for x in v)


def project_doc(title: str, properties: dict[str, dict] | None = None, preview: str = "preview.jpg") -> dict:
    """A scene project's project.json with the keys public projects have."""
    general = {"properties": {"schemecolor": {"order": 0, "text": "ui_browse_properties_scheme_color",
                                              "type": "color", "value": "0 0 0"}, **(properties or {})}}
    return {"contentrating": "Everyone", "description": "", "file": SCENE_FILE, "general": general,
            "preview": preview, "tags": [], "title": title, "type": "scene", "version": 0}


def scene_doc(width: int, height: int, objects: list[dict]) -> dict:
    """A 2D scene.json: an orthogonal camera over `width` × `height` pixels and the layers in drawing order."""
    centre = f"{width / 2:.5f} {height / 2:.5f} 0.00000"
    return {"camera": {"center": centre, "eye": f"{width / 2:.5f} {height / 2:.5f} 1.00000",
                       "up": "0.00000 1.00000 0.00000"},
            "general": {"ambientcolor": "0.30000 0.30000 0.30000", "bloom": False,
                        "clearcolor": "0.70000 0.70000 0.70000",
                        "orthogonalprojection": {"height": height, "width": width},
                        "skylightcolor": "0.30000 0.30000 0.30000"},
            "objects": objects, "version": 3}


def layer_doc(key: str, asset: str, id: int, name: str, origin, scale=(1, 1, 1), angles=(0, 0, 0),
              **extra: Any) -> dict:
    """One layer (`key` "image", "model" or "particle" naming `asset`) placed at origin / scale / angles."""
    return {"angles": format_vector(angles), "id": id, key: asset, "name": name, "origin": format_vector(origin),
            "parallaxDepth": "1.00000 1.00000", "scale": format_vector(scale), "visible": True, **extra}


def puppet_layer_doc(id: int, name: str, model_json: str, origin, size, animationlayers: list[dict] = ()) -> dict:
    """An image layer showing a puppet (`model_json` names the model JSON whose `puppet` is the `.mdl`), with the
    keys and default values of the puppet layers of the public projects; `animationlayers` when it has clips."""
    doc = {"alignment": "center", "alpha": 1.0, "angles": format_vector((0, 0, 0)), "brightness": 1.0,
           "color": format_vector((1, 1, 1)), "colorBlendMode": 0, "copybackground": True, "id": id,
           "image": model_json, "ledsource": False, "locktransforms": False, "name": name,
           "origin": format_vector(origin), "parallaxDepth": "1.00000 1.00000", "perspective": False,
           "scale": format_vector((1, 1, 1)), "size": format_vector(size), "solid": True, "visible": True}
    if animationlayers:
        doc["animationlayers"] = list(animationlayers)
    return doc


def model_layer_doc(id: int, name: str, model: str, origin) -> dict:
    """A 3D model layer naming its `.mdl`, with the keys of the model layers of the public projects."""
    return {"angles": format_vector((0, 0, 0)), "id": id, "locktransforms": False, "model": model, "name": name,
            "origin": format_vector(origin), "parallaxDepth": "1.00000 1.00000", "perspective": False,
            "scale": format_vector((1, 1, 1))}


def animation_layer_doc(id: int, clip: int, name: str, visible: bool = True) -> dict:
    """One animation layer playing MDLA clip `clip` at its own rate, fully weighted, not additive."""
    return {"additive": False, "animation": clip, "blend": 1.0, "blendin": 0.0, "blendout": 0.0, "id": id,
            "name": name, "rate": 1.0, "visible": visible}


def converted_project(title: str, layer: dict, width: int = 1920, height: int = 1080) -> tuple[bytes, bytes]:
    """project.json and scene.json of a one-layer project (the layer centred on a `width` × `height` scene)."""
    return format_json(project_doc(title)), format_json(scene_doc(width, height, [layer]))
