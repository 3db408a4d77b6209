"""Wallpaper Engine projects without Blender: `project.json` (title, preview, user properties) and `scene.json`
(camera, scene size, layers) as typed data, every key kept and written back.

Layout and meaning: docs/wallpaper_engine.md §7. The JSON documents stay the truth: typed records are read from
them and hold the document they came from (`doc`), so a key we do not interpret (effects' passes, scripts,
particle overrides, sounds, ...) is never lost. `dump` gives back a file's own bytes while its document is
unchanged; a changed document is written the way `format_json` writes ours. `apply` puts changed typed values
back into their document, touching only the keys whose value changed.

A value may be bound to a user property, `{"user": "name", "value": v}` (or `{"user": {"name": ...}}`): it takes
the property's default from project.json, else its own `value`, as Almamu/linux-wallpaperengine's
`ObjectParser` reads it (`it.user(key, properties, default)`). Transform: `origin` (scene pixels, +Y up),
`scale`, `angles` (radians), strings of three numbers; a layer's world matrix is T(origin) · Rz · Ry · Rx · S.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...core.errors import FormatError
from ...core.fileio import read_bytes
from ...core.paths import relative_parts, why_unsafe
from ..puppet.project_docs import PROJECT_FILE, SCENE_FILE, format_json, format_vector
from ..texture.material import document
from .pkg import locate

LAYER_KINDS = ("image", "puppet", "model", "particle", "sound", "text", "light", "group")
_ASSET_KEYS = (("image", "image"), ("model", "model"), ("particle", "particle"), ("sound", "sound"),
               ("text", "text"), ("light", "light"))


@dataclass
class JsonFile:
    """One JSON file: its bytes as read and the document; `dump` gives the bytes back while nothing changed."""
    doc: dict
    raw: bytes = b""
    snapshot: str = ""

    @classmethod
    def parse(cls, data: bytes, what: str) -> "JsonFile":
        doc = document(data, what)
        return cls(doc, bytes(data), json.dumps(doc))

    def dump(self) -> bytes:
        return self.raw if self.raw and json.dumps(self.doc) == self.snapshot else format_json(self.doc)


# ------------------------------------------------------------------------------------------------------------
# values

def vector(value: Any, size: int, default: tuple) -> np.ndarray:
    """"x y z" (or a number, or a list) as `size` float64; missing or unreadable parts take the default."""
    out = np.array(default, np.float64)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        out[:] = value
    elif isinstance(value, (str, list)):
        parts = value.split() if isinstance(value, str) else value
        for k, p in enumerate(parts[:size]):
            try:
                out[k] = float(p)
            except (TypeError, ValueError):
                pass
    return out


def _binding(value: Any) -> str | None:
    if isinstance(value, dict) and "user" in value:
        user = value["user"]
        return user.get("name") if isinstance(user, dict) else user
    return None


@dataclass
class UserProperty:
    """One entry of project.json's general.properties: its default (`value`) and what the UI shows."""
    name: str
    type: str = ""
    value: Any = None
    text: str = ""
    order: int | None = None
    doc: dict = field(default_factory=dict)


def resolve(value: Any, properties: dict[str, UserProperty]) -> Any:
    """A scene value with any user-property binding replaced by the property's default."""
    name = _binding(value)
    if name is None:  # a value driven by a script starts at its stored `value`
        return value.get("value") if isinstance(value, dict) and "value" in value else value
    if name in properties and properties[name].value is not None:
        return properties[name].value
    return value.get("value")


# ------------------------------------------------------------------------------------------------------------
# project.json

@dataclass
class Project:
    title: str = ""
    type: str = ""
    file: str = ""
    preview: str = ""
    properties: dict[str, UserProperty] = field(default_factory=dict)
    source: JsonFile = field(default_factory=lambda: JsonFile({}))


def read_project(data: bytes) -> Project:
    src = JsonFile.parse(data, PROJECT_FILE)
    d = src.doc
    props = {}
    raw_props = (d.get("general") or {}).get("properties") if isinstance(d.get("general"), dict) else None
    for name, p in (raw_props or {}).items():
        if isinstance(p, dict):
            order = p.get("order")
            props[name] = UserProperty(name, str(p.get("type", "")), p.get("value"), str(p.get("text", "")),
                                       order if isinstance(order, int) else None, p)
    return Project(str(d.get("title", "")), str(d.get("type", "")), str(d.get("file", "")),
                   str(d.get("preview", "")), props, src)


# ------------------------------------------------------------------------------------------------------------
# scene.json

@dataclass
class AnimationLayer:
    """A puppet's animation layer: a clip (`animation`, the MDLA clip id) played at `rate`, mixed with weight
    `blend`, on top of the layers before it when `additive`, faded in and out over `blend_in` / `blend_out`."""
    animation: int | None = None
    name: str = ""
    rate: float = 1.0
    blend: float = 1.0
    additive: bool = False
    blend_in: float | None = None
    blend_out: float | None = None
    visible: bool = True
    doc: dict = field(default_factory=dict)


@dataclass
class Layer:
    """One entry of scene.json's `objects`. `kind` is what it shows (LAYER_KINDS); `asset` the file it names;
    values bound to user properties are read as the project's defaults."""
    kind: str
    id: int | None = None
    name: str = ""
    asset: str = ""
    origin: np.ndarray = field(default_factory=lambda: np.zeros(3))
    scale: np.ndarray = field(default_factory=lambda: np.ones(3))
    angles: np.ndarray = field(default_factory=lambda: np.zeros(3))
    parallax_depth: np.ndarray = field(default_factory=lambda: np.zeros(2))
    visible: bool = True
    alpha: float = 1.0
    parent: int | None = None
    effects: list[dict] = field(default_factory=list)
    animation_layers: list[AnimationLayer] = field(default_factory=list)
    doc: dict = field(default_factory=dict)
    read_values: dict = field(default_factory=dict)  # the typed values as read, so `apply` sees what changed

    def matrix(self) -> np.ndarray:
        """4×4 world matrix in scene pixels: T(origin) · Rz · Ry · Rx · S (parents not applied)."""
        return transform(self.origin, self.angles, self.scale)


def transform(origin, angles, scale) -> np.ndarray:
    cx, cy, cz = np.cos(angles)
    sx, sy, sz = np.sin(angles)
    rx = np.array([[1, 0, 0], [0, cx, -sx], [0, sx, cx]])
    ry = np.array([[cy, 0, sy], [0, 1, 0], [-sy, 0, cy]])
    rz = np.array([[cz, -sz, 0], [sz, cz, 0], [0, 0, 1]])
    m = np.eye(4)
    m[:3, :3] = rz @ ry @ rx @ np.diag(scale)
    m[:3, 3] = origin
    return m


@dataclass
class Scene:
    width: float = 0.0
    height: float = 0.0
    camera: dict = field(default_factory=dict)
    layers: list[Layer] = field(default_factory=list)
    source: JsonFile = field(default_factory=lambda: JsonFile({}))
    fov: float = 50.0  # `general.fov`: a perspective camera's vertical field of view in degrees
    nearz: float = 0.01  # `general.nearz` and `farz`: a perspective camera's clipping, in scene units
    farz: float = 10000.0
    clear: tuple | None = None  # `general.clearcolor` (linear RGB 0..1) when `clearenabled` is not false


def _bool(value: Any, default: bool) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return value != 0
    return default


def _float(value: Any, default: float) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else default


def _animation_layer(d: dict, props: dict[str, UserProperty]) -> AnimationLayer:
    def num(key: str) -> float | None:
        v = resolve(d.get(key), props)
        return _float(v, 0.0) if v is not None else None
    anim = d.get("animation")
    return AnimationLayer(anim if isinstance(anim, int) and not isinstance(anim, bool) else None,
                          str(d.get("name", "")), _float(resolve(d.get("rate"), props), 1.0),
                          _float(resolve(d.get("blend"), props), 1.0), _bool(d.get("additive"), False),
                          num("blendin"), num("blendout"), _bool(resolve(d.get("visible"), props), True), d)


def _layer(d: dict, props: dict[str, UserProperty], puppets: set[str]) -> Layer:
    kind, asset = "group", ""
    for key, k in _ASSET_KEYS:
        if key in d:
            kind, asset = k, d[key] if isinstance(d[key], str) else ""
            break
    if kind == "image" and asset in puppets:
        kind = "puppet"
    r = {key: resolve(d.get(key), props) for key in ("origin", "scale", "angles", "parallaxDepth", "visible",
                                                         "alpha")}
    layer = Layer(kind, d.get("id") if isinstance(d.get("id"), int) else None, str(d.get("name", "")), asset,
                  vector(r["origin"], 3, (0, 0, 0)), vector(r["scale"], 3, (1, 1, 1)),
                  vector(r["angles"], 3, (0, 0, 0)), vector(r["parallaxDepth"], 2, (0, 0)),
                  _bool(r["visible"], True), _float(r["alpha"], 1.0),
                  d.get("parent") if isinstance(d.get("parent"), int) else None,
                  [e for e in d.get("effects") or [] if isinstance(e, dict)],
                  [_animation_layer(a, props) for a in d.get("animationlayers") or [] if isinstance(a, dict)], d)
    layer.read_values = _typed(layer)
    return layer


def _typed(layer: Layer) -> dict:
    return {"origin": tuple(layer.origin), "scale": tuple(layer.scale), "angles": tuple(layer.angles),
            "visible": layer.visible, "alpha": layer.alpha}


def read_scene(data: bytes, project: Project | None = None, puppets: set[str] = frozenset()) -> Scene:
    """scene.json as a Scene; `puppets` are the image models (models/*.json) that name a puppet `.mdl`."""
    src = JsonFile.parse(data, SCENE_FILE)
    d = src.doc
    props = project.properties if project else {}
    general = d.get("general") if isinstance(d.get("general"), dict) else {}
    ortho = general.get("orthogonalprojection") if isinstance(general.get("orthogonalprojection"), dict) else {}
    objects = d.get("objects") if isinstance(d.get("objects"), list) else []
    fov = _float(resolve(general.get("fov"), props), 50.0)
    nearz = _float(resolve(general.get("nearz"), props), 0.01)
    farz = _float(resolve(general.get("farz"), props), 10000.0)
    clear = None
    if _bool(resolve(general.get("clearenabled"), props), True) and general.get("clearcolor") is not None:
        clear = tuple(float(c) for c in vector(resolve(general.get("clearcolor"), props), 3, (0, 0, 0)))
    return Scene(_float(ortho.get("width"), 0.0), _float(ortho.get("height"), 0.0),
                 d.get("camera") if isinstance(d.get("camera"), dict) else {},
                 [_layer(o, props, set(puppets)) for o in objects if isinstance(o, dict)], src,
                 fov if 0 < fov < 180 else 50.0, nearz if nearz > 0 else 0.01,
                 farz if farz > max(nearz, 0) else 10000.0, clear)


def apply(scene: Scene) -> None:
    """Write each layer's changed typed values back into its document (a bound value keeps its binding and
    gets the new `value`); unchanged ones keep their spelling."""
    for layer in scene.layers:
        now = _typed(layer)
        for key, value in now.items():
            if value == layer.read_values[key]:  # tuples of floats compared exactly, as numbers
                continue
            text = format_vector(value) if key in ("origin", "scale", "angles") else value
            target = layer.doc.get(key)
            if _binding(target) is not None:
                target["value"] = text
            else:
                layer.doc[key] = text
        layer.read_values = now



# ------------------------------------------------------------------------------------------------------------
# folders

MODEL_JSON_LIMIT = 1 << 24  # a layer's model or material JSON: public ones are a few hundred bytes


def read_folder(folder: str) -> tuple[Project, Scene, list[str]]:
    """A project folder: project.json, the scene file it names and the model files of its image layers (to
    tell puppets from flat images). Warnings name model files that are missing or unreadable."""
    project, scene, warnings = read_path(os.path.join(folder, PROJECT_FILE))
    if scene is None:
        raise FormatError("; ".join(warnings), None, "file")
    return project, scene, warnings


def os_reason(e: OSError) -> str:
    """What an OSError says, without its errno prefix and path (the warning names the file itself)."""
    return (e.strerror or str(e) or type(e).__name__).lower()


def file_in(folder: str, raw: str) -> tuple[str | None, str | None]:
    """(the path of the file `raw` names, None) when it is a regular file inside `folder`, links resolved (a
    link leading out of the project is not followed), else (None, why not, for a warning that names the file
    and who refers to it)."""
    why = why_unsafe(raw)
    if why is not None:
        return None, why.replace("model's folder", "project folder")
    base = os.path.realpath(folder)
    path = os.path.join(base, *relative_parts(raw))
    real = os.path.realpath(path)
    if not real.startswith(base.rstrip(os.sep) + os.sep):
        return None, "a link leading out of the project folder: not followed"
    if not os.path.lexists(path):
        return None, "not in the project folder (a Wallpaper Engine built-in file?)"
    if not os.path.exists(real):
        return None, "a link to nothing"
    if not os.path.isfile(real):  # a FIFO would block, a device never end
        return None, "not a regular file"
    return path, None


def project_json(folder: str, raw: str, limit: int = MODEL_JSON_LIMIT) -> tuple[dict | None, str | None]:
    """(the JSON object of the project file `raw` names, None) when it is a regular file inside `folder` (links
    resolved) that reads as a JSON object, else (None, why not: the reason alone, for a warning that names the
    file and who refers to it)."""
    path, why = file_in(folder, raw)
    if path is None:
        return None, why
    try:
        return document(read_bytes(path, limit), raw), None
    except OSError as e:
        return None, f"cannot be read ({os_reason(e)})"
    except FormatError as e:
        return None, str(e)


def read_scene_in(folder: str, data: bytes, project: Project | None,
                  docs: dict | None = None) -> tuple[Scene, list[str]]:
    """A scene.json's bytes read with the model files of its image layers in `folder` (to tell puppets from
    flat images). Each model file is read once, however many layers name it (into `docs`, raw name →
    `project_json`'s answer, when given); a missing or unreadable one is one warning naming it and the layers
    that name it."""
    docs = {} if docs is None else docs
    puppets, refs = set(), {}
    for obj in document(data, SCENE_FILE).get("objects") or []:
        image = obj.get("image") if isinstance(obj, dict) else None
        if isinstance(image, str):
            refs.setdefault(image, []).append(str(obj.get("name", "")))
    warnings = []
    for image, names in refs.items():  # built-in models (models/util/solidlayer.json) are named by many layers
        if image not in docs:
            docs[image] = project_json(folder, image)
        model, why = docs[image]
        if model is None:
            more = f" and {len(names) - 1} more" if len(names) > 1 else ""
            warnings.append(f"model {image!r} of image layer {names[0]!r}{more}: {why}")
        elif isinstance(model.get("puppet"), str):
            puppets.add(image)
    return read_scene(data, project, puppets), warnings


def is_scene(data: bytes) -> bool:
    doc = document(data, SCENE_FILE)
    return "objects" in doc or "camera" in doc


def read_path(path: str, docs: dict | None = None) -> tuple[Project | None, Scene | None, list[str]]:
    """A project.json (with the scene it names, when that file is there) or a scene.json (with the project.json
    beside it, when there is one), read with the model files of its folder (into `docs`: `read_scene_in`); a
    package (`scene.pkg`, or a folder holding one) is read as its unpacked folder (pkg.py)."""
    _, folder, path, staged = locate(path)
    project, scene, warnings = _read_path(folder, path, docs)
    return project, scene, staged + warnings


def _read_path(folder: str, path: str, docs: dict | None) -> tuple[Project | None, Scene | None, list[str]]:
    data = read_bytes(path)
    if is_scene(data):
        project_path, _ = file_in(folder, PROJECT_FILE)  # none beside it, or a link leading out: no properties
        project = read_project(read_bytes(project_path)) if project_path is not None else None
        scene, warnings = read_scene_in(folder, data, project, docs)
        return project, scene, warnings
    project = read_project(data)
    scene_name = os.path.basename((project.file or SCENE_FILE).replace("\\", "/"))
    scene_path, why = file_in(folder, scene_name)
    # "Scene" in BlacRyu's Mega Man X and audio-bars projects: the public readers compare the type lowercased
    if project.type.lower() not in ("", "scene") or scene_path is None:
        reason = f": {why}" if why is not None and project.type.lower() in ("", "scene") else ""
        return project, None, [f"{project.type or 'this'} project has no scene file ({scene_name}){reason}"]
    scene, warnings = read_scene_in(folder, read_bytes(scene_path), project, docs)
    return project, scene, warnings
