"""UrhoX / Urho3D models (UMD2, UMDL, UMD3) and animations (UANI, UAN2). Importable without bpy.

The parts: `model/` (the `.mdl` codec, its mapping, info, check and Blender import/export) and `motion/` (the
`.ani` codec, its mapping onto a model's axes, trigger sidecars, info, check and Blender import/export). Modules
directly here serve both: `scene_files` (Scenes without Blender), `blender_io` (the UrhoX package that
`convert --to urhox` writes), `blender_demo` and the operators (`ops`).
"""
from ..core.formatspec import FormatSpec, Option

# The parts of this package, bottom first: a part imports only the parts before it (a motion is read with its
# model's axes); modules directly in the package may use both.
PARTS = ("model", "motion")

MODEL_MAGICS = (b"UMD2", b"UMDL", b"UMD3")
ANIMATION_MAGICS = (b"UANI", b"UAN2")

PROFILES = (
    ("urhox", "UrhoX", "glTF axes (right-handed, Y up), every geometry maps all bones, no morphs (UrhoX glb2mdl "
                       "rules)"),
    ("urho3d", "Urho3D", "Left-handed Y up as Urho3D's tools write, geometries split at Max Bones, morphs written"),
)
ANI_FORMATS = (
    ("urhox", "UrhoX (UANI v2)", "Versioned UANI: u32-length names, step/linear byte, full T/R/S keys"),
    ("urho3d", "Urho3D (classic)", "Classic UANI: C-string names, channel mask from the animated channels"),
    ("rbfx", "rbfx (UAN2)", "rbfx's UAN2: the classic layout with a version, track weights and attribute tracks "
                            "(the file's own while kept)"),
)

PROFILE = Option("profile", str, "urhox", choices=PROFILES,
                 help="the rules the model is written by: urhox, glTF axes and all bones in every mapping; urho3d, "
                      "left-handed Y up, geometries split at --max-bones, morphs and collision data written")
ANI_FORMAT = Option("ani_format", str, "urhox", choices=ANI_FORMATS, default_from="profile", label="Animation Format",
                    help="animation files: UrhoX UANI v2, classic Urho3D UANI or rbfx UAN2")

OPTIONS = (
    PROFILE,
    Option("max_bones", int, 64, unit="bones per geometry", low=1, high=255, metavar="N",
           help="bones per geometry under the urho3d profile"),
    Option("deform_only", bool, False, label="Deforming Bones Only",
           help="drop bones that deform nothing and have no deforming descendants"),
    ANI_FORMAT,
)

# What File › Export › UrhoX / Urho3D Animations takes: the animation options of the model's target (one record
# each). Its Axes (`profile`), when the caller does not set it, are the ones the armature's model was imported
# with (ops.py).
ANIMATION_OPTIONS = (PROFILE, ANI_FORMAT)

_AXES = (("urhox", "UrhoX", "glTF axes (right-handed, Y up), as the UrhoX glb2mdl tool writes"),
         ("urho3d", "Urho3D", "Left-handed Y up with clockwise front faces, as Urho3D's tools write"))

# File › Import choices (the command line imports with the file's own axes, or --import-profile)
MODEL_IMPORT_OPTIONS = (
    Option("profile", str, "auto", label="Axes",
           choices=(("auto", "Automatic", "Urho3D axes for UMDL/UMD3 files and for UMD2 files with collision data "
                                          "or morphs, else UrhoX axes"),) + _AXES,
           help="the axes the file is read with"),
    Option("all_lods", bool, False, label="All LODs",
           help="import every LOD level as its own object in an LOD collection (levels above 0 hidden); otherwise "
                "LOD 0 only"),
)
ANIMATION_IMPORT_OPTIONS = (
    Option("profile", str, "auto", label="Axes",
           choices=(("auto", "Automatic", "The axes the armature's model was imported with (UrhoX for other "
                                          "armatures)"),) + _AXES,
           help="the axes the files are read with"),
)

FORMATS = (
    FormatSpec(
        name="umd2", label="UrhoX / Urho3D model", kind="model", extensions=(".mdl",),
        sniff=lambda head: head[:4] in MODEL_MAGICS, head=4,
        target="urhox", folder_suffix="_UrhoX", options=OPTIONS, import_options=MODEL_IMPORT_OPTIONS,
        operators="io_urhox.ops",
        import_operator="import_scene.skinbridge_urhox", export_operator="export_scene.skinbridge_urhox",
        capabilities={
            "read": "io_urhox.model.umd2:read", "write": "io_urhox.model.umd2:write",
            "info": "io_urhox.model.info:info", "check": "io_urhox.model.check:check",
            "load": "io_urhox.scene_files:load_model", "semantic": "io_urhox.model.convert:semantic",
            "blender_import": "io_urhox.model.blender_io:blender_import",
            "export_target": "io_urhox.blender_io:export_target",
            "demo": "io_urhox.blender_demo:demo_rows", "write_scene": "io_urhox.scene_files:write_scene",
        }),
    FormatSpec(
        name="uani", label="UrhoX / Urho3D animation", kind="motion", extensions=(".ani",),
        sniff=lambda head: head[:4] in ANIMATION_MAGICS, head=4,
        options=ANIMATION_OPTIONS, import_options=ANIMATION_IMPORT_OPTIONS,
        import_operator="import_anim.skinbridge_urhox_ani", export_operator="export_anim.skinbridge_urhox_ani",
        capabilities={
            "read": "io_urhox.motion.uani:read", "write": "io_urhox.motion.uani:write",
            "info": "io_urhox.motion.info:info", "check": "io_urhox.motion.check:check",
            "motion_loader": "io_urhox.motion.blender_io:load_motion",
            "load": "io_urhox.scene_files:load_animation", "semantic": "io_urhox.motion.convert:semantic",
        }),
)
