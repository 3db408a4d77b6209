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
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..core.errors import FormatError
from ..core.fileio import read_bytes

PROJECT_FILE, SCENE_FILE = "project.json", "scene.json"
LAYER_KINDS = ("image", "puppet", "model", "particle", "sound", "text", "light", "group")
_ASSET_KEYS = (("image", "image"), ("model", "model"), ("particle", "particle"), ("sound", "sound"),
               ("text", "text"), ("light", "light"))


def format_json(doc: Any) -> bytes:
    """How our writer spells a document: tab-indented, keys in their order, non-ASCII kept, a final newline."""
    return (json.dumps(doc, indent="\t", ensure_ascii=False) + "\n").encode("utf-8")


# a whole string (kept as it is; one left open runs to the end, so no text is scanned twice); a comma after an
# opening bracket or another comma (kept: no value precedes it, and the strict parse refuses it again); or a
# comma after a value whose next non-space character closes an array or object (dropped)
_STRING_OR_TRAILING_COMMA = re.compile(r'("(?:[^"\\]|\\.)*(?:"|\\?\Z)|[\[{,]\s*,)|,(?=\s*[\]}])', re.S)


def loads(text: str) -> Any:
    """JSON as Wallpaper Engine reads it: a comma after the last item of an array or object is allowed (the
    public Shift_Hue and hueshift effect projects ship scene.json files with one). Strict JSON first; the
    comma is dropped only when that fails, and the file's bytes are still what is written back."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        relaxed = _STRING_OR_TRAILING_COMMA.sub(lambda m: m.group(1) or "", text)
        if relaxed == text:
            raise
        return json.loads(relaxed)


def _load(data: bytes, what: str) -> dict:
    try:
        doc = loads(data.decode("utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise FormatError(f"{what} is not JSON: {e}", getattr(e, "pos", 0), what) from None
    if not isinstance(doc, dict):
        raise FormatError(f"{what} holds a {type(doc).__name__}, not an object", 0, what)
    return doc


@dataclass
class JsonFile:
    """One JSON file: its bytes as read and the document; `dump` gives the bytes back while nothing changed."""
    doc: dict
    raw: bytes = b""
    snapshot: str = ""

    @classmethod
    def parse(cls, data: bytes, what: str) -> "JsonFile":
        doc = _load(data, what)
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


def format_vector(v) -> str:
    """Our spelling of a vector, five decimals as Wallpaper Engine's editor writes them."""
    return " ".join(f"{float(x):.5f}" for x in v)


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
    return Scene(_float(ortho.get("width"), 0.0), _float(ortho.get("height"), 0.0),
                 d.get("camera") if isinstance(d.get("camera"), dict) else {},
                 [_layer(o, props, set(puppets)) for o in objects if isinstance(o, dict)], src)


def apply(scene: Scene) -> None:
    """Write each layer's changed typed values back into its document (a bound value keeps its binding and
    gets the new `value`); unchanged ones keep their spelling."""
    for layer in scene.layers:
        now = _typed(layer)
        for key, value in now.items():
            if np.allclose(value, layer.read_values[key], rtol=0, atol=0) if key in ("origin", "scale", "angles") \
                    else value == layer.read_values[key]:
                continue
            text = format_vector(value) if key in ("origin", "scale", "angles") else value
            target = layer.doc.get(key)
            if _binding(target) is not None:
                target["value"] = text
            else:
                layer.doc[key] = text
        layer.read_values = now


# ------------------------------------------------------------------------------------------------------------
# summaries

def info(data: bytes, path: str = "") -> dict:
    """`skinbridge info` for a project.json or a scene.json (told apart by their keys)."""
    doc = _load(data, path or "project")
    if "objects" in doc or "camera" in doc:
        s = read_scene(data)
        kinds: dict[str, int] = {}
        for layer in s.layers:
            kinds[layer.kind] = kinds.get(layer.kind, 0) + 1
        return {"format": "scene.json", "size": [s.width, s.height], "layers": len(s.layers), "kinds": kinds,
                "animation_layers": sum(len(la.animation_layers) for la in s.layers),
                "effects": sum(len(la.effects) for la in s.layers),
                "vertices": 0, "triangles": 0, "bones": 0, "animations": [], "warnings": []}
    p = read_project(data)
    return {"format": "project.json", "title": p.title, "type": p.type, "file": p.file, "preview": p.preview,
            "properties": {n: {"type": u.type, "value": u.value} for n, u in p.properties.items()},
            "vertices": 0, "triangles": 0, "bones": 0, "animations": [], "warnings": []}


# ------------------------------------------------------------------------------------------------------------
# folders and our writer

def read_folder(folder: str) -> tuple[Project, Scene, list[str]]:
    """A project folder: project.json, the scene file it names and the model files of its image layers (to
    tell puppets from flat images). Warnings name model files that are missing or unreadable."""
    with open(os.path.join(folder, PROJECT_FILE), "rb") as f:
        project = read_project(f.read())
    scene_name = project.file or SCENE_FILE
    with open(os.path.join(folder, os.path.basename(scene_name)), "rb") as f:
        data = f.read()
    scene, warnings = read_scene_in(folder, data, project)
    return project, scene, warnings


def read_scene_in(folder: str, data: bytes, project: Project | None) -> tuple[Scene, list[str]]:
    """A scene.json's bytes read with the model files of its image layers in `folder` (to tell puppets from
    flat images)."""
    warnings, puppets, seen = [], set(), set()
    for obj in _load(data, SCENE_FILE).get("objects") or []:
        image = obj.get("image") if isinstance(obj, dict) else None
        if not isinstance(image, str) or image in seen:
            continue
        seen.add(image)  # built-in models (models/util/solidlayer.json) are named by many layers: warned once
        path = os.path.join(folder, *[p for p in image.replace("\\", "/").split("/") if p not in ("", ".", "..")])
        try:
            with open(path, "rb") as f:
                model = _load(f.read(), image)
        except (OSError, FormatError) as e:
            warnings.append(f"layer model {image!r}: {e}")
            continue
        if isinstance(model.get("puppet"), str):
            puppets.add(image)
    return read_scene(data, project, puppets), warnings


def is_scene(data: bytes) -> bool:
    doc = _load(data, SCENE_FILE)
    return "objects" in doc or "camera" in doc


def read_path(path: str) -> tuple[Project | None, Scene | None, list[str]]:
    """A project.json (with the scene it names, when that file is there) or a scene.json (with the project.json
    beside it, when there is one), read with the model files of its folder."""
    folder = os.path.dirname(os.path.abspath(path))
    data = read_bytes(path)
    project_path = os.path.join(folder, PROJECT_FILE)
    if is_scene(data):
        project = None
        if os.path.isfile(project_path):
            project = read_project(read_bytes(project_path))
        scene, warnings = read_scene_in(folder, data, project)
        return project, scene, warnings
    project = read_project(data)
    scene_path = os.path.join(folder, os.path.basename((project.file or SCENE_FILE).replace("\\", "/")))
    # "Scene" in BlacRyu's Mega Man X and audio-bars projects: the public readers compare the type lowercased
    if project.type.lower() not in ("", "scene") or not os.path.isfile(scene_path):
        return project, None, [f"{project.type or 'this'} project has no scene file ({os.path.basename(scene_path)})"]
    scene, warnings = read_scene_in(folder, read_bytes(scene_path), project)
    return project, scene, warnings


def info_file(data: bytes, path: str = "") -> dict:
    """`skinbridge info` of a project: title, scene size, layers by type, animation layers, effects and the user
    properties, read with the files of its folder (so puppets are told from flat images)."""
    if not path or not os.path.isfile(path):
        return info(data, path)
    project, scene, warnings = read_path(path)
    out = {"format": "Wallpaper Engine project", "file": os.path.basename(path), "warnings": warnings,
           "vertices": 0, "triangles": 0, "bones": 0, "animations": []}
    if project is not None:
        out.update(title=project.title, type=project.type, preview=project.preview,
                   properties={n: {"type": u.type, "value": u.value} for n, u in project.properties.items()})
    if scene is not None:
        kinds: dict[str, int] = {}
        for layer in scene.layers:
            kinds[layer.kind] = kinds.get(layer.kind, 0) + 1
        out.update(size=[scene.width, scene.height], layers=len(scene.layers), kinds=kinds,
                   layer_names=[f"{la.kind} {la.name!r}" + (f" ({la.asset})" if la.asset else "")
                                for la in scene.layers],
                   animation_layers=sum(len(la.animation_layers) for la in scene.layers),
                   effects=sum(len(la.effects) for la in scene.layers))
    return out


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


# ------------------------------------------------------------------------------------------------------------
# the project of a converted model (docs/wallpaper_engine.md §7, "Layer key sets")

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
