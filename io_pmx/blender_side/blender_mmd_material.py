"""MMD's shading as Blender nodes, for the materials of a model imported from PMX (docs/mmd.md §4.10).

Each material gets a group node `MMD Shader` (node group `SkinBridge MMD Shader`, shared) feeding the Material
Output, and a group node `MMD Coordinates` (group `SkinBridge MMD Coordinates`) giving the toon and sphere
images their coordinates. What MMD's default shader computes, in its display values (textures taken from
scene-linear to sRGB values and the result back, so that the Standard view transform shows MMD's numbers):

* colour = saturate(ambient + diffuse × light colour) × base texture;
* sphere map at the view-space normal (u, v = n.xy / 2 + 1/2): multiplied (mode 1), added (mode 2), or with the
  vertices' additional UV 1 as the sub-texture, multiplied (mode 3);
* × the toon texture at (0, 1/2 + N·L / 2) (MMD's v = 1/2 − N·L / 2, its v runs down), L towards MMD's default
  light; MMD's shared toons (toon01..10.bmp) ship with MMD, not with the model: those stay white here;
* + specular colour × light colour × max(0, N·H)^power; alpha = diffuse alpha × the base texture's alpha;
* given as emission (MMD's light is in the shader, not Blender's lamps), mixed with transparency by alpha.

`Material.diffuse_color` (the Solid view's and Workbench's colour) is the file's diffuse and alpha. The Principled
BSDF the bridge made stays in the tree, unlinked from the output: other formats' exports read it and the morph
sliders colour it. Export (`read_edits`) writes its Base Color and Alpha as the diffuse, as before, unless the
MMD Shader's Diffuse Color and Alpha were edited instead (they no longer hold the file's value while the BSDF's
do); the MMD Shader's Ambient Color, Specular Color and Specular Power are written when changed. (Drivers from
the BSDF to the MMD Shader would form a dependency cycle within one node tree, so morphs do not reach it.)
The edge is not drawn.
"""
from __future__ import annotations

import os

import bpy
import numpy as np

from ...core.paths import texture_to_open
from ..model import convert

SHADER_GROUP = "SkinBridge MMD Shader"
COORDS_GROUP = "SkinBridge MMD Coordinates"
SHADER_NODE = "MMD Shader"
COORDS_NODE = "MMD Coordinates"
GROUP_PROP = "skinbridge_mmd_group"  # on the node groups: the layout version below
_VERSION = 1
LIGHT_COLOR = 154 / 255  # MMD's default light colour (154, 154, 154)
LIGHT_DIRECTION = tuple(convert.directions_to_blender((-0.5, -1.0, 0.5)).tolist())  # MMD's default, from the light
SPHERE_MULTIPLY, SPHERE_ADD, SPHERE_SUB_TEXTURE = 1, 2, 3


# ------------------------------------------------------------------------------------------------------------
# the shared node groups

def _group(name: str, build) -> bpy.types.ShaderNodeTree:
    ng = bpy.data.node_groups.get(name)
    if ng is not None and ng.bl_idname == "ShaderNodeTree" and ng.get(GROUP_PROP) == _VERSION:
        return ng
    ng = bpy.data.node_groups.new(name, "ShaderNodeTree")
    ng[GROUP_PROP] = _VERSION
    build(ng)
    return ng


def _socket(ng, name: str, kind: str, in_out: str = "INPUT", default=None, lo=None, hi=None):
    s = ng.interface.new_socket(name=name, in_out=in_out, socket_type=kind)
    if default is not None:
        s.default_value = default
    if lo is not None:
        s.min_value, s.max_value = lo, hi
    return s


class _Nodes:
    def __init__(self, ng):
        self.ng, self.nodes, self.links = ng, ng.nodes, ng.links
        self.x = 0

    def new(self, kind: str, **props):
        node = self.nodes.new(kind)
        node.location = (self.x, -len(self.nodes) * 40)
        for k, v in props.items():
            setattr(node, k, v)
        return node

    def link(self, a, b):
        self.links.new(a, b)

    def math(self, op: str, a, b=None, clamp: bool = False):
        node = self.new("ShaderNodeMath", operation=op, use_clamp=clamp)
        for sock, v in zip(node.inputs, (a, b)):
            if v is None:
                continue
            if isinstance(v, (int, float)):
                sock.default_value = v
            else:
                self.link(v, sock)
        return node.outputs[0]

    def vmath(self, op: str, *operands, scale=None):
        node = self.new("ShaderNodeVectorMath", operation=op)
        for sock, v in zip([s for s in node.inputs if s.enabled and s.type == "VECTOR"], operands):
            if isinstance(v, tuple):
                sock.default_value = v
            else:
                self.link(v, sock)
        if scale is not None:
            node.inputs["Scale"].default_value = scale
        return node.outputs["Value" if op in ("DOT_PRODUCT", "LENGTH", "DISTANCE") else "Vector"]

    def mix(self, blend: str, a, b, clamp: bool = False):
        node = self.new("ShaderNodeMix", data_type="RGBA", blend_type=blend, clamp_result=clamp)
        sockets = {s.identifier: s for s in node.inputs}  # by identifier: each name is on three sockets
        sockets["Factor_Float"].default_value = 1.0
        self.link(a, sockets["A_Color"])
        self.link(b, sockets["B_Color"])
        return next(s for s in node.outputs if s.identifier == "Result_Color")

    def power(self, colour, exponent: float):
        node = self.new("ShaderNodeGamma")  # per channel c^exponent
        self.link(colour, node.inputs["Color"])
        node.inputs["Gamma"].default_value = exponent
        return node.outputs["Color"]

    def srgb(self, colour, encode: bool):
        """sRGB's transfer function per channel: scene-linear → display values (`encode`) or back."""
        c = self.vmath("MAXIMUM", colour, (0.0, 0.0, 0.0))
        if encode:
            knee = 0.0031308
            lo = self.vmath("SCALE", c, scale=12.92)
            hi = self.vmath("MULTIPLY_ADD", self.power(c, 1 / 2.4), (1.055,) * 3, (-0.055,) * 3)
        else:
            knee = 0.04045
            lo = self.vmath("SCALE", c, scale=1 / 12.92)
            hi = self.power(self.vmath("MULTIPLY_ADD", c, (1 / 1.055,) * 3, (0.055 / 1.055,) * 3), 2.4)
        above = self.vmath("MINIMUM", self.vmath("CEIL", self.vmath("SUBTRACT", c, (knee,) * 3)), (1.0, 1.0, 1.0))
        mix = self.new("ShaderNodeMix", data_type="VECTOR", factor_mode="NON_UNIFORM", clamp_factor=False)
        sockets = {s.identifier: s for s in mix.inputs}
        self.link(above, sockets["Factor_Vector"])
        self.link(lo, sockets["A_Vector"])
        self.link(hi, sockets["B_Vector"])
        return next(s for s in mix.outputs if s.identifier == "Result_Vector")


def _build_coords(ng) -> None:
    _socket(ng, "Light Direction", "NodeSocketVector", default=LIGHT_DIRECTION)
    for name in ("Toon UV", "Sphere UV", "Sub-texture UV"):
        _socket(ng, name, "NodeSocketVector", "OUTPUT")
    n = _Nodes(ng)
    gin, gout = n.new("NodeGroupInput"), n.new("NodeGroupOutput")
    n.x = 200
    geo = n.new("ShaderNodeNewGeometry")
    to_light = n.vmath("NORMALIZE", n.vmath("SCALE", gin.outputs["Light Direction"], scale=-1.0))
    nl = n.vmath("DOT_PRODUCT", geo.outputs["Normal"], to_light)
    v = n.math("MULTIPLY_ADD", nl, 0.5)
    v.node.inputs[2].default_value = 0.5
    toon = n.new("ShaderNodeCombineXYZ")
    n.link(v, toon.inputs["Y"])
    n.link(toon.outputs[0], gout.inputs["Toon UV"])
    view = n.new("ShaderNodeVectorTransform", vector_type="NORMAL", convert_from="WORLD", convert_to="CAMERA")
    n.link(geo.outputs["Normal"], view.inputs[0])
    sphere = n.vmath("MULTIPLY_ADD", view.outputs[0], (0.5, 0.5, 0.0))
    sphere.node.inputs[2].default_value = (0.5, 0.5, 0.0)
    n.link(sphere, gout.inputs["Sphere UV"])
    attr = n.new("ShaderNodeAttribute", attribute_type="GEOMETRY", attribute_name="pmx_add_uv1")
    sep = n.new("ShaderNodeSeparateXYZ")
    n.link(attr.outputs["Vector"], sep.inputs[0])
    sub = n.new("ShaderNodeCombineXYZ")
    n.link(sep.outputs["X"], sub.inputs["X"])
    n.link(n.math("SUBTRACT", 1.0, sep.outputs["Y"]), sub.inputs["Y"])  # the file's v runs down
    n.link(sub.outputs[0], gout.inputs["Sub-texture UV"])
    gout.location = (1400, 0)


def _build_shader(ng) -> None:
    rgba = "NodeSocketColor"
    _socket(ng, "Diffuse Color", rgba, default=(0.8, 0.8, 0.8, 1.0))
    _socket(ng, "Alpha", "NodeSocketFloat", default=1.0, lo=0.0, hi=1.0)
    _socket(ng, "Ambient Color", rgba, default=(0.5, 0.5, 0.5, 1.0))
    _socket(ng, "Specular Color", rgba, default=(0.0, 0.0, 0.0, 1.0))
    _socket(ng, "Specular Power", "NodeSocketFloat", default=5.0, lo=0.0, hi=1000.0)
    _socket(ng, "Base Tex", rgba, default=(1.0, 1.0, 1.0, 1.0))
    _socket(ng, "Base Alpha", "NodeSocketFloat", default=1.0, lo=0.0, hi=1.0)
    _socket(ng, "Sphere Multiply", rgba, default=(1.0, 1.0, 1.0, 1.0))
    _socket(ng, "Sphere Add", rgba, default=(0.0, 0.0, 0.0, 1.0))
    _socket(ng, "Toon Tex", rgba, default=(1.0, 1.0, 1.0, 1.0))
    _socket(ng, "Light Color", rgba, default=(LIGHT_COLOR, LIGHT_COLOR, LIGHT_COLOR, 1.0))
    _socket(ng, "Light Direction", "NodeSocketVector", default=LIGHT_DIRECTION)
    _socket(ng, "Shader", "NodeSocketShader", "OUTPUT")
    _socket(ng, "Color", rgba, "OUTPUT")
    _socket(ng, "Alpha", "NodeSocketFloat", "OUTPUT")
    n = _Nodes(ng)
    gin, gout = n.new("NodeGroupInput"), n.new("NodeGroupOutput")
    i = gin.outputs
    n.x = 200
    lit = n.mix("ADD", i["Ambient Color"], n.mix("MULTIPLY", i["Diffuse Color"], i["Light Color"]), clamp=True)
    colour = n.mix("MULTIPLY", lit, n.srgb(i["Base Tex"], True))
    colour = n.mix("MULTIPLY", colour, n.srgb(i["Sphere Multiply"], True))
    colour = n.mix("ADD", colour, n.srgb(i["Sphere Add"], True))
    colour = n.mix("MULTIPLY", colour, n.srgb(i["Toon Tex"], True))
    n.x = 600
    geo = n.new("ShaderNodeNewGeometry")
    to_light = n.vmath("NORMALIZE", n.vmath("SCALE", i["Light Direction"], scale=-1.0))
    half = n.vmath("NORMALIZE", n.vmath("ADD", geo.outputs["Incoming"], to_light))
    nh = n.math("MAXIMUM", n.vmath("DOT_PRODUCT", geo.outputs["Normal"], half), 0.0)
    spec = n.math("POWER", nh, i["Specular Power"])
    tint = n.new("ShaderNodeCombineColor")
    for ch in ("Red", "Green", "Blue"):
        n.link(spec, tint.inputs[ch])
    spec_colour = n.mix("MULTIPLY", n.mix("MULTIPLY", i["Specular Color"], i["Light Color"]), tint.outputs[0])
    colour = n.mix("ADD", colour, spec_colour)
    n.x = 1000
    linear = n.srgb(colour, False)
    alpha = n.math("MULTIPLY", i["Alpha"], i["Base Alpha"], clamp=True)
    emission = n.new("ShaderNodeEmission")
    n.link(linear, emission.inputs["Color"])
    transparent = n.new("ShaderNodeBsdfTransparent")
    mix = n.new("ShaderNodeMixShader")
    n.link(alpha, mix.inputs["Fac"])
    n.link(transparent.outputs[0], mix.inputs[1])
    n.link(emission.outputs[0], mix.inputs[2])
    n.link(mix.outputs[0], gout.inputs["Shader"])
    n.link(linear, gout.inputs["Color"])
    n.link(alpha, gout.inputs["Alpha"])
    gout.location = (1400, 0)


def shader_group() -> bpy.types.ShaderNodeTree:
    return _group(SHADER_GROUP, _build_shader)


def coords_group() -> bpy.types.ShaderNodeTree:
    return _group(COORDS_GROUP, _build_coords)


# ------------------------------------------------------------------------------------------------------------
# one material

def _image(textures: list[str], index: int, base_dir: str, image_prop: str):
    """The image of texture table entry `index` when its file is there (inside the model's folder tree)."""
    if not 0 <= index < len(textures) or not textures[index]:
        return None
    full, _ = texture_to_open(textures[index], base_dir or os.getcwd())
    if full is None or not os.path.isfile(full):
        return None
    img = bpy.data.images.load(full, check_existing=True)
    img[image_prop] = textures[index]
    return img


def build(mat, bsdf, rec: dict, base_node, textures: list[str], base_dir: str, image_prop: str) -> None:
    """Give `mat` (made by the bridge, `bsdf` its Principled BSDF) the MMD node setup of its PMX record `rec`.
    `base_node`: the image node of its base texture when that image was found (else None)."""
    nt = mat.node_tree
    nodes, links = nt.nodes, nt.links
    diffuse = rec["diffuse"]
    mat.diffuse_color = diffuse
    shader = nodes.new("ShaderNodeGroup")
    shader.node_tree = shader_group()
    shader.name = shader.label = SHADER_NODE
    shader.location = (0, 300)
    shader.width = 220
    inputs = shader.inputs
    inputs["Diffuse Color"].default_value = (*diffuse[:3], 1.0)
    inputs["Alpha"].default_value = diffuse[3]
    inputs["Ambient Color"].default_value = (*rec["ambient"], 1.0)
    inputs["Specular Color"].default_value = (*rec["specular"], 1.0)
    inputs["Specular Power"].default_value = rec["specular_power"]

    output = next((nd for nd in nodes if nd.type == "OUTPUT_MATERIAL" and nd.is_active_output), None)
    if output is None:
        output = nodes.new("ShaderNodeOutputMaterial")
    output.location = (400, 300)
    links.new(shader.outputs["Shader"], output.inputs["Surface"])
    bsdf.location = (0, -300)

    if base_node is not None:
        links.new(base_node.outputs["Color"], inputs["Base Tex"])
        links.new(base_node.outputs["Alpha"], inputs["Base Alpha"])
        nodes.active = base_node  # the Solid view's Texture colour shows the active image node
    mode = int(rec["sphere_mode"])
    sphere = _image(textures, int(rec["sphere_texture"]), base_dir, image_prop) \
        if mode in (SPHERE_MULTIPLY, SPHERE_ADD, SPHERE_SUB_TEXTURE) else None
    toon = _image(textures, int(rec["toon"]), base_dir, image_prop) if rec["shared_toon"] == 0 else None
    if sphere is None and toon is None:
        return
    coords = nodes.new("ShaderNodeGroup")
    coords.node_tree = coords_group()
    coords.name = coords.label = COORDS_NODE
    coords.location = (-700, 0)
    if sphere is not None:
        node = nodes.new("ShaderNodeTexImage")
        node.name = node.label = "MMD Sphere"
        node.image = sphere
        node.location = (-400, 0)
        uv = "Sub-texture UV" if mode == SPHERE_SUB_TEXTURE else "Sphere UV"
        links.new(coords.outputs[uv], node.inputs["Vector"])
        links.new(node.outputs["Color"], inputs["Sphere Add" if mode == SPHERE_ADD else "Sphere Multiply"])
    if toon is not None:
        node = nodes.new("ShaderNodeTexImage")
        node.name = node.label = "MMD Toon"
        node.image = toon
        node.extension = "EXTEND"
        node.location = (-400, -300)
        links.new(coords.outputs["Toon UV"], node.inputs["Vector"])
        links.new(node.outputs["Color"], inputs["Toon Tex"])


# ------------------------------------------------------------------------------------------------------------
# export (read-only)

def _f32(values) -> np.ndarray:
    return np.asarray(values, np.float32).reshape(-1)


def read_edits(mat, rec: dict | None, rgba: tuple) -> tuple:
    """What export writes for a material with the MMD node setup: returns its diffuse RGBA (`rgba`, the
    Principled BSDF's, unless the MMD Shader's Diffuse Color and Alpha no longer hold the file's value while
    the BSDF's still do: then the MMD Shader's), and sets the ambient, specular and specular power of the
    stored record `rec` the MMD Shader's inputs changed (in place; an unchanged input keeps the file's bits)."""
    shader = mat.node_tree.nodes.get(SHADER_NODE) if mat.node_tree is not None else None
    if shader is None or shader.type != "GROUP" or not isinstance(rec, dict):
        return rgba
    inputs = shader.inputs
    if not all(name in inputs for name in ("Diffuse Color", "Alpha", "Ambient Color", "Specular Color",
                                          "Specular Power")):
        return rgba
    filed = _f32(rec["diffuse"])
    shown = _f32([*inputs["Diffuse Color"].default_value[:3], inputs["Alpha"].default_value])
    if not np.array_equal(shown, filed) and np.array_equal(_f32(rgba), filed):
        rgba = tuple(float(c) for c in shown)
    for field, name, n in (("ambient", "Ambient Color", 3), ("specular", "Specular Color", 3),
                           ("specular_power", "Specular Power", 1)):
        value = inputs[name].default_value
        value = _f32(value[:n] if n > 1 else value)
        if not np.array_equal(value, _f32(rec[field])):
            rec[field] = value.tolist() if n > 1 else float(value[0])
    return rgba
