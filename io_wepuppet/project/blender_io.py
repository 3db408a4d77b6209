"""Wallpaper Engine projects in Blender: a `project.json` or `scene.json` built as a scene (docs/wallpaper_engine.md
§7): one collection named after the project holding the camera and one object per layer at the layer's place.

* image layer: a plane of the layer's size (else its texture's) with the texture of its material;
* puppet layer: the puppet imported as the puppet part's `import_wepuppet` imports a `.mdl` (its armature is the
  layer's object);
* model layer: the model imported likewise (its one top object, else an empty holding its objects);
* particle, sound, text, light and group layers: an empty holding the layer's JSON; they and the effects of
  the other layers are kept, not shown, and listed in one warning.

Every layer object holds its scene.json entry (`LAYER_PROP`) and the collection holds both JSON files as read
(`PROJECT_PROP`, `SCENE_PROP`), so nothing the import does not interpret is lost. Placement: scene pixels map
to Blender as a puppet's pixels do, p ↦ s · AXES · p (s = 0.01: 100 px = 1 m, +Y up → +Z up), so a layer's
Blender world matrix is A · T(origin) · Rz · Ry · Rx · S · A⁻¹ with A = s · AXES; a layer with a `parent` is
parented to that layer's object with this matrix as its local one. Import is atomic: every datablock it made
is removed again when a layer fails.

Export (`export_project`) writes the imported project back: the source folder's files as they were, scene.json
with the values changed in Blender, and the `.mdl` of each puppet or model Blender changed. A project imported
from a package (`scene.pkg`, pkg.py) is read from and written back from its unpacked files; with `package` the
export writes `scene.pkg` holding every file but project.json and its preview, which lie beside it (a workshop
item's folder), the entries in the imported package's order (new ones after them, sorted by path) with its magic.
"""
from __future__ import annotations

import contextvars
import json
import os
import shutil
import tempfile
from dataclasses import dataclass, field

import bpy
import numpy as np
from mathutils import Matrix

from ...blender import action as baction
from ...blender import scene as bscene
from ...core.errors import ExportError, FormatError
from ...core.fileio import makedirs, output_path, read_bytes, write_atomic
from ..puppet import blender_io as puppet_io
from ..puppet import convert
from ..puppet.units import METRES_PER_UNIT
from ..texture import blender_io as texture_io
from ..texture import blender_sheet
from ..texture.material import BLENDINGS, DEFAULT_BLENDING, blending, first_texture
from . import files as project_files
from . import pkg, project

LAYER_PROP = "skinbridge_we_layer"  # on a layer's object: its scene.json entry as JSON text
LAYER_INDEX_PROP = "skinbridge_we_layer_index"  # on a layer's object: its place in scene.json's objects
PROJECT_PROP, SCENE_PROP = "skinbridge_we_project", "skinbridge_we_scene"  # on the collection: the files' bytes
ROOT_PROP = "skinbridge_we_root"  # on the collection: the folder (or package) imported from, whose files export copies
OBJECTS_PROP = "skinbridge_we_objects"  # on the collection: each layer's object name as imported (JSON list)
PLANE_PROP = "skinbridge_we_plane"  # on an image layer's plane: its corners as imported (an edit is told)
TEX_PATH_PROP = "skinbridge_we_tex_path"  # on an image layer's image: its `.tex` relative to the project folder
_ID_COLLECTIONS = ("objects", "meshes", "armatures", "materials", "images", "collections", "actions", "cameras",
                   "worlds")
_KEPT_KINDS = ("particle", "sound", "text", "light", "group")


@dataclass
class ProjectResult:
    collection: object = None
    camera: object = None
    layers: list = field(default_factory=list)  # the object of each scene.json layer, in the file's order
    warnings: list[str] = field(default_factory=list)


def axes(metres_per_unit: float) -> np.ndarray:
    """A: scene pixels (x right, y up, z towards the viewer) → Blender metres, as convert maps a puppet."""
    a = np.eye(4)
    a[:3, :3] = metres_per_unit * convert.AXES
    return a


def layer_matrix(layer: project.Layer, metres_per_unit: float) -> np.ndarray:
    """The layer's matrix in Blender: A · layer.matrix() · A⁻¹ (its parent's space when it has a parent)."""
    a = axes(metres_per_unit)
    return a @ layer.matrix() @ np.linalg.inv(a)


# ------------------------------------------------------------------------------------------------------------
# files of the project

class _Files:
    """The project files one import or export uses, each read once however many layers name it (a scene of
    thousands of layers names a few models, materials and textures), and what it made of them: the image of
    each texture, the material of each image and the plane of each size and material, shared by the layers.
    A missing or unreadable file is one warning naming it and its first layer, with the count of the others."""

    def __init__(self, root: str, coll=None, docs: dict | None = None):
        self.root, self.coll = root, coll
        self.docs: dict[str, tuple] = {} if docs is None else docs  # raw name → project.project_json's answer
        self.paths: dict[str, tuple] = {}  # raw name → project.file_in's answer
        self.images: dict[str, object] = {}
        self.materials: dict[object, object] = {}
        self.meshes: dict[tuple, object] = {}
        self.warnings: list[str] = []
        self._warned: dict[object, list[int]] = {}  # key → [its warning's index, layers after the first]

    def warn(self, key, who: str, text: str) -> None:
        if key in self._warned:
            self._warned[key][1] += 1
            return
        self._warned[key] = [len(self.warnings), 0]
        self.warnings.append(f"{who}: {text}")

    def finished(self) -> list[str]:
        out = list(self.warnings)
        for at, more in self._warned.values():
            if more:
                out[at] += f" (and {more} more layer{'s' if more > 1 else ''})"
        return out

    def path(self, raw: str, who: str) -> str | None:
        """The project file `raw` names, when it is a regular file inside the project folder."""
        if raw not in self.paths:
            self.paths[raw] = project.file_in(self.root, raw) if self.root else (None, "no project folder")
        path, why = self.paths[raw]
        if path is None:
            self.warn(("file", raw), who, f"{raw!r}: {why}")
        return path

    def json(self, raw, who: str) -> dict | None:
        """The JSON object of the project file `raw` names."""
        if not isinstance(raw, str) or not raw:
            self.warn(("no file", who), who, "names no file")
            return None
        if raw not in self.docs:
            self.docs[raw] = project.project_json(self.root, raw) if self.root else (None, "no project folder")
        doc, why = self.docs[raw]
        if doc is None:
            self.warn(("file", raw), who, f"{raw!r}: {why}")
        return doc


def _texture_path(files: _Files, model_doc: dict, what: str) -> str | None:
    """The `.tex` of an image layer: its model JSON's material → that material's first texture."""
    material = model_doc.get("material")
    doc = files.json(material, what)
    name = first_texture(doc)
    if name is None:
        if doc is not None:
            files.warn(("no texture", material), what, f"its material {material} names no texture "
                                                         "(passes[0].textures[0])")
        return None
    return files.path(f"materials/{name}.tex", what)


def _blending(files: _Files, model_doc: dict, what: str) -> str:
    """How the layer's material (its model JSON's) is put over what is behind it; a mode we do not draw is drawn
    as the default, translucent, with one warning per material."""
    material = model_doc.get("material")
    mode = blending(files.json(material, what)) if isinstance(material, str) and material else DEFAULT_BLENDING
    if mode not in BLENDINGS:
        files.warn(("blending", material), what, f"its material {material} blends {mode!r}, which is not drawn: "
                                                 f"drawn {DEFAULT_BLENDING} (alpha-blended)")
        return DEFAULT_BLENDING
    return mode


def _image(context, files: _Files, tex_path: str, what: str):
    """The Blender image of the texture `tex_path`, imported once for every layer that shows it."""
    if tex_path not in files.images:
        img = None
        try:
            img, more = texture_io.import_texture(context, tex_path)
            img[TEX_PATH_PROP] = os.path.relpath(tex_path, files.root).replace(os.sep, "/")
            files.warnings += [f"{what}: {w}" for w in more]
        except FormatError as e:
            files.warn(("texture", tex_path), what, f"{os.path.basename(tex_path)}: {e}")
        except OSError as e:
            files.warn(("texture", tex_path), what, f"{os.path.basename(tex_path)} cannot be read "
                                                    f"({project.os_reason(e)})")
        files.images[tex_path] = img
    elif files.images[tex_path] is None:
        files.warn(("texture", tex_path), what, "")
    return files.images[tex_path]


# ------------------------------------------------------------------------------------------------------------
# layers

def image_material(name: str, img, mode: str = DEFAULT_BLENDING) -> bpy.types.Material:
    """An image layer's material: its texture unlit, its alpha times the layer's `alpha`, put over what is
    behind it as the material's `blending` says (`blend_mode`)."""
    mat = bpy.data.materials.new(name)
    if mat.node_tree is None:  # Blender 5 gives every new material a node tree
        mat.use_nodes = True
    nt = mat.node_tree
    bsdf = next(n for n in nt.nodes if n.type == "BSDF_PRINCIPLED")
    if img is not None:
        node = nt.nodes.new("ShaderNodeTexImage")
        node.image = img
        blender_sheet.use_sequence(node.image_user, img, bpy.context.scene)
        node.location = (-400, 300)
        nt.links.new(node.outputs["Color"], bsdf.inputs["Base Color"])
        unlit(nt, bsdf, node)
        if mode in OPAQUE_BLENDINGS:
            _opaque(nt, bsdf, node.outputs["Alpha"])
        else:
            # the texture's alpha times the layer's `alpha` (the object's colour alpha: one material per texture)
            info = nt.nodes.new("ShaderNodeObjectInfo")
            info.location = (-400, -50)
            times = nt.nodes.new("ShaderNodeMath")
            times.operation = "MULTIPLY"
            times.location = (-200, 0)
            nt.links.new(node.outputs["Alpha"], times.inputs[0])
            nt.links.new(info.outputs["Alpha"], times.inputs[1])
            nt.links.new(times.outputs[0], bsdf.inputs["Alpha"])
            blend_mode(nt, bsdf, info.outputs["Alpha"], mode)
    else:  # a built-in, missing or solid layer: what Wallpaper Engine draws there is not ours to guess
        bsdf.inputs["Alpha"].default_value = 0.0
    blended(mat)
    return mat


OPAQUE_BLENDINGS = ("normal", "disabled")  # no blending: the texture's colour replaces what is behind


def _opaque(nt, bsdf, tex_alpha) -> None:
    """The surface's alpha 1 (max(a, 1)): the texture's alpha stays read, since Blender premultiplies an image
    texture's colour by its alpha when nothing reads the alpha, and an opaque layer shows the colour as stored."""
    for link in list(bsdf.inputs["Alpha"].links):
        nt.links.remove(link)
    one = nt.nodes.new("ShaderNodeMath")
    one.operation, one.location = "MAXIMUM", (-200, 0)
    one.inputs[1].default_value = 1.0
    nt.links.new(tex_alpha, one.inputs[0])
    nt.links.new(one.outputs[0], bsdf.inputs["Alpha"])


def blend_mode(nt, bsdf, layer_alpha, mode: str) -> None:
    """The principled surface `bsdf` (emitting the texture's colour c, its alpha a linked: the texture's times
    the layer's) put over what is behind it (d) as a material pass's `blending` says: translucent (and
    alphatocoverage, and any mode we do not draw) c·a + d·(1 − a), the surface as it is; additive c·a + d, a
    transparent surface of colour a added to it; translucent_pa (a texture premultiplied by its alpha)
    c·α + d·(1 − a) with α the layer's alpha (`layer_alpha`, None: 1): the surface's alpha becomes α and a
    transparent surface of colour α − a is added. Normal and disabled (`OPAQUE_BLENDINGS`) are the surface with
    alpha 1 (`_opaque`): c. Blender mixes these in linear light."""
    if mode not in ("additive", "translucent_pa"):
        return
    alpha = bsdf.inputs["Alpha"].links[0].from_socket
    out = next(n for n in nt.nodes if n.type == "OUTPUT_MATERIAL")
    clear, add = nt.nodes.new("ShaderNodeBsdfTransparent"), nt.nodes.new("ShaderNodeAddShader")
    clear.location, add.location = (100, -450), (400, -300)
    if mode == "additive":  # (c·a + d·(1 − a)) + d·a
        nt.links.new(alpha, clear.inputs["Color"])
    else:  # (c·α + d·(1 − α)) + d·(α − a)
        rest = nt.nodes.new("ShaderNodeMath")
        rest.operation, rest.location = "SUBTRACT", (-100, -450)
        if layer_alpha is not None:
            nt.links.new(layer_alpha, rest.inputs[0])
            nt.links.new(layer_alpha, bsdf.inputs["Alpha"])
        else:
            rest.inputs[0].default_value = 1.0
            nt.links.remove(bsdf.inputs["Alpha"].links[0])
            bsdf.inputs["Alpha"].default_value = 1.0
        nt.links.new(alpha, rest.inputs[1])
        nt.links.new(rest.outputs[0], clear.inputs["Color"])
    nt.links.new(bsdf.outputs[0], add.inputs[0])
    nt.links.new(clear.outputs[0], add.inputs[1])
    nt.links.new(add.outputs[0], out.inputs["Surface"])


def blended(mat) -> None:
    """A layer's material drawn as Wallpaper Engine draws layers: alpha-blended over what is behind it, the
    blended surfaces sorted per object by their distance to the camera (EEVEE), so the order offsets of
    `_order` decide which layer is in front."""
    if hasattr(mat, "surface_render_method"):
        mat.surface_render_method = "BLENDED"
    mat.use_transparency_overlap = True


def _image_layer(context, files: _Files, layer: project.Layer, metres_per_unit: float, props: dict):
    what = f"image layer {layer.name!r}"
    model_doc = files.json(layer.asset, what) or {}
    tex_path = _texture_path(files, model_doc, what) if model_doc else None
    img = _image(context, files, tex_path, what) if tex_path is not None else None
    size = project.resolve(layer.doc.get("size"), props)
    w, h = project.vector(size, 2, (0, 0)) if size is not None else (0.0, 0.0)
    if not (w > 0 and h > 0):
        w, h = (img.size[0], img.size[1]) if img is not None else (0.0, 0.0)
    if not (w > 0 and h > 0):
        files.warn(("no size",), what, "no size and no texture: shown 100 × 100 pixels")
        w = h = 100.0
    mode = _blending(files, model_doc, what) if model_doc else DEFAULT_BLENDING
    mat = files.materials.get((tex_path, mode))
    if mat is None:
        stem = os.path.splitext(os.path.basename(tex_path))[0] if tex_path else "image"
        mat = files.materials[(tex_path, mode)] = image_material(stem, img, mode)
        if tex_path is not None:  # where an image put on this material in Blender is written
            mat[TEX_PATH_PROP] = os.path.relpath(tex_path, files.root).replace(os.sep, "/")
    me = files.meshes.get((w, h, tex_path, mode))
    if me is None:  # the plane in the layer's own pixels, centred on its origin, mapped as puppet pixels are
        corners = np.array([[-w / 2, -h / 2, 0], [w / 2, -h / 2, 0], [w / 2, h / 2, 0], [-w / 2, h / 2, 0]])
        me = files.meshes[(w, h, tex_path, mode)] = bpy.data.meshes.new(layer.name or "image")
        me.from_pydata((corners @ (metres_per_unit * convert.AXES).T).tolist(), [], [(0, 1, 2, 3)])
        me[PLANE_PROP] = (corners @ (metres_per_unit * convert.AXES).T).ravel().tolist()
        uv = me.uv_layers.new(name="UVMap")
        uv.uv.foreach_set("vector", [0, 0, 1, 0, 1, 1, 0, 1])
        me.materials.append(mat)
    ob = bpy.data.objects.new(layer.name or "image", me)
    ob.color = (1.0, 1.0, 1.0, min(max(layer.alpha, 0.0), 1.0))
    files.coll.objects.link(ob)
    return ob


def _texture_alpha(mat, mode: str = DEFAULT_BLENDING) -> None:
    """A puppet's material drawn as its texture is (`unlit`), cut out by its alpha where nothing else is linked
    to the surface's alpha, put over what is behind it as its `blending` says (`blend_mode`)."""
    nt = mat.node_tree
    bsdf = next((n for n in nt.nodes if n.type == "BSDF_PRINCIPLED"), None) if nt is not None else None
    tex = next((n for n in nt.nodes if n.type == "TEX_IMAGE" and n.image is not None), None) if bsdf else None
    if tex is not None and mode in OPAQUE_BLENDINGS:
        _opaque(nt, bsdf, tex.outputs["Alpha"])
    elif tex is not None and not bsdf.inputs["Alpha"].is_linked:
        nt.links.new(tex.outputs["Alpha"], bsdf.inputs["Alpha"])
    if tex is not None:
        unlit(nt, bsdf, tex)
        blend_mode(nt, bsdf, None, mode)


def unlit(nt, bsdf, tex) -> None:
    """Wallpaper Engine draws a layer's texture as it is, unlit: the texture is the surface's emission too (the
    world lights nothing, `_clear`)."""
    if not bsdf.inputs["Emission Color"].is_linked:
        nt.links.new(tex.outputs["Color"], bsdf.inputs["Emission Color"])
        bsdf.inputs["Emission Strength"].default_value = 1.0


def _model_path(files: _Files, layer: project.Layer) -> str | None:
    """The `.mdl` of a puppet or model layer: named directly, or by the `puppet` of the model JSON named."""
    what = f"{layer.kind} layer {layer.name!r}"
    raw = layer.asset
    if not raw.lower().endswith(".mdl"):
        doc = files.json(raw, what)
        raw = doc.get("puppet") if doc is not None else None
        if not isinstance(raw, str):
            if doc is not None:
                files.warn(("no mdl", layer.asset), what, f"{layer.asset!r} names no .mdl")
            return None
    return files.path(raw, what)


def _clip_actions(arm_ob) -> dict[int, object]:
    """The armature's actions by the MDLA clip id each keeps."""
    out = {}
    for act in baction.armature_actions(arm_ob, strict=False):  # at import: never refuses
        clip = bscene.json_prop(act, puppet_io.PROP).get("id")
        if isinstance(clip, int):
            out.setdefault(clip, act)
    return out


def _set_influence(strip, weight: float) -> None:
    """A strip's influence only acts while animated: Blender keys it when switched on, so the key is set too."""
    strip.use_animated_influence = True
    strip.influence = weight
    fc = strip.fcurves.find("influence")
    if fc is not None:
        for key in fc.keyframe_points:
            key.co.y = key.handle_left.y = key.handle_right.y = weight
        fc.update()


def _clip_strip(track, act, al: project.AnimationLayer, start: float, reverse: bool = False):
    """One strip of the clip's action at `start`: scale 1 / `rate`, Combine (additive) or Replace, `blend` as its
    influence, played backwards when `reverse`."""
    strip = track.strips.new(track.name, int(np.floor(start)), act)
    slot = next((sl for sl in act.slots if sl.target_id_type == "OBJECT"), None)
    if slot is not None and hasattr(strip, "action_slot"):
        strip.action_slot = slot
    if al.rate > 0:
        strip.scale = 1.0 / al.rate
    if start != np.floor(start):
        strip.frame_start_ui = start
    # Combine adds locations but multiplies rotations (and scales), so an additive clip whose frame 0 is
    # the bind pose adds its change since frame 0 as the public reader does; Add would sum quaternions
    strip.blend_type = "COMBINE" if al.additive else "REPLACE"
    strip.use_reverse = reverse
    _set_influence(strip, min(max(al.blend, 0.0), 1.0))
    return strip


def _play_modes(context, played: list) -> None:
    """Each clip played as its mode says over the scene's range, which becomes the longest visible clip at its
    rate (twice that for a mirrored one: there and back): a loop repeats its strip (NLA repeat), a mirrored
    clip alternates forward and reversed strips, a single one plays once and holds."""
    def period(item) -> float:
        _, strip, mode, _ = item
        return (strip.frame_end - strip.frame_start) * (2 if mode == "mirror" else 1)
    shown = [item for item in played if not item[0].mute] or played
    if not shown:
        return
    start = min(item[1].frame_start for item in played)
    end = start + max(period(item) for item in shown)
    scene = context.scene
    scene.frame_end = min(max(int(np.ceil(end - 1e-6)), scene.frame_start + 1), 1048574)
    for track, strip, mode, al in played:
        cycle = strip.frame_end - strip.frame_start
        count = int(np.ceil((end - strip.frame_start) / cycle - 1e-6)) if cycle > 0 else 1
        if mode == "loop" and count > 1:
            strip.repeat = float(count)
        elif mode == "mirror":
            for c in range(1, count):
                _clip_strip(track, strip.action, al, strip.frame_start + c * cycle, reverse=c % 2 == 1)


def _animation_tracks(context, arm_ob, layer: project.Layer, warnings: list[str]) -> None:
    """One NLA track per animation layer, in the layers' order (later tracks evaluate on top): the clip's action
    played at `rate` (strip scale 1 / rate), its weight `blend` as the strip's influence, additive layers blended
    with Combine, blend-in/out in frames of the scene's rate, hidden layers muted; the clip's play mode as
    `_play_modes` says."""
    if not layer.animation_layers:
        return
    actions = _clip_actions(arm_ob)
    ad = arm_ob.animation_data or arm_ob.animation_data_create()
    fps = baction.fps_of(context.scene)
    played = []
    for k, al in enumerate(layer.animation_layers):
        act = actions.get(al.animation)
        if act is None:
            warnings.append(f"puppet layer {layer.name!r}: animation layer {al.name or k!r} plays clip "
                            f"{al.animation}, which the puppet lacks: not added")
            continue
        track = ad.nla_tracks.new()
        track.name = al.name or f"layer {k + 1}"
        strip = _clip_strip(track, act, al, float(np.floor(act.frame_range[0])))
        length = strip.frame_end - strip.frame_start
        strip.blend_in = min(max((al.blend_in or 0.0) * fps, 0.0), length)
        strip.blend_out = min(max((al.blend_out or 0.0) * fps, 0.0), length - strip.blend_in)
        track.mute = not al.visible
        mode = str(bscene.json_prop(act, puppet_io.PROP).get("mode") or "loop")
        played.append((track, strip, mode if mode in ("loop", "mirror", "single") else "loop", al))
    _play_modes(context, played)
    puppet_io.play_additive_strips(context, arm_ob)  # additive layers add the clip's change since frame 0
    ad.action = None  # the tracks play the layers; an active action would replace them


def _model_layer(context, files: _Files, layer: project.Layer, metres_per_unit: float, owned: list):
    """A puppet or model layer's object (its armature, its one top object, else an empty holding its objects);
    every object the import made goes into `owned`."""
    path = _model_path(files, layer)
    if path is None:
        return None
    result = puppet_io.import_wepuppet(context, path, metres_per_unit)
    owned += result.objects
    files.warnings += [f"{layer.kind} layer {layer.name!r}: {w}" for w in result.warnings]
    if layer.kind == "puppet":  # a puppet is a textured layer: its texture's alpha cuts it out, blended
        model_doc = files.json(layer.asset, f"puppet layer {layer.name!r}") or {}
        tex_path = _texture_path(files, model_doc, f"puppet layer {layer.name!r}") if model_doc else None
        rel = os.path.relpath(tex_path, files.root).replace(os.sep, "/") if tex_path else None
        mode = _blending(files, model_doc, f"puppet layer {layer.name!r}") if model_doc else DEFAULT_BLENDING
        for mat in {m for ob in result.objects if ob.type == "MESH" for m in ob.data.materials if m is not None}:
            _texture_alpha(mat, mode)
            blended(mat)
            if rel is not None:  # its texture, written back when edited in Blender (`_sheets`)
                mat[TEX_PATH_PROP] = rel
                for n in mat.node_tree.nodes if mat.node_tree else ():
                    if n.type == "TEX_IMAGE" and n.image is not None and texture_io.TEX_PROP in n.image:
                        n.image[TEX_PATH_PROP] = rel
    if result.armature is not None:
        _animation_tracks(context, result.armature, layer, files.warnings)
        return result.armature
    tops = [ob for ob in result.objects if ob.parent is None]
    if len(tops) == 1:
        return tops[0]
    holder = _empty(files.coll, layer.name or os.path.basename(path))
    for ob in tops:
        ob.parent = holder
    return holder


def _empty(coll, name: str):
    ob = bpy.data.objects.new(name, None)
    ob.empty_display_type = "PLAIN_AXES"
    coll.objects.link(ob)  # linked to the project's collection itself: no walk of the view layer per object
    return ob


def _kept_note(layer: project.Layer) -> list[str]:
    """What of this layer the import keeps as data without showing it."""
    notes = []
    if layer.kind in _KEPT_KINDS:
        notes.append(f"{layer.kind} {layer.name!r}" + (f" ({layer.asset})" if layer.asset else ""))
    for effect in layer.effects:
        notes.append(f"effect {effect.get('file', '?')!s} on {layer.name!r}")
    scripted = [k for k, v in layer.doc.items() if isinstance(v, dict) and "script" in v]
    if scripted:  # drawn with the value stored beside the script (`project.resolve`)
        notes.append(f"script on {layer.name!r} ({', '.join(scripted)}: not run, its stored value drawn)")
    return notes


def _build_layer(context, files: _Files, layer: project.Layer, metres_per_unit: float, props: dict, owned: list):
    """The layer's object; it and every other object made for the layer go into `owned`."""
    if layer.kind == "image":
        ob = _image_layer(context, files, layer, metres_per_unit, props)
    elif layer.kind in ("puppet", "model"):
        ob = _model_layer(context, files, layer, metres_per_unit, owned)
    else:
        ob = None
    if ob is None:  # kept as data, or its file is missing: the place and the JSON still come in
        ob = _empty(files.coll, layer.name or layer.kind)
    if ob not in owned:
        owned.append(ob)
    ob[LAYER_PROP] = json.dumps(layer.doc, ensure_ascii=False)
    return ob


def _place(objects: list, layers: list[project.Layer], owned: list[list], metres_per_unit: float) -> list:
    """Each layer's object at its place, parented to its parent layer's object; a hidden layer hides what was
    made for it and for the layers under it (walked once, from our own lists: Blender's `children_recursive`
    scans every object of the file each time it is asked)."""
    by_id = {la.id: k for k, la in enumerate(layers) if la.id is not None}
    children: dict[int, list[int]] = {}
    own = [layer_matrix(layer, metres_per_unit) for layer in layers]  # each layer's matrix, returned for `_order`
    for k, (ob, layer) in enumerate(zip(objects, layers)):
        m = Matrix(own[k].tolist())
        p = by_id.get(layer.parent) if layer.parent is not None else None
        if p is not None and objects[p] is not ob:
            ob.parent = objects[p]
            ob.matrix_parent_inverse = Matrix.Identity(4)
            ob.matrix_basis = m
            children.setdefault(p, []).append(k)
        else:
            ob.matrix_world = m
    hidden = [k for k, layer in enumerate(layers) if not layer.visible]
    done = set(hidden)
    while hidden:
        k = hidden.pop()
        for o in owned[k]:
            o.hide_render = o.hide_viewport = True
        for c in children.get(k, ()):
            if c not in done:
                done.add(c)
                hidden.append(c)
    return own


ORDER_SPAN = 1e-3  # the order offsets span this share of the camera's distance (docs/wallpaper_engine.md §7)


def _worlds(layers: list[project.Layer], objects: list, own: list) -> list:
    """Each layer's world matrix as `_place` puts it (numpy, no depsgraph); None under a parent cycle."""
    by_id = {la.id: k for k, la in enumerate(layers) if la.id is not None}
    out: list = [None] * len(layers)
    for k in range(len(layers)):
        chain, j = [], k
        while j is not None and out[j] is None and j not in chain:
            chain.append(j)
            p = by_id.get(layers[j].parent) if layers[j].parent is not None else None
            j = p if p is not None and objects[p] is not objects[j] else None
        if j is not None and out[j] is None:  # a cycle: left where Blender puts it
            continue
        for i in reversed(chain):
            p = by_id.get(layers[i].parent) if layers[i].parent is not None else None
            p = p if p is not None and objects[p] is not objects[i] else None
            out[i] = own[i] if p is None else out[p] @ own[i]
    return out


def _order(objects: list, layers: list[project.Layer], camera, own: list) -> bool:
    """Wallpaper Engine draws the layers in scene.json's order; Blender by depth (and blended surfaces sorted by
    their distance to the camera). So layer k is brought towards the camera by k steps, as delta transforms
    (export takes them out again): along the view under an orthographic camera, and under a perspective one
    scaled about the eye by 1 − k·step, which keeps its projected size and place."""
    n = len(layers)
    if n < 2 or camera is None:
        return False
    cam = np.array(camera.matrix_world, np.float64)
    eye, back = cam[:3, 3], cam[:3, 2]  # the camera looks along −Z: +Z points back at it
    ortho = camera.data.type == "ORTHO"
    distance = camera.data.ortho_scale if ortho else 1.0
    step = ORDER_SPAN / n
    worlds = _worlds(layers, objects, own)
    by_id = {la.id: k for k, la in enumerate(layers) if la.id is not None}
    for k, (ob, layer) in enumerate(zip(objects, layers)):
        p = by_id.get(layer.parent) if layer.parent is not None else None
        p = p if p is not None and objects[p] is not ob else None
        if worlds[k] is None or (p is not None and worlds[p] is None):
            continue
        try:
            if ortho:
                move = back * distance * step * (k - p if p is not None else k)
                local = move if p is None else np.linalg.solve(worlds[p][:3, :3], move)
                ob.delta_location = local.tolist()
                continue
            g = (1.0 - step * k) / (1.0 - step * p if p is not None else 1.0)
            e = eye if p is None else np.linalg.solve(worlds[p], np.append(eye, 1.0))[:3]
            ob.delta_location = ((1.0 - g) * (e - own[k][:3, 3])).tolist()
            ob.delta_scale = (g, g, g)
        except np.linalg.LinAlgError:  # under a parent scaled to 0: nothing of it is seen
            continue
    return True


def _without_order(ob, m: np.ndarray) -> np.ndarray:
    """An object's basis matrix `m` without the delta transforms `_order` gave it."""
    m = m.copy()
    ds = np.array(ob.delta_scale, np.float64)
    m[:3, :3] = m[:3, :3] / np.where(ds != 0, ds, 1.0)
    m[:3, 3] -= np.array(ob.delta_location, np.float64)
    return m


# ------------------------------------------------------------------------------------------------------------
# the scene

def _camera(context, scene: project.Scene, metres_per_unit: float, collection):
    """An orthographic camera looking along the scene's eye → centre over its width × height pixels, centred on
    the scene (a perspective one at `eye` where the scene has no orthogonal size); the render takes the scene's
    size."""
    w, h = scene.width, scene.height
    cam = scene.camera
    centre = project.vector(project.resolve(cam.get("center"), {}), 3, (w / 2, h / 2, 0))
    eye = project.vector(project.resolve(cam.get("eye"), {}), 3, (centre[0], centre[1], centre[2] + 1))
    up = project.vector(project.resolve(cam.get("up"), {}), 3, (0, 1, 0))
    a = metres_per_unit * convert.AXES
    forward = a @ (centre - eye)
    forward = forward / np.linalg.norm(forward) if np.linalg.norm(forward) > 0 else np.array([0.0, 1, 0])
    right = np.cross(forward, a @ up)
    right = right / np.linalg.norm(right) if np.linalg.norm(right) > 0 else np.array([1.0, 0, 0])
    m = np.eye(4)
    m[:3, :3] = np.column_stack([right, np.cross(right, forward), -forward])
    data = bpy.data.cameras.new("Camera")
    ob = bpy.data.objects.new("Camera", data)
    collection.objects.link(ob)
    if w > 0 and h > 0:
        data.type = "ORTHO"
        data.ortho_scale = metres_per_unit * max(w, h)
        distance = metres_per_unit * max(w, h)  # in front of every layer whose depth is within the scene's size
        # the view is the scene's 0..w × 0..h whatever the camera's x and y: Wallpaper Engine's own 2D scenes
        # (all of BlacRyu's) look from 0 0 0 at 0 0 −1 while their full-scene layers sit at (w/2, h/2)
        m[:3, 3] = a @ np.array([w / 2, h / 2, centre[2]]) - forward * distance
        data.clip_end = 4 * distance
        context.scene.render.resolution_x, context.scene.render.resolution_y = int(w), int(h)
        context.scene.render.resolution_percentage = 100
    else:  # the scene's vertical field of view and clipping (scene units)
        m[:3, 3] = a @ eye
        data.sensor_fit = "VERTICAL"
        data.angle_y = np.radians(scene.fov)
        data.clip_start, data.clip_end = metres_per_unit * scene.nearz, metres_per_unit * scene.farz
    ob.matrix_world = Matrix(m.tolist())
    context.scene.camera = ob
    return ob


def _clear(context, scene: project.Scene, title: str) -> None:
    """The scene's clear colour as the world's background (an sRGB colour made linear), seen as it is: the
    Standard view transform."""
    if scene.clear is None:
        return
    c = np.clip(np.array(scene.clear, np.float64), 0.0, 1.0)
    linear = np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)
    world = bpy.data.worlds.new(f"{title} (clear colour)")
    world.color = linear.tolist()
    if world.node_tree is None:  # Blender 5 gives every new world a node tree
        world.use_nodes = True
    nt = world.node_tree
    bg = next((n for n in nt.nodes if n.type == "BACKGROUND"), None)
    out = next((n for n in nt.nodes if n.type == "OUTPUT_WORLD"), None)
    if bg is not None and out is not None:  # seen behind the layers, lighting nothing (layers are unlit)
        bg.inputs["Color"].default_value = (*linear.tolist(), 1.0)
        bg.inputs["Strength"].default_value = 1.0
        dark = nt.nodes.new("ShaderNodeBackground")
        dark.inputs["Color"].default_value = (0.0, 0.0, 0.0, 1.0)
        path, mix = nt.nodes.new("ShaderNodeLightPath"), nt.nodes.new("ShaderNodeMixShader")
        nt.links.new(path.outputs["Is Camera Ray"], mix.inputs[0])
        nt.links.new(dark.outputs[0], mix.inputs[1])
        nt.links.new(bg.outputs[0], mix.inputs[2])
        nt.links.new(mix.outputs[0], out.inputs["Surface"])
    context.scene.world = world
    context.scene.view_settings.view_transform = "Standard"


def _activate(view_layer, collection) -> None:
    """Make `collection` the one new objects go into (a layer collection is found by walking the tree)."""
    todo = [view_layer.layer_collection]
    while todo:
        lc = todo.pop()
        if lc.collection == collection:
            view_layer.active_layer_collection = lc
            return
        todo += list(lc.children)


def _collection(context, name: str):
    coll = bpy.data.collections.new(name)
    context.scene.collection.children.link(coll)
    return coll


def import_project(context, path: str, metres_per_unit: float = METRES_PER_UNIT) -> ProjectResult:
    """Build the project of `path` (its project.json or scene.json) in Blender; atomic."""
    if not metres_per_unit > 0:
        raise FormatError(f"metres per unit {metres_per_unit} is not positive")
    docs: dict = {}  # the layers' model files, read once: a missing or unreadable one is warned of with its layers
    proj, scene, warnings = project.read_path(path, docs)
    if scene is None:
        raise FormatError(f"{os.path.basename(path)}: {'; '.join(warnings)}", None, "file")
    home, root, _, staged = pkg.locate(path)  # the package's files: read once (pkg.unpacked), here found again
    title = (proj.title if proj is not None else "") or os.path.basename(os.path.dirname(os.path.abspath(path)))
    title = title or "project"
    props = proj.properties if proj is not None else {}
    result = ProjectResult()
    before = bscene.snapshot_ids(_ID_COLLECTIONS)
    view_layer = context.view_layer
    active = view_layer.active_layer_collection.collection
    world, transform = context.scene.world, context.scene.view_settings.view_transform
    try:
        result.collection = coll = _collection(context, title)
        coll[SCENE_PROP] = scene.source.raw
        if proj is not None:
            coll[PROJECT_PROP] = proj.source.raw
        _activate(view_layer, coll)
        result.camera = _camera(context, scene, metres_per_unit, coll)
        _clear(context, scene, title)
        coll[ROOT_PROP] = home
        files = _Files(root, coll, docs)
        owned: list[list] = []
        for k, layer in enumerate(scene.layers):
            owned.append([])
            result.layers.append(_build_layer(context, files, layer, metres_per_unit, props, owned[-1]))
            result.layers[-1][LAYER_INDEX_PROP] = k
        coll[OBJECTS_PROP] = json.dumps([ob.name for ob in result.layers])
        own = _place(result.layers, scene.layers, owned, metres_per_unit)
        if _order(result.layers, scene.layers, result.camera, own):
            view_layer.update()  # world matrices with the offsets, as a script reading them next expects
        result.warnings = staged + files.finished()
        if root != home:  # a package's files are named inside it, never in the private folder they are read from
            result.warnings = [w.replace(root, home) for w in result.warnings]
        kept = [note for layer in scene.layers for note in _kept_note(layer)]
        if kept:
            result.warnings.append(f"kept as data, not shown ({len(kept)}): " + "; ".join(kept))
        bscene.failure_point("done")
    except BaseException:
        _activate(view_layer, active)
        context.scene.world, context.scene.view_settings.view_transform = world, transform
        bscene.remove_new(before)
        raise
    _activate(view_layer, active)
    return result


def blender_import(context, path: str, options=None) -> list[str]:
    # `convert` imports with the import options' defaults (FormatSpec.import_options)
    return import_project(context, path).warnings


# ------------------------------------------------------------------------------------------------------------
# export: the imported project written back

def project_collection(context, collection: str | None = None):
    """The imported project to export: in a Collection Exporter (`collection`) the project that collection is
    or holds, never one of another collection; else the one holding the active object, else the only one in
    the file. None when no project is there (the scope's model then becomes a new project)."""
    colls = [c for c in bpy.data.collections if SCENE_PROP in c]
    if collection:
        scope = bpy.data.collections.get(collection)
        if scope is None:
            raise ExportError(f"the collection {collection!r} does not exist")
        names = {scope.name, *(c.name for c in scope.children_recursive)}
        mine = [c for c in colls if c.name in names]
        if len(mine) > 1:
            raise ExportError(f"the collection {collection} holds {len(mine)} projects "
                              f"({', '.join(c.name for c in mine)}): give each its own exporter")
        return mine[0] if mine else None
    ob = context.view_layer.objects.active
    if ob is not None:
        mine = [c for c in colls if ob.name in c.all_objects]
        if mine:
            return mine[0]
    if len(colls) > 1:
        raise ExportError(f"{len(colls)} projects imported ({', '.join(c.name for c in colls)}): make an object of "
                          "the one to export active")
    return colls[0] if colls else None


def _decompose(m: np.ndarray, signs=(1.0, 1.0, 1.0)) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """origin, angles (x, y, z radians, for Rz · Ry · Rx) and scale of a matrix T · Rz · Ry · Rx · S. A matrix
    holds a scale's signs only up to a turn: the scale takes the signs `signs` (the layer's own) while they
    give the matrix's handedness, else x's sign flips; so a mirrored layer keeps its negative scale, not a
    half turn."""
    lin = m[:3, :3]
    signs = np.where(np.asarray(signs, np.float64) < 0, -1.0, 1.0)
    if (np.linalg.det(lin) < 0) != (np.prod(signs) < 0):
        signs[0] = -signs[0]
    scale = np.linalg.norm(lin, axis=0) * signs
    r = lin / np.where(scale != 0, scale, 1.0)
    ay = np.arcsin(np.clip(-r[2, 0], -1.0, 1.0))
    return m[:3, 3].copy(), np.array([np.arctan2(r[2, 1], r[2, 2]), ay, np.arctan2(r[1, 0], r[0, 0])]), scale


def _update_place(layer: project.Layer, ob, metres_per_unit: float) -> None:
    """The layer's typed origin, angles, scale and visibility from its object, each only where it moved more
    than float32 keeps (so an untouched layer keeps its file's spelling). A scale of 0 (legal in Wallpaper
    Engine: public projects hide layers so) leaves no rotation in the matrix: the layer's angles are kept while
    they still give the matrix."""
    layer.visible = not ob.hide_render
    parented = ob.parent is not None and LAYER_PROP in ob.parent
    if parented or ob.parent is None:  # the basis: the world matrix of an object without parent
        m = _without_order(ob, np.array(ob.matrix_basis, np.float64))
    else:  # parented by the user to an object of theirs: its world, the order offsets left in (a 1e-3 share)
        m = np.array(ob.matrix_world, np.float64)
    expected = layer_matrix(layer, metres_per_unit)
    if np.abs(m - expected).max() <= 1e-7 * max(1.0, float(np.abs(expected).max())):
        return  # where the import put it (the common case: one comparison per layer)
    a = axes(metres_per_unit)
    origin, angles, size = _decompose(np.linalg.inv(a) @ m @ a, layer.scale)
    # per component, rounded to what float32 keeps of a place in metres, so an untouched one reads as it was
    moved = np.abs(origin - layer.origin) > 1e-5 * max(1.0, float(np.abs(layer.origin).max()))
    if moved.any():
        layer.origin = np.where(moved, np.round(origin, 4), layer.origin)
    if np.abs(size - layer.scale).max() > 1e-5 * max(1.0, float(np.abs(layer.scale).max())):
        layer.scale = size
    now = project.transform(np.zeros(3), angles, np.ones(3))[:3, :3]
    was = project.transform(np.zeros(3), layer.angles, np.ones(3))[:3, :3]
    if (size == 0).any():  # the rotation is undetermined: compared as the matrices it gives with this scale
        now, was = now @ np.diag(size), was @ np.diag(size)
    if np.abs(now - was).max() > 1e-5:
        layer.angles = angles


def _set(doc: dict, key: str, value) -> None:
    """Put a changed value into its key, keeping a user-property binding (its `value` takes it)."""
    if isinstance(doc.get(key), dict) and "user" in doc[key]:
        doc[key]["value"] = value
    else:
        doc[key] = value


def _update_animation_layers(layer: project.Layer, ob) -> None:
    """Each animation layer's rate, weight, additive and visibility from its NLA track, written only where
    the user changed them."""
    ad = ob.animation_data if ob.type == "ARMATURE" else None
    tracks = {t.name: t for t in ad.nla_tracks} if ad is not None else {}
    for k, al in enumerate(layer.animation_layers):
        track = tracks.get(al.name or f"layer {k + 1}")
        if track is None or not len(track.strips):  # a mirrored clip's track: its first strip is the layer's
            continue
        strip = track.strips[0]
        # compared as the import set them (a rate of 0 or below leaves the strip's scale at 1)
        if abs(strip.scale - (1.0 / al.rate if al.rate > 0 else 1.0)) > 1e-6 * strip.scale:
            _set(al.doc, "rate", round(1.0 / strip.scale, 6))
        now = {"blend": float(strip.influence), "additive": strip.blend_type == "COMBINE", "visible": not track.mute}
        was = {"blend": min(max(al.blend, 0.0), 1.0), "additive": al.additive, "visible": al.visible}
        for key, value in now.items():
            if isinstance(value, bool) and value != was[key]:
                _set(al.doc, key, value)
            elif not isinstance(value, bool) and abs(value - was[key]) > 1e-6 * max(1.0, abs(was[key])):
                _set(al.doc, key, round(value, 6))


def _children(coll) -> dict[str, list]:
    """The objects of `coll` by their parent's name, gathered once (Blender's `children` and
    `children_recursive` scan every object of the file each time they are asked)."""
    out: dict[str, list] = {}
    for ob in coll.all_objects:
        if ob.parent is not None:
            out.setdefault(ob.parent.name, []).append(ob)
    return out


def _descendants(ob, children: dict[str, list]) -> list:
    out, todo = [], [ob]
    while todo:
        for c in children.get(todo.pop().name, ()):
            out.append(c)
            todo.append(c)
    return out


def _model_bytes(context, ob, children: dict[str, list]) -> tuple[bytes, list[str]]:
    """A puppet or model layer's `.mdl` as Blender has it, written where the layer stands at the origin (its
    placement goes to scene.json, not into the model); the object's matrix is put back."""
    saved = ob.matrix_basis.copy()
    coll = bpy.data.collections.new("skinbridge_export")
    try:
        for o in [ob, *_descendants(ob, children)]:
            coll.objects.link(o)
        ob.matrix_world = Matrix.Identity(4)
        with bscene.export_scope(coll.name):
            model, warnings = puppet_io.gather_model(context)
            return convert.write_model(model), warnings
    finally:
        bpy.data.collections.remove(coll)
        ob.matrix_basis = saved


def _layer_objects(coll) -> dict[int, object]:
    return {int(ob[LAYER_INDEX_PROP]): ob for ob in coll.all_objects
            if LAYER_PROP in ob and isinstance(ob.get(LAYER_INDEX_PROP), int)}


def _models(context, files: _Files, scene: project.Scene, obs: dict, out: dict, warnings: list) -> None:
    """Each puppet and model layer's `.mdl` from Blender into `out` (relative path → bytes) when it differs
    from the project's own file (an unchanged one is written from its own bytes). Layers that share a model
    each hold their own copy in Blender: the one edited is written (with a warning naming the layers that show
    it too); copies edited differently are not written, with a warning naming them."""
    children = _children(files.coll)
    by_path: dict[str, list] = {}
    for k, layer in enumerate(scene.layers):
        ob = obs.get(k)
        if ob is None or ob.type not in ("ARMATURE", "EMPTY", "MESH") or layer.kind not in ("image", "puppet",
                                                                                            "model"):
            continue
        path = _model_path(files, layer) if files.root else None  # each model JSON read once (`files`)
        if path is None or not path.lower().endswith(".mdl"):
            continue
        if ob.type == "EMPTY" and not children.get(ob.name):
            continue
        by_path.setdefault(path, []).append((layer, ob))
    for path, users in by_path.items():
        original = read_bytes(path)
        edited: dict[bytes, list[str]] = {}
        for layer, ob in users:
            data, more = _model_bytes(context, ob, children)
            warnings += [f"{layer.kind} layer {layer.name!r}: {w}" for w in more]
            if data != original:
                edited.setdefault(data, []).append(layer.name)
        rel = os.path.relpath(path, files.root).replace(os.sep, "/")
        names = ", ".join(repr(la.name) for la, _ in users)
        if len(edited) == 1:
            out[rel] = next(iter(edited))
            if len(users) > 1:
                warnings.append(f"{rel}: edited on layer {', '.join(map(repr, next(iter(edited.values()))))} "
                                f"and written; the layers {names} share it and all show the edit")
        elif edited:
            warnings.append(f"{rel}: not written: the layers {names} share it and were edited differently "
                            f"({'; '.join(', '.join(map(repr, v)) for v in edited.values())})")


def _sheets(files: _Files, obs: dict, out: dict, warnings: list) -> None:
    """The textures of image and puppet layers edited in Blender (an image's pixels, a sprite sheet's or GIF's
    frames, or another image put on the layer's material) into `out` (relative path → bytes); unchanged ones
    stay as the project has them (`texture_bytes` gives a texture's own bytes while its pixels are as
    imported). Each material and image once, however many layers show it."""
    seen: set = set()
    children = _children(files.coll)
    meshes = [o for ob in obs.values() for o in [ob, *_descendants(ob, children)] if o.type == "MESH"]
    for ob in meshes:
        for mat in ob.data.materials:
            if mat is None or mat.node_tree is None or mat.name in seen:
                continue
            seen.add(mat.name)
            for img in (n.image for n in mat.node_tree.nodes if n.type == "TEX_IMAGE" and n.image is not None):
                rel = img.get(TEX_PATH_PROP)
                replaced = not isinstance(rel, str) and isinstance(mat.get(TEX_PATH_PROP), str)
                rel = mat.get(TEX_PATH_PROP) if replaced else rel
                if not isinstance(rel, str) or rel in out or ("image", img.name) in seen:
                    continue
                seen.add(("image", img.name))
                data, more = texture_io.texture_bytes(img)
                warnings += more
                kept = img.get(texture_io.TEX_PROP)
                if isinstance(kept, bytes) and data == kept:  # as imported: the project's file, not read again
                    continue
                src = files.path(rel, f"image {img.name!r}") if files.root else None
                if src is None or data != read_bytes(src):
                    out[rel] = data
                    if replaced:
                        warnings.append(f"material {mat.name!r}: its image is now {img.name!r}: written as {rel}")
                break  # a layer shows its material's first image


def _edited_planes(obs: dict) -> list[str]:
    """The image layers whose plane's vertices are no longer those the import made, by object name."""
    out, done = [], {}
    for ob in obs.values():
        me = ob.data if ob.type == "MESH" else None
        if me is None or PLANE_PROP not in me:
            continue
        if me.name not in done:
            corners = np.array(me[PLANE_PROP], np.float64)
            co = np.empty(3 * len(me.vertices), np.float64)
            me.vertices.foreach_get("co", co)
            done[me.name] = co.shape != corners.shape or bool(np.abs(co - corners).max() > 1e-6)
        if done[me.name]:
            out.append(ob.name)
        elif me.shape_keys is not None and len(me.shape_keys.key_blocks) > 1:
            keys = ", ".join(k.name for k in me.shape_keys.key_blocks[1:])
            out.append(f"{ob.name} (shape keys {keys})")
    return sorted(out)


def _outside(context, coll) -> list[str]:
    """The scene's models (meshes, armatures and their empties) in no imported project's collection, by name."""
    held = {ob.name for c in bpy.data.collections if SCENE_PROP in c for ob in c.all_objects}
    return sorted(ob.name for ob in context.scene.objects
                  if ob.name not in held and ob.type in ("MESH", "ARMATURE", "EMPTY", "CURVE")
                  and (ob.parent is None or ob.parent.name not in held))


def export_project(context, path: str, name: str = "", collection: str | None = None) -> tuple[list[str], list[str]]:
    """Write the imported project holding the active object into the folder of `path`: every file of the
    folder it came from as it was, scene.json with the places, visibility and animation layers changed in
    Blender, each puppet or model Blender changed as a new `.mdl` and each sprite sheet or GIF whose frames
    changed as a new `.tex` (blender_sheet.py). With no project imported, the visible
    model as a new project named `name` (else after the folder), as `convert --to wepuppet` writes one.
    `collection`: a Collection Exporter's collection, whose project (or model) alone is written.
    Returns (written paths, warnings)."""
    folder = os.path.dirname(os.path.abspath(path))
    makedirs(folder)  # an unusable output folder is the first thing said, as every exporter says it
    coll = project_collection(context, collection)
    if coll is None:  # nothing imported as a project: the visible model becomes a new one
        stem = name or os.path.basename(folder) or "puppet"
        return puppet_io.export_target(context, folder, stem)
    home = str(coll.get(ROOT_PROP, ""))
    warnings: list[str] = []
    root = ""
    if os.path.isdir(home) or (home.lower().endswith(pkg.EXTENSION) and os.path.isfile(home)):
        root, more = pkg.unpacked(home)
        warnings += more
    else:
        warnings.append(f"the project's folder {home!r} is gone: only its JSON files and models are written")
    proj = project.read_project(bytes(coll[PROJECT_PROP])) if PROJECT_PROP in coll else None
    scene = project.read_scene(bytes(coll[SCENE_PROP]), proj)
    metres_per_unit = METRES_PER_UNIT  # places are compared as a default import made them
    obs = _layer_objects(coll)
    for k, layer in enumerate(scene.layers):
        if k in obs:
            _update_place(layer, obs[k], metres_per_unit)
            _update_animation_layers(layer, obs[k])
    project.apply(scene)
    held = {ob.name for ob in coll.all_objects}
    added = [ob.name for ob in coll.objects if LAYER_PROP not in ob and ob.type != "CAMERA"
             and (ob.parent is None or ob.parent.name not in held)]
    if added:
        warnings.append(f"not written (objects added to the project are not yet exported as layers): "
                        f"{', '.join(sorted(added))}")
    names = json.loads(coll.get(OBJECTS_PROP, "[]"))
    gone = [f"{names[k]} (layer {layer.name!r})" for k, layer in enumerate(scene.layers)
            if k not in obs and k < len(names)]
    if gone:
        warnings.append(f"not written (deleting a layer's object is not yet written: the layers are kept as they "
                        f"were): {', '.join(gone)}")
    planes = _edited_planes(obs)
    if planes:
        warnings.append(f"not written (an image layer is drawn as its size and texture; its plane's vertices or "
                        f"shape keys were edited): {', '.join(planes)}")
    if collection is None:  # the File › Export path: what the user added beside the project is not in it
        outside = _outside(context, coll)
        if outside:
            warnings.append(f"not written (not in the project's collection {coll.name!r}, and objects added to "
                            f"a project are not yet exported as layers): {', '.join(outside)}")
    out: dict[str, bytes] = {}
    files = _Files(root, coll)  # the files the layers name, each read once (its warnings: the import's)
    _models(context, files, scene, obs, out, warnings)
    _sheets(files, obs, out, warnings)
    out[os.path.basename((proj.file if proj else "") or project.SCENE_FILE)] = scene.source.dump()
    if proj is not None:
        out[project.PROJECT_FILE] = proj.source.dump()
    written = []
    home_folder = home if os.path.isdir(home) else os.path.dirname(home)
    same = bool(root) and os.path.isdir(folder) and os.path.samefile(home_folder, folder)
    sources, more = project_files.project_files(root, skip=folder) if root and (not same or root != home) else ({}, [])
    warnings += more
    for rel, src in sources.items():
        if same and os.path.lexists(os.path.join(folder, *rel.split("/"))):
            continue  # written into the folder imported from: its own files stay as they are
        if rel not in out:
            written.append(output_path(folder, rel))
            write_atomic(written[-1], project_files.pieces(src, rel))  # streamed: a file of any size, never read whole
    for rel, data in out.items():
        written.append(output_path(folder, rel))
        write_atomic(written[-1], data)
    return written, warnings


def export_packed(context, path: str, name: str = "", collection: str | None = None) -> tuple[list[str], list[str]]:
    """`export_project` with the package option: the files it writes are made in a private folder (its writes
    outside the running output session, which guards only the user's folder), then written into the folder of
    `path` through the session as `scene.pkg` and, beside it, project.json and the preview it names."""
    folder = os.path.dirname(os.path.abspath(path))
    makedirs(folder)
    coll = project_collection(context, collection)
    home = str(coll.get(ROOT_PROP, "")) if coll is not None else ""
    tmp = tempfile.mkdtemp(prefix="skinbridge-pkg-out-")
    try:
        _, warnings = contextvars.Context().run(export_project, context, os.path.join(tmp, project.PROJECT_FILE),
                                                name, collection)
        made, more = project_files.project_files(tmp)
        warnings = [w.replace(tmp, folder) for w in warnings + more]  # the user's folder, never the private one
        data = {rel: read_bytes(src) for rel, src in made.items()}
        beside = {project.PROJECT_FILE}
        if project.PROJECT_FILE in data:
            preview = project.read_project(data[project.PROJECT_FILE]).preview.replace("\\", "/")
            if preview in data:
                beside.add(preview)
        index = pkg.index_of(home) if home and os.path.exists(home) else None
        first = [e.path for e in index.entries] if index is not None else []
        order = [p for p in first if p in data and p not in beside]
        order += sorted(set(data) - beside - set(order))
        written = [output_path(folder, pkg.PACKAGE_FILE)]
        write_atomic(written[-1], pkg.pack([(p, data[p]) for p in order],
                                           index.magic if index is not None else pkg.DEFAULT_MAGIC))
        for rel in sorted(beside & set(data)):
            written.append(output_path(folder, rel))
            write_atomic(written[-1], data[rel])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return written, warnings


def export_target(context, outdir: str, name: str, options) -> tuple[list[str], list[str]]:
    """`convert project.json --to weproject OUTDIR`: the project imported, written back into OUTDIR (as
    `scene.pkg` with project.json and its preview beside it when `options.package`)."""
    write = export_packed if getattr(options, "package", False) else export_project
    return write(context, os.path.join(outdir, project.PROJECT_FILE), name)
