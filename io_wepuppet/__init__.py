"""Wallpaper Engine puppets and models (`.mdl`, MDLV 4–23), textures (`.tex`) and projects (`project.json`,
`scene.json`), in parts named for them: `texture/`, `puppet/` and `project/`, each with its codec, `info`,
`check` and, inside Blender only, `blender_io`; the File menu entries of all three are `ops`. No bpy here.
"""
import re

from ..core.formatspec import FormatSpec, Option
from .project.pkg import is_package
from .puppet.units import METRES_PER_UNIT, UNITS_PER_METRE

# The parts of this package, bottom first: a part imports only the parts before it (a puppet is drawn with a
# texture; a project's layers are textures, puppets and models); `ops` (directly in the package) uses them all.
PARTS = ("texture", "puppet", "project")

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
    if is_package(head):  # scene.pkg: the files of a workshop project in one
        return True
    if head.lstrip(b"\xef\xbb\xbf \t\r\n")[:1] != b"{":
        return False
    if b'"objects"' in head and any(k in head for k in _SCENE_MORE):
        return True
    return _PROJECT_KEYS.search(head) is not None and any(k in head for k in _PROJECT_MORE)


TEXTURE_OPTIONS = (
    Option("lz4", bool, False, label="LZ4",
           help="compress the mips with LZ4 where it helps (an image imported from a .tex keeps its file's "
                "compression)"),
)

PUPPET_OPTIONS = (
    # 0 (the operator's start) or not given: the model's own import unit. Its earlier operator id `scale` held
    # metres per pixel, the inverse.
    Option("units_per_metre", float, None, unit="image pixels per metre", low=0.0, high=1e6, metavar="S",
           ui_default=0.0, inverse_aliases=("scale",), label="Units per Metre",
           help=f"image pixels written for one Blender metre; 0 or not given: the model's own import unit, else "
                f"{UNITS_PER_METRE:g} (the import's default {METRES_PER_UNIT:g} metres per pixel)"),
    Option("layout_format", str, "KEEP", label="Format",
           choices=(("KEEP", "As imported / narrow MDLV0013",
                     "The imported file's MDLV and section versions; new models: MDLV0013 with 52-byte vertices"),
                    ("WIDE", "Wide (MDLV0023, experimental)",
                     "80-byte vertices, format 0x0180000F. Unverified against Wallpaper Engine: the reference and "
                     "the seed disagree on the v17+ header and no v17+ file was available")),
           help="the .mdl layout written: the imported file's (else narrow MDLV0013) or wide MDLV0023"),
    Option("project_files", bool, False, label="Write project files", blender_only=True,
           help="also models/<name>.json, materials/<name>.tex and a material .json beside the chosen folder "
                "(convert --to wepuppet always writes them)"),
)


def _metres_per(pixel: str) -> Option:
    """The one File › Import choice of puppets and projects: Blender metres per `pixel` (its earlier property id
    `scale`, the same unit, is an alias). The command line imports with the default."""
    return Option("metres_per_unit", float, METRES_PER_UNIT, unit=f"metres per {pixel}", low=1e-6, high=1e6,
                  label="Metres per Pixel",
                  aliases=("scale",),
                  help=f"Blender metres per {pixel} ({METRES_PER_UNIT:g}: {UNITS_PER_METRE:g} px = 1 m)")


PUPPET_IMPORT_OPTIONS = (_metres_per("image pixel"),)
PROJECT_IMPORT_OPTIONS = (_metres_per("scene pixel"),)
PROJECT_OPTIONS = (
    Option("package", bool, False, label="Package (scene.pkg)",
           help="write the project's files into scene.pkg, with project.json and its preview beside it, as a "
                "workshop item holds them (an imported package keeps its entry order and magic)"),
)

FORMATS = (
    FormatSpec(
        name="wepuppet", label="Wallpaper Engine puppet / model", kind="model", extensions=(".mdl",),
        sniff=_sniff_mdl, head=16, target="wepuppet", folder_suffix="_WE", options=PUPPET_OPTIONS,
        import_options=PUPPET_IMPORT_OPTIONS, operators="io_wepuppet.ops",
        import_operator="import_scene.skinbridge_wepuppet", export_operator="export_scene.skinbridge_wepuppet",
        capabilities={"read": "io_wepuppet.puppet.mdl:read", "write": "io_wepuppet.puppet.mdl:write",
                      "info": "io_wepuppet.puppet.info:info", "check": "io_wepuppet.puppet.check:check",
                      "diff_view": "io_wepuppet.puppet.check:diff_view",
                      "load": "io_wepuppet.puppet.convert:load", "semantic": "io_wepuppet.puppet.convert:semantic",
                      "blender_import": "io_wepuppet.puppet.blender_io:blender_import",
                      "export_target": "io_wepuppet.puppet.blender_io:export_target",
                      "demo": "io_wepuppet.puppet.blender_demo:demo_rows"},
        clip_modes=True),
    FormatSpec(
        name="wetex", label="Wallpaper Engine texture", kind="texture", extensions=(".tex",),
        sniff=_sniff_tex, head=16, options=TEXTURE_OPTIONS, operators="io_wepuppet.ops",
        import_operator="import_scene.skinbridge_wetex", export_operator="export_scene.skinbridge_wetex",
        capabilities={"read": "io_wepuppet.texture.tex:read", "write": "io_wepuppet.texture.tex:write",
                      "info": "io_wepuppet.texture.info:info", "check": "io_wepuppet.texture.check:check",
                      "semantic": "io_wepuppet.texture.check:semantic",
                      "blender_import": "io_wepuppet.texture.blender_io:blender_import"}),
    # a project is imported as one model: the whole scene (camera, every layer) is what its Blender import builds
    FormatSpec(
        name="weproject", label="Wallpaper Engine project", kind="model", extensions=(".json", ".pkg"),
        sniff=_sniff_project, head=4096, weak=True, target="weproject", folder_suffix="_WEproject",
        options=PROJECT_OPTIONS, import_options=PROJECT_IMPORT_OPTIONS, operators="io_wepuppet.ops",
        import_operator="import_scene.skinbridge_weproject", export_operator="export_scene.skinbridge_weproject",
        capabilities={"info": "io_wepuppet.project.info:info", "members": "io_wepuppet.project.pkg:members",
                      "blender_import": "io_wepuppet.project.blender_io:blender_import",
                      "export_target": "io_wepuppet.project.blender_io:export_target"}),
)
