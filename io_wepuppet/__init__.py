"""Wallpaper Engine puppets and models (`.mdl`, MDLV 4–23), textures (`.tex`) and projects (`project.json`,
`scene.json`): codecs (`mdl`, `tex`, `project`), summaries (`info`), checks (`check`), the mapping to the core
model (`convert`) and, inside Blender only, import/export (`blender_io`, `blender_project`) with File menu
entries (`ops`). No bpy here.
"""
import re

from ..core.formatspec import FormatSpec

# a project.json names its scene file ("file"); a scene.json lists its layers ("objects") beside its camera or
# general settings. Other JSON of a project (models/*.json, materials, editor files) has none of these pairs.
_PROJECT_KEYS = re.compile(rb'"file"\s*:\s*"[^"]*"')
_PROJECT_MORE = (b'"general"', b'"title"', b'"type"')
_SCENE_MORE = (b'"camera"', b'"general"')


def _sniff_mdl(head: bytes) -> bool:
    return head[:4] == b"MDLV"


def _sniff_tex(head: bytes) -> bool:
    return head[:4] == b"TEXV"


def _sniff_project(head: bytes) -> bool:
    if head.lstrip(b"\xef\xbb\xbf \t\r\n")[:1] != b"{":
        return False
    if b'"objects"' in head and any(k in head for k in _SCENE_MORE):
        return True
    return _PROJECT_KEYS.search(head) is not None and any(k in head for k in _PROJECT_MORE)


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
                      "demo": "io_wepuppet.blender_demo:demo_rows"},
        clip_modes=True),
    FormatSpec(
        name="wetex", label="Wallpaper Engine texture", kind="texture", extensions=(".tex",),
        sniff=_sniff_tex, head=16, operators="io_wepuppet.ops",
        import_operator="import_scene.skinbridge_wetex", export_operator="export_scene.skinbridge_wetex",
        capabilities={"read": "io_wepuppet.tex:read", "write": "io_wepuppet.tex:write",
                      "info": "io_wepuppet.info:info_tex", "check": "io_wepuppet.check:check_tex",
                      "semantic": "io_wepuppet.check:texture_semantic",
                      "blender_import": "io_wepuppet.blender_io:blender_import_tex"}),
    # a project is imported as one model: the whole scene (camera, every layer) is what its Blender import builds
    FormatSpec(
        name="weproject", label="Wallpaper Engine project", kind="model", extensions=(".json",),
        sniff=_sniff_project, head=4096, weak=True, target="weproject", folder_suffix="_WEproject",
        operators="io_wepuppet.ops", import_operator="import_scene.skinbridge_weproject",
        export_operator="export_scene.skinbridge_weproject",
        capabilities={"info": "io_wepuppet.project:info_file",
                      "blender_import": "io_wepuppet.blender_project:blender_import",
                      "export_target": "io_wepuppet.blender_project:export_target"}),
)
