"""Wallpaper Engine puppets and models (`.mdl`, MDLV 4–23) and textures (`.tex`): codecs (`mdl`, `tex`),
summaries (`info`), checks (`check`), the mapping to the core model (`convert`) and, inside Blender only,
import/export (`blender_io`) with File menu entries (`ops`). No bpy here.
"""
from ..core.formatspec import FormatSpec


def _sniff_mdl(head: bytes) -> bool:
    return head[:4] == b"MDLV"


def _sniff_tex(head: bytes) -> bool:
    return head[:4] == b"TEXV"


FORMATS = (
    FormatSpec(
        name="wepuppet", label="Wallpaper Engine puppet / model", kind="model", extensions=(".mdl",),
        sniff=_sniff_mdl, head=16, target="wepuppet", folder_suffix="_WE", operators="io_wepuppet.ops",
        import_operator="import_scene.skinbridge_wepuppet", export_operator="export_scene.skinbridge_wepuppet",
        capabilities={"read": "io_wepuppet.mdl:read", "write": "io_wepuppet.mdl:write",
                      "info": "io_wepuppet.info:info", "check": "io_wepuppet.check:check",
                      "load": "io_wepuppet.convert:load", "semantic": "io_wepuppet.convert:semantic",
                      "blender_import": "io_wepuppet.blender_io:blender_import",
                      "export_target": "io_wepuppet.blender_io:export_target",
                      "demo": "io_wepuppet.blender_demo:demo_rows"}),
    FormatSpec(
        name="wetex", label="Wallpaper Engine texture", kind="texture", extensions=(".tex",),
        sniff=_sniff_tex, head=16, operators="io_wepuppet.ops",
        import_operator="import_scene.skinbridge_wetex", export_operator="export_scene.skinbridge_wetex",
        capabilities={"read": "io_wepuppet.tex:read", "write": "io_wepuppet.tex:write",
                      "info": "io_wepuppet.info:info_tex", "check": "io_wepuppet.check:check_tex",
                      "semantic": "io_wepuppet.check:texture_semantic",
                      "blender_import": "io_wepuppet.blender_io:blender_import_tex"}),
)
