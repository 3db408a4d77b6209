"""The UrhoX output folder around a model (docs/urho.md §5.3): Textures/*.png and Materials/*.xml.

Every file name taken from content (image and material names) goes through `core.naming`, de-duplicated per
folder, so nothing is written outside the output folder.
"""
from __future__ import annotations

import os


from ...blender import material as bmat
from ...core.errors import ExportError
from ...core.fileio import output_path, write_atomic
from ...core.naming import NameAllocator
from .blender_io import export_objects
from .material_xml import material_xml

UNITS = (("diffuse", "Base Color"), ("normal", "Normal"), ("specular", "Roughness"), ("emissive", "Emission Color"))


def exported_materials(context, selected_only: bool = False) -> list:
    """Blender materials of the exported meshes in slot order, each once (None for an empty slot)."""
    meshes, _ = export_objects(context, selected_only)
    out = []
    for ob in meshes:
        for slot in ob.material_slots or [None]:
            mat = slot.material if slot is not None else None
            if mat not in out:
                out.append(mat)
    return out


def write_textures_and_materials(context, outdir: str, selected_only: bool = False) -> tuple[list[str], list[str]]:
    written, warnings = [], []
    tex_names, mat_names = NameAllocator(), NameAllocator()
    texture_paths: dict[str, str] = {}  # image name → path relative to outdir

    for mat in exported_materials(context, selected_only):
        core = bmat.read_material(mat)
        units = {}
        bsdf = None
        if mat is not None and mat.node_tree is not None:
            bsdf = next((n for n in mat.node_tree.nodes if n.type == "BSDF_PRINCIPLED"), None)
        for unit, socket in UNITS if bsdf is not None else ():
            img = bmat.linked_image(bsdf.inputs[socket])
            if img is None:
                continue
            if img.name not in texture_paths:
                try:
                    data, _ = bmat.image_file_bytes(img)
                except ExportError as e:
                    warnings.append(str(e))
                    continue
                rel = f"Textures/{tex_names.take(img.name, '.png')}.png"
                write_atomic(output_path(outdir, rel), data)
                written.append(os.path.join(outdir, rel))
                texture_paths[img.name] = rel
            units[unit] = texture_paths[img.name]
        rel = f"Materials/{mat_names.take(core.name, '.xml')}.xml"
        write_atomic(output_path(outdir, rel), material_xml(core, units).encode("utf-8"))
        written.append(os.path.join(outdir, rel))
    return written, warnings
