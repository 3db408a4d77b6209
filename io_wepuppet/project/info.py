"""`skinbridge info` for Wallpaper Engine projects (`project.json`, `scene.json`): a JSON-ready summary."""
from __future__ import annotations

import os

from ..texture.material import document
from .pkg import is_package, read_index
from .project import Scene, read_path, read_project, read_scene


def _layers(scene: Scene) -> dict:
    kinds: dict[str, int] = {}
    for layer in scene.layers:
        kinds[layer.kind] = kinds.get(layer.kind, 0) + 1
    return {"size": [scene.width, scene.height], "layers": len(scene.layers), "kinds": kinds,
            "animation_layers": sum(len(la.animation_layers) for la in scene.layers),
            "effects": sum(len(la.effects) for la in scene.layers)}


def _properties(project) -> dict:
    return {n: {"type": u.type, "value": u.value} for n, u in project.properties.items()}


def _no_model() -> dict:
    return {"vertices": 0, "triangles": 0, "bones": 0, "animations": []}


def info_bytes(data: bytes, path: str = "") -> dict:
    """A project.json or a scene.json alone (told apart by their keys), without the files of its folder; a
    package alone: its magic and entries."""
    if is_package(data):
        package = read_index(data)
        return {"format": "scene.pkg", "magic": package.magic, "entries": len(package.entries),
                "data_bytes": sum(e.size for e in package.entries), **_no_model(), "warnings": []}
    doc = document(data, path or "project")
    if "objects" in doc or "camera" in doc:
        return {"format": "scene.json", **_layers(read_scene(data)), **_no_model(), "warnings": []}
    p = read_project(data)
    return {"format": "project.json", "title": p.title, "type": p.type, "file": p.file, "preview": p.preview,
            "properties": _properties(p), **_no_model(), "warnings": []}


def info(data: bytes, path: str = "") -> dict:
    """Title, scene size, layers by type, animation layers, effects and the user properties, read with the files
    of its folder (so puppets are told from flat images); without a folder, the bytes alone (`info_bytes`)."""
    if not path or not os.path.isfile(path):
        return info_bytes(data, path)
    project, scene, warnings = read_path(path)
    out = {"format": "Wallpaper Engine project", "file": os.path.basename(path), "warnings": warnings, **_no_model()}
    if project is not None:
        out.update(title=project.title, type=project.type, preview=project.preview,
                   properties=_properties(project))
    if scene is not None:
        out.update(_layers(scene))
        out["layer_names"] = [f"{la.kind} {la.name!r}" + (f" ({la.asset})" if la.asset else "")
                              for la in scene.layers]
    return out
