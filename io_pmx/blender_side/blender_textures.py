"""The images a PMX's materials use, written next to it (`convert --to pmx`):
embedded images byte for byte, images read from files copied when they are PNG, others encoded as
PNG; file names through `core.naming` (docs/architecture.md §7.2), de-duplicated per folder; the
texture table then holds the paths relative to the PMX.

Texture table entries are matched to Blender images the way `blender.material.read_material` names them
(the image's absolute file path, else its name). The relative paths of a PMX imported from a file stay as
they are: the file each base texture was loaded from is copied to that path beside the new PMX. Sphere and
toon images the import found (the MMD node setup's image nodes, docs/mmd.md §4.10) are written like base
textures; those whose file was missing have no Blender image and are not written.
"""
from __future__ import annotations

import os

import bpy

from ...blender import material as bmat
from ...core.errors import ExportError
from ...core.fileio import may_write, output_path, read_bytes, write_atomic
from ...core.naming import NameAllocator
from ...core.paths import texture_to_write
from ..model import pmx
from .blender_mmd import IMAGE_PROP

_SOCKETS = ("Base Color", "Alpha", "Normal", "Emission Color")


def material_images(meshes) -> dict[str, object]:
    """Texture table key (absolute file path, else name) → Blender image, for the images the exported
    `meshes`' materials link into their shader (every image texture node of their node trees)."""
    out: dict[str, object] = {}
    for ob in meshes:
        for slot in ob.material_slots:
            mat = slot.material
            if mat is None or mat.node_tree is None:
                continue
            for node in mat.node_tree.nodes:
                img = getattr(node, "image", None) if node.type == "TEX_IMAGE" else None
                if img is None:
                    continue
                tex = bmat.texture_of_image(img)
                out.setdefault(tex.path or tex.name, img)
    return out


def _copy_file_texture(context, images: dict, entry: str, outdir: str) -> str | None:
    """A texture of a PMX read from a file (its table holds the path relative to that file): the file the
    Blender image was loaded from, copied to the same relative path beside the new PMX when the output guard
    allows that path (inside the output folder, not an input). Returns the path written, or None."""
    img = next((im for im in images.values() if im.get(IMAGE_PROP) == entry), None)
    if img is None or img.packed_file is not None:
        return None
    src = bpy.path.abspath(img.filepath) if img.filepath else ""
    if not os.path.isfile(src):
        return None
    rel = entry.replace("\\", "/")
    if not rel or not may_write(outdir, rel):
        return None
    path = output_path(outdir, rel)
    if os.path.realpath(src) == os.path.realpath(path):
        return None
    write_atomic(path, read_bytes(src))
    return path


def write_textures(context, model: pmx.PmxModel, outdir: str, meshes) -> tuple[list[str], list[str]]:
    """Write every image the model's texture table names (as the exported `meshes`' materials use them) into
    `outdir` and point the table at the files (in place). Returns (written paths, warnings)."""
    images = material_images(meshes)
    # an absolute path outside `outdir` stands in the table as the name `texture_to_write` made of it
    as_written = {texture_to_write(key, "\\")[0]: img for key, img in images.items()}
    names = NameAllocator()
    written, warnings = [], []
    for i, entry in enumerate(model.textures):
        img = images.get(entry) or as_written.get(entry)
        if img is None:
            copied = _copy_file_texture(context, images, entry, outdir)
            if copied:
                written.append(copied)
            continue
        try:
            data, ext = bmat.image_file_bytes(img, keep_jpeg=True)
        except ExportError as e:
            warnings.append(f"texture {entry}: {e}; the path is written as it is")
            continue
        rel = names.take(os.path.splitext(img.name)[0] if img.name.lower().endswith(ext) else img.name, ext) + ext
        path = output_path(outdir, rel)
        write_atomic(path, data)
        written.append(path)
        model.textures[i] = rel
    return written, warnings
