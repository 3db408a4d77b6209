"""The Names panel of the SkinBridge tab (under Model): the Japanese and English names of a PMX model's bones,
morphs and materials side by side, editable.

The names are the ones the PMX export writes, kept where the import stored them: in each bone's `skinbridge`
JSON property ("pmx": name, name_e; a bone renamed in Blender since shows its new name, blender_mmd.pmx_names),
in the model's `skinbridge_pmx` JSON on its armature ("morphs"), and in each material's `skinbridge_pmx` JSON.
The panel lists copies of them in a scene collection (a panel cannot write ID data while it draws, so Load
Names fills it); an edit of a copy writes the name back at once (for a bone: set for its Blender name of the
moment, so they win over it). A vertex morph is its shape key through the model's "shape_keys" map (file morph
index → shape key name), which a renamed morph keeps, so its shape key stays its own.
"""
from __future__ import annotations

import json

import bpy
from bpy.props import CollectionProperty, EnumProperty, IntProperty, StringProperty

from ...blender import armature as barm
from ...blender.props import json_prop
from ...blender.selection import find_armature
from ...blender.sidebar_ui import ModelOperator, SidebarPanel
from .blender_mmd import NAMED_FOR, PROP, pmx_names
from ...blender.translations import translate

LIST_PROP = "skinbridge_pmx_names"
ICONS = {"BONE": "BONE_DATA", "MORPH": "SHAPEKEY_DATA", "MATERIAL": "MATERIAL"}


def _meshes(arm_ob) -> list:
    return [ob for ob in bpy.data.objects if ob.type == "MESH" and ob.find_armature() == arm_ob]


def _materials(arm_ob) -> list:
    out = []
    for ob in _meshes(arm_ob):
        out += [m for m in ob.data.materials if m is not None and m not in out and json_prop(m, PROP)]
    return out


def name_rows(arm_ob) -> list[tuple[str, str, str, str]]:
    """(kind, key, Japanese, English) of every bone, morph and material of `arm_ob`'s model that came from a
    PMX file, in file order; the key finds the element again (bone or material name, morph index)."""
    rows = []
    for bone in arm_ob.data.bones:
        raw = barm.bone_extras(bone).get("pmx")
        if isinstance(raw, dict):  # the names the export writes (a bone renamed in Blender: its new name)
            rows.append((raw.get("index", 0), ("BONE", bone.name, *pmx_names(bone))))
    out = [row for _, row in sorted(rows, key=lambda r: r[0])]
    for k, m in enumerate(json_prop(arm_ob, PROP).get("morphs", [])):
        out.append(("MORPH", str(k), m["name"], m["name_e"]))
    for mat in _materials(arm_ob):
        raw = json_prop(mat, PROP)
        out.append(("MATERIAL", mat.name, raw.get("name", ""), raw.get("name_e", "")))
    return out


def set_names(arm_ob, kind: str, key: str, japanese: str, english: str) -> None:
    """Write the Japanese and English name of one element (`name_rows`' kind and key) where the export reads
    them."""
    if kind == "BONE":
        bone = arm_ob.data.bones[key]
        data = json_prop(bone, barm.PROP)
        data["pmx"].update(name=japanese, name_e=english)
        data["pmx"][NAMED_FOR] = bone.name  # set for this Blender name: they win over it
        bone[barm.PROP] = json.dumps(data, ensure_ascii=False)
    elif kind == "MORPH":
        data = json_prop(arm_ob, PROP)
        morph = data["morphs"][int(key)]
        if morph["kind"] == 1:  # a vertex morph: its shape key by index from now on, not by its old name
            data.setdefault("shape_keys", {}).setdefault(key, morph["name"])
        morph.update(name=japanese, name_e=english)
        arm_ob[PROP] = json.dumps(data, ensure_ascii=False)
    else:
        mat = bpy.data.materials[key]
        data = json_prop(mat, PROP)
        data.update(name=japanese, name_e=english)
        mat[PROP] = json.dumps(data, ensure_ascii=False)


def _edited(item, context) -> None:
    arm_ob = bpy.data.objects.get(item.armature)
    if arm_ob is not None and arm_ob.type == "ARMATURE":
        set_names(arm_ob, item.kind, item.key, item.japanese, item.english)


class SKINBRIDGE_PG_pmx_name(bpy.types.PropertyGroup):
    kind: EnumProperty(items=[("BONE", "Bone", ""), ("MORPH", "Morph", ""), ("MATERIAL", "Material", "")])
    key: StringProperty(description="The bone or material name, or the morph's index")
    armature: StringProperty(description="The armature object of the model")
    japanese: StringProperty(name="Japanese", description="The name MMD shows (PMX name)", update=_edited)
    english: StringProperty(name="English", description="The English name (PMX name_e)", update=_edited)


class SKINBRIDGE_OT_pmx_names_load(ModelOperator, bpy.types.Operator):
    """List the PMX names of the active model's bones, morphs and materials in the Names panel"""
    bl_idname = "skinbridge.pmx_names_load"
    bl_label = "Load Names"
    bl_options = {"REGISTER"}
    modes = None  # any mode: it only reads the model

    def run(self, context, arm_ob):
        items = getattr(context.scene, LIST_PROP)
        items.clear()
        for kind, key, japanese, english in name_rows(arm_ob):
            item = items.add()
            # the copies are set before `armature` is: their update writes nothing back while loading
            item.kind, item.key, item.japanese, item.english = kind, key, japanese, english
            item.armature = arm_ob.name
        self.report({"INFO"}, translate(f"{len(items)} names of {arm_ob.name}"))
        return {"FINISHED"}


class SKINBRIDGE_UL_pmx_names(bpy.types.UIList):
    def draw_item(self, context, layout, data, item, icon, active_data, active_propname, index=0, flt_flag=0):
        row = layout.row(align=True)
        row.label(text="", icon=ICONS[item.kind])
        row.prop(item, "japanese", text="", emboss=False)
        row.prop(item, "english", text="", emboss=False)


class VIEW3D_PT_skinbridge_pmx_names(SidebarPanel, bpy.types.Panel):
    """Japanese and English names of the PMX model's bones, morphs and materials, side by side, editable"""
    bl_label = "Names (PMX)"

    def draw(self, context):
        layout = self.layout
        arm_ob = find_armature(context)
        layout.operator(SKINBRIDGE_OT_pmx_names_load.bl_idname, icon="FILE_REFRESH")
        items = getattr(context.scene, LIST_PROP)
        if arm_ob is None or not len(items) or items[0].armature != arm_ob.name:
            layout.label(text="Load the names of the active model", icon="INFO")
            return
        row = layout.row()
        row.label(text="Japanese")
        row.label(text="English")
        layout.template_list(SKINBRIDGE_UL_pmx_names.__name__, "", context.scene, LIST_PROP, context.scene,
                             f"{LIST_PROP}_index", rows=8)


CLASSES = (SKINBRIDGE_PG_pmx_name, SKINBRIDGE_OT_pmx_names_load, SKINBRIDGE_UL_pmx_names,
           VIEW3D_PT_skinbridge_pmx_names)


def register() -> None:
    """The scene's list of names (after CLASSES are registered)."""
    setattr(bpy.types.Scene, LIST_PROP, CollectionProperty(type=SKINBRIDGE_PG_pmx_name))
    setattr(bpy.types.Scene, f"{LIST_PROP}_index", IntProperty(min=0))


def unregister() -> None:
    for prop in (LIST_PROP, f"{LIST_PROP}_index"):
        if hasattr(bpy.types.Scene, prop):
            delattr(bpy.types.Scene, prop)


def rename_kept_bone(arm, old: str, new: str) -> str | None:
    """The sidebar's Rename to Fit on a bone of a PMX file (capability `rename_kept_bone`): the bone whose PMX
    name is `old` gets the PMX name `new` and `old` as its English name, as the export would write them;
    Blender's name of the bone stays. What was done, or None when no bone has the PMX name `old`."""
    for bone in arm.data.bones:
        data = barm.bone_extras(bone)
        raw = data.get("pmx")
        if isinstance(raw, dict) and pmx_names(bone)[0] == old:
            raw.update(name=new, name_e=old)
            raw[NAMED_FOR] = bone.name
            bone[barm.PROP] = json.dumps(data, ensure_ascii=False)
            return f"bone {bone.name!r}: its PMX name {old!r} is now {new!r}, {old!r} its English name"
    return None
