"""MikuMikuDance PMX 2.0/2.1 models and VMD motions: codecs (`pmx`, `vmd`), validator, summaries, mappings and,
inside Blender only, import/export (`blender_*`) with File menu entries (`ops`).

No bpy here: `import skinbridge.io_pmx.pmx` works in a Python without Blender; `register()` imports the
operators.
"""
from ..core.formatspec import FormatSpec

VMD_SIGNATURE = b"Vocaloid Motion Data"


def _pmx_semantic(model) -> list[str]:
    from .validate import validate

    return [str(f) for f in validate(model, for_export=False)]


def _pmx_blender_import(context, path: str, options) -> list[str]:
    from .blender_io import import_pmx

    return import_pmx(context, path).warnings


FORMATS = (
    FormatSpec(
        name="pmx", label="MikuMikuDance model (PMX)", kind="model", extensions=(".pmx",),
        sniff=lambda head: head[:4] == b"PMX ", head=4,
        target="pmx", folder_suffix="_PMX", convert_options=("mmd_rig", "bone_map", "arm_angle", "scale"),
        operators="io_pmx.ops", import_operator="import_scene.skinbridge_pmx",
        export_operator="export_scene.skinbridge_pmx",
        capabilities={
            "read": "io_pmx.pmx:read", "write": "io_pmx.pmx:write",
            "info": "io_pmx.info:info", "check": "io_pmx.validate:check", "semantic": _pmx_semantic,
            "load": "io_pmx.convert:load", "write_scene": "io_pmx.scene_files:write_scene",
            "blender_import": _pmx_blender_import,
            "export_target": "io_pmx.blender_io:export_target",
            "demo": "io_pmx.blender_demo:demo_rows",
        }),
    FormatSpec(
        name="vmd", label="MikuMikuDance motion (VMD)", kind="motion", extensions=(".vmd",),
        sniff=lambda head: head[:len(VMD_SIGNATURE)] == VMD_SIGNATURE, head=len(VMD_SIGNATURE),
        import_operator="import_anim.skinbridge_vmd", export_operator="export_anim.skinbridge_vmd",
        capabilities={
            "read": "io_pmx.vmd:read", "write": "io_pmx.vmd:write",
            "info": "io_pmx.vmd_info:info", "check": "io_pmx.vmd_check:check",
            "load": "io_pmx.vmd_core:load_vmd",
            "motion_loader": "io_pmx.blender_vmd_import:load_motion",
        }),
)


def register():
    from . import ops

    ops.register()


def unregister():
    from . import ops

    ops.unregister()
