"""UrhoX / Urho3D model import and export in Blender: file → records → core → bpy and back.

Shared by the operators and the command line. Import parses and maps the whole file before the first
datablock is created; export writes to a temporary file and renames it into place.
"""
from __future__ import annotations

import hashlib
import json
import os

import numpy as np

from ..blender import scene as bscene
from ..core.errors import ExportError
from ..core.fileio import output_path, read_bytes, write_atomic
from . import convert, umd2
from .blender_ani import AXES_PROP, export_package_animations
from .blender_package import write_textures_and_materials

MESH_PROP = "skinbridge_urho"  # on an imported mesh: the file's vertex elements, geometry centres and magic


def mesh_fingerprint(ob) -> str:
    """What decides that an imported mesh is unchanged: its vertices, faces, material slots, UV and colour
    layers, shape keys, transform and modifiers other than the armature's. Read from the mesh's attributes
    (a copy of their memory each; the per-element `vertices`/`loops` collections cost ten times more)."""
    me = ob.data
    h = hashlib.sha1()
    for name, prop, dtype, width in (("position", "vector", np.float32, 3), (".corner_vert", "value", np.int32, 1),
                                     ("material_index", "value", np.int32, 1)):
        attr = me.attributes.get(name)
        if attr is None:
            h.update(name.encode() + b" absent")
            continue
        buf = np.empty(len(attr.data) * width, dtype)
        attr.data.foreach_get(prop, buf)
        h.update(buf.tobytes())
    starts = np.empty(len(me.polygons), np.int32)
    me.polygons.foreach_get("loop_start", starts)
    h.update(starts.tobytes())
    h.update(np.array(ob.matrix_world, np.float32).tobytes())
    keys = me.shape_keys.key_blocks if me.shape_keys is not None else ()
    h.update(json.dumps([len(me.uv_layers), len(me.color_attributes), len(ob.material_slots), len(keys),
                         [m.type for m in ob.modifiers if m.type != "ARMATURE"]]).encode())
    return h.hexdigest()


def import_mdl(context, path: str, profile: str = "auto", all_lods: bool = False) -> bscene.ImportResult:
    """`profile` "auto" picks the file's likely axes (`convert.detect_profile`): urho3d for UMDL/UMD3 and for
    UMD2 files with collision extras or morphs, urhox otherwise. `all_lods` imports every LOD level."""
    data = read_bytes(path)
    model = umd2.read(data)
    name = os.path.splitext(os.path.basename(path))[0]
    core_scene, warnings = convert.to_scene(model, name, profile, all_lods=all_lods)
    result = bscene.build_scene(context, core_scene, name, os.path.dirname(path))
    objects = [o for o in result.objects if o.type == "MESH"]
    for ob, cmesh in zip(objects, core_scene.meshes):  # build_scene makes one object per core mesh, in order
        kept = {k: cmesh.extras.get("urho", {}).get(k) for k in ("elements", "centers", "magic")}
        ob.data[MESH_PROP] = json.dumps({**kept, "fingerprint": mesh_fingerprint(ob)})
    if result.armature is not None:  # motions loaded onto this armature later read with the same axes
        result.armature[AXES_PROP] = convert.resolve_profile(model, profile)
    result.warnings[:0] = warnings
    return result


def export_mdl(context, path: str, profile: str = "urhox", selected_only: bool = False,
               deform_only: bool = False, max_bones: int = 64) -> list[str]:
    core_scene, warnings = bscene.gather_scene(context, selected_only=selected_only, deform_only=deform_only)
    if not core_scene.meshes:
        raise ExportError("nothing to export: no visible mesh with faces")
    _file_values_of_unchanged_meshes(context, core_scene)
    model, more = convert.from_scene(core_scene, profile, max_bones=max_bones)
    data = umd2.write(model)
    bscene._stage("write")
    write_atomic(path, data)
    return warnings + more


def _file_values_of_unchanged_meshes(context, core_scene) -> None:
    """Give each gathered mesh the file's vertex elements and geometry centres while its object still
    matches what import made (`mesh_fingerprint`); a changed mesh gets computed ones."""
    objects = {o.name: o for o in context.view_layer.objects if o.type == "MESH"}
    for cmesh in core_scene.meshes:
        ob = objects.get(cmesh.name)
        raw = ob.data.get(MESH_PROP) if ob is not None else None
        if not raw:
            continue
        try:
            kept = json.loads(raw)
        except (TypeError, ValueError):
            continue
        if not isinstance(kept, dict) or kept.get("fingerprint") != mesh_fingerprint(ob):
            continue
        urho = cmesh.extras.setdefault("urho", {})
        for key in ("elements", "centers", "magic"):
            if kept.get(key) is not None:
                urho[key] = kept[key]


def export_target(context, outdir: str, name: str, options) -> tuple[list[str], list[str]]:
    """`convert --to urhox`: OUTDIR/NAME.mdl, Textures/*.png, Materials/*.xml, Animations/*.ani (+ .xml triggers)."""
    path = output_path(outdir, name + ".mdl")
    warnings = export_mdl(context, path, options.profile, deform_only=options.deform_only,
                          max_bones=options.max_bones)
    written = [path]
    more_written, more = write_textures_and_materials(context, outdir)

    _, arm_ob = bscene.exportable_objects(context)
    ani_written, ani_warnings = export_package_animations(context, outdir, options, arm_ob=arm_ob)
    return written + more_written + ani_written, warnings + more + ani_warnings


def blender_import(context, path: str, options) -> list[str]:
    """`convert`, `render` and drag and drop: the file with its own axes (or the profile the options name)."""
    profile = getattr(options, "import_profile", None) or "auto"
    return import_mdl(context, path, profile).warnings
