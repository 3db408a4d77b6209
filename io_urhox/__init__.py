"""UrhoX / Urho3D models (UMD2, UMDL, UMD3) and animations (UANI, UAN2). Importable without bpy."""
from ..core.formatspec import FormatSpec

MODEL_MAGICS = (b"UMD2", b"UMDL", b"UMD3")
ANIMATION_MAGICS = (b"UANI", b"UAN2")

FORMATS = (
    FormatSpec(
        name="umd2", label="UrhoX / Urho3D model", kind="model", extensions=(".mdl",),
        sniff=lambda head: head[:4] in MODEL_MAGICS, head=4,
        target="urhox", folder_suffix="_UrhoX",
        operators="io_urhox.ops", import_operator="import_scene.urhox_mdl", export_operator="export_scene.urhox_mdl",
        capabilities={
            "read": "io_urhox.umd2:read", "write": "io_urhox.umd2:write",
            "info": "io_urhox.commands:model_info", "check": "io_urhox.check:check_model",
            "load": "io_urhox.commands:load_model", "semantic": "io_urhox.commands:model_semantic",
            "blender_import": "io_urhox.blender_io:import_for_convert",
            "export_target": "io_urhox.blender_io:export_package",
            "demo": "io_urhox.blender_demo:demo_rows", "write_scene": "io_urhox.commands:write_scene",
        }),
    FormatSpec(
        name="uani", label="UrhoX / Urho3D animation", kind="motion", extensions=(".ani",),
        sniff=lambda head: head[:4] in ANIMATION_MAGICS, head=4,
        import_operator="import_scene.urhox_ani", export_operator="export_scene.urhox_ani",
        capabilities={
            "read": "io_urhox.uani:read", "write": "io_urhox.uani:write",
            "info": "io_urhox.commands:animation_info", "check": "io_urhox.check:check_animation",
            "load": "io_urhox.commands:load_animation", "semantic": "io_urhox.commands:animation_semantic",
            "motion_loader": "io_urhox.blender_ani:load_motion",
        }),
)


def register():
    from . import ops

    ops.register()


def unregister():
    from . import ops

    ops.unregister()
