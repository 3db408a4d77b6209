"""Materials: core Material ⇄ a Principled BSDF node tree with image textures."""
from __future__ import annotations

import os
import tempfile

import bpy
import numpy as np

from ..core import model as cm
from ..core.errors import ExportError
from ..core.fileio import read_bytes
from ..core.paths import texture_to_open
from ..core.png import encode_png


def _image(tex: cm.Texture, created: list, base_dir: str | None, warnings: list[str] | None = None):
    if tex.data is not None:
        # Packed from memory: write to a temporary file, load, pack, then remove the file.
        suffix = ".png" if "png" in tex.mime else ".jpg"
        fd, path = tempfile.mkstemp(suffix=suffix)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(tex.data)
            img = bpy.data.images.load(path)
            img.pack()
        finally:
            os.unlink(path)
        img.name = tex.name
    elif tex.path:  # a path from the file: opened only inside the model's folder tree
        path, warning = texture_to_open(tex.path, base_dir or os.getcwd())
        if path is None:
            if warnings is not None and warning:
                warnings.append(warning)
            return None
        img = bpy.data.images.load(path, check_existing=True)
    else:
        return None
    created.append(img)
    return img


def build_material(mat: cm.Material, created: list, base_dir: str | None = None,
                   warnings: list[str] | None = None) -> bpy.types.Material:
    m = bpy.data.materials.new(mat.name)
    created.append(m)
    if m.node_tree is None:  # Blender 5 gives every new material a node tree
        m.use_nodes = True
    nt = m.node_tree
    bsdf = next(n for n in nt.nodes if n.type == "BSDF_PRINCIPLED")
    bsdf.inputs["Base Color"].default_value = tuple(mat.base_color[:4])
    bsdf.inputs["Metallic"].default_value = mat.metallic
    bsdf.inputs["Roughness"].default_value = mat.roughness
    if mat.base_color_texture is not None:
        img = _image(mat.base_color_texture, created, base_dir, warnings)
        if img is not None:
            node = nt.nodes.new("ShaderNodeTexImage")
            node.image = img
            node.location = (-400, 300)
            nt.links.new(node.outputs["Color"], bsdf.inputs["Base Color"])
    m.use_backface_culling = not mat.double_sided
    return m


def linked_image(socket):
    if not socket.is_linked:
        return None
    node = socket.links[0].from_node
    for _ in range(8):  # walk through simple pass-through nodes (normal map, separate color, ...)
        if node.type == "TEX_IMAGE":
            return node.image
        inputs = [s for s in node.inputs if s.is_linked]
        if not inputs:
            return None
        node = inputs[0].links[0].from_node
    return None


def _factor(socket, width: int) -> tuple:
    """The constant factor of a socket: its value when unlinked; 1 when a texture drives it directly; the
    other operand when a texture is multiplied by a constant (as the glTF importer builds factors)."""
    if not socket.is_linked:
        v = socket.default_value
        return tuple(v) if width > 1 else (float(v),)
    node = socket.links[0].from_node
    if node.type == "MIX" and getattr(node, "blend_type", "") == "MULTIPLY":
        for inp in node.inputs:
            if inp.type == "RGBA" and not inp.is_linked and inp.name in ("A", "B", "Color1", "Color2") and inp.enabled:
                return tuple(inp.default_value)[:width]
    if node.type == "MATH" and node.operation == "MULTIPLY":
        for inp in node.inputs:
            if not inp.is_linked:
                return (float(inp.default_value),)
    return (1.0,) * width


def texture_of_image(img) -> cm.Texture | None:
    if img is None:
        return None
    data = None
    if img.packed_file is not None:
        data = bytes(img.packed_file.data)
    return cm.Texture(name=img.name, path=bpy.path.abspath(img.filepath) if img.filepath else None, data=data,
                      mime="image/png" if (img.file_format or "PNG") == "PNG" else "image/jpeg")


def read_material(m) -> cm.Material:
    out = cm.Material(name=m.name if m else "Material")
    if m is None:
        return out
    out.double_sided = not m.use_backface_culling
    blend = getattr(m, "surface_render_method", "DITHERED")
    if m.node_tree is None:
        out.base_color = tuple(m.diffuse_color)
        return out
    bsdf = next((n for n in m.node_tree.nodes if n.type == "BSDF_PRINCIPLED"), None)
    if bsdf is None:
        out.base_color = tuple(m.diffuse_color)
        return out
    out.base_color = _factor(bsdf.inputs["Base Color"], 4)
    alpha_socket = bsdf.inputs["Alpha"]
    out.base_color = (*out.base_color[:3], 1.0 if alpha_socket.is_linked else float(alpha_socket.default_value))
    out.metallic = _factor(bsdf.inputs["Metallic"], 1)[0]
    out.roughness = _factor(bsdf.inputs["Roughness"], 1)[0]
    strength = float(bsdf.inputs["Emission Strength"].default_value)
    out.emissive = tuple(c * strength for c in _factor(bsdf.inputs["Emission Color"], 3)[:3])
    out.base_color_texture = texture_of_image(linked_image(bsdf.inputs["Base Color"]))
    out.normal_texture = texture_of_image(linked_image(bsdf.inputs["Normal"]))
    out.metallic_roughness_texture = texture_of_image(linked_image(bsdf.inputs["Roughness"]))
    out.emissive_texture = texture_of_image(linked_image(bsdf.inputs["Emission Color"]))
    alpha = bsdf.inputs["Alpha"]
    if alpha.is_linked or alpha.default_value < 1.0:
        out.alpha_mode = "BLEND" if blend == "BLENDED" else "CLIP"
    return out


PLACEHOLDER_PROP = "skinbridge_placeholder"  # an image that stands for a texture file that was not found


def is_placeholder(img) -> bool:
    return bool(img.get(PLACEHOLDER_PROP))


PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
JPEG_MAGIC = b"\xff\xd8\xff"


def image_file_bytes(img, keep_jpeg: bool = False) -> tuple[bytes, str]:
    """(bytes, extension) of an image as an exporter writes it: a packed PNG (or, with `keep_jpeg`, JPEG) or
    a PNG file as its own bytes, else its pixels encoded as PNG. ExportError for an image with no pixels and for
    a placeholder (its pixels are not the texture: writing them could replace the user's file of that name)."""
    if is_placeholder(img):
        raise ExportError(f"image {img.name} stands for a texture file that was not found: not written")
    if img.packed_file is not None:
        data = bytes(img.packed_file.data)
        if data.startswith(PNG_MAGIC):
            return data, ".png"
        if keep_jpeg and data.startswith(JPEG_MAGIC):
            return data, ".jpg"
    elif img.filepath and img.source == "FILE":
        path = bpy.path.abspath(img.filepath)
        if os.path.isfile(path):
            data = read_bytes(path)
            if data.startswith(PNG_MAGIC):
                return data, ".png"
    w, h = img.size
    if w == 0 or h == 0:
        raise ExportError(f"image {img.name} has no pixels (missing file?)")
    px = np.empty(w * h * img.channels, dtype=np.float32)
    img.pixels.foreach_get(px)
    px = px.reshape(h, w, img.channels)[::-1]  # Blender stores the bottom row first
    if img.channels == 1:
        px = np.repeat(px, 3, axis=2)
    elif img.channels == 2:
        px = np.concatenate([np.repeat(px[:, :, :1], 3, axis=2), px[:, :, 1:]], axis=2)
    return encode_png(np.clip(np.rint(px * 255.0), 0, 255).astype(np.uint8)), ".png"
