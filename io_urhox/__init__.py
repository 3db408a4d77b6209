"""UrhoX / Urho3D models (UMD2, UMDL, UMD3) and animations (UANI, UAN2). Importable without bpy."""
from ..core.formatspec import FormatSpec, Option

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

OPTIONS = (
    Option("profile", str, "urhox", choices=PROFILES,
           help="the rules the model is written by: urhox, glTF axes and all bones in every mapping; urho3d, "
                "left-handed Y up, geometries split at --max-bones, morphs and collision data written"),
    Option("max_bones", int, 64, unit="bones per geometry", low=1, high=255, metavar="N",
           help="bones per geometry under the urho3d profile"),
    Option("deform_only", bool, False, label="Deforming Bones Only",
           help="drop bones that deform nothing and have no deforming descendants"),
    Option("ani_format", str, "urhox", choices=ANI_FORMATS, default_from="profile", label="Animation Format",
           help="animation files: UrhoX UANI v2, classic Urho3D UANI or rbfx UAN2"),
)

FORMATS = (
    FormatSpec(
        name="umd2", label="UrhoX / Urho3D model", kind="model", extensions=(".mdl",),
        sniff=lambda head: head[:4] in MODEL_MAGICS, head=4,
        target="urhox", folder_suffix="_UrhoX", options=OPTIONS,
        operators="io_urhox.ops", import_operator="import_scene.skinbridge_urhox", export_operator="export_scene.skinbridge_urhox",
        capabilities={
            "read": "io_urhox.umd2:read", "write": "io_urhox.umd2:write",
            "info": "io_urhox.info:model_info", "check": "io_urhox.check:check_model",
            "load": "io_urhox.scene_files:load_model", "semantic": "io_urhox.convert:semantic",
            "blender_import": "io_urhox.blender_io:blender_import",
            "export_target": "io_urhox.blender_io:export_target",
            "demo": "io_urhox.blender_demo:demo_rows", "write_scene": "io_urhox.scene_files:write_scene",
        }),
    FormatSpec(
        name="uani", label="UrhoX / Urho3D animation", kind="motion", extensions=(".ani",),
        sniff=lambda head: head[:4] in ANIMATION_MAGICS, head=4,
        import_operator="import_anim.skinbridge_urhox_ani", export_operator="export_anim.skinbridge_urhox_ani",
        capabilities={
            "read": "io_urhox.uani:read", "write": "io_urhox.uani:write",
            "info": "io_urhox.info:animation_info", "check": "io_urhox.check:check_animation",
            "load": "io_urhox.scene_files:load_animation", "semantic": "io_urhox.ani_convert:semantic",
            "motion_loader": "io_urhox.blender_ani:load_motion",
        }),
)
