"""Valve SMD and VTA (Studiomdl Data, text): codec (`smd`), `info`, `check`, mapping (`convert`) and, inside
Blender only, import/export (`blender_io`) with File menu entries (`ops`). Valve DMX (the element graph of the
Source tools, binary or keyvalues2 text): codec (`dmx`), `info` and `check` (`dmx_check`), the model and its
animations as a core Scene (`dmx_convert`), a core Scene as DMX files with a QC (`dmx_write`) and, inside
Blender only, import and export (`blender_dmx`). Valve QC projects: reader and
writer (`qc`) and, inside Blender only, the import of every file a QC names (`blender_qc`).

No bpy here: `import skinbridge.io_smd.smd` works in a Python without Blender.
"""
from ..core.formatspec import FormatSpec


def _sniff(head: bytes) -> bool:
    from .smd import sniff  # numpy, 60-90 ms import: the registry loads for --help without it

    return sniff(head)


def _sniff_dmx(head: bytes) -> bool:
    from .dmx import sniff  # numpy, 60-90 ms import: the registry loads for --help without it

    return sniff(head)


FORMATS = (
    FormatSpec(
        name="smd",
        label="Valve SMD / VTA",
        kind="model",
        extensions=(".smd", ".vta"),
        sniff=_sniff,
        head=4096,
        weak=True,
        target="smd",
        folder_suffix="_SMD",
        operators="io_smd.ops",
        import_operator="import_scene.skinbridge_smd",
        export_operator="export_scene.skinbridge_smd",
        capabilities={
            "read": "io_smd.smd:read",
            "write": "io_smd.smd:write",
            "kind_of": "io_smd.smd:kind_of",
            "info": "io_smd.info:info",
            "check": "io_smd.check:check",
            "load": "io_smd.convert:load",
            "semantic": "io_smd.convert:semantic",
            "blender_import": "io_smd.blender_io:blender_import",
            "motion_loader": "io_smd.blender_io:load_motion",
            "export_target": "io_smd.blender_io:export_target",
            "write_scene": "io_smd.convert:write_scene",
            "demo": "io_smd.blender_demo:demo_rows",
        },
    ),
    FormatSpec(
        name="dmx",
        label="Valve DMX",
        kind="model",
        extensions=(".dmx",),
        sniff=_sniff_dmx,
        head=512,  # a gzip-compressed file's header comment lies inside its first few hundred bytes
        target="dmx",
        folder_suffix="_DMX",
        operators="io_smd.ops",
        import_operator="import_scene.skinbridge_dmx",
        export_operator="export_scene.skinbridge_dmx",
        capabilities={
            "read": "io_smd.dmx:read",
            "write": "io_smd.dmx:write",
            "info": "io_smd.dmx_check:info",
            "check": "io_smd.dmx_check:check",
            "load": "io_smd.dmx_convert:load",
            "semantic": "io_smd.dmx_convert:semantic",
            "blender_import": "io_smd.blender_dmx:blender_import",
            "kind_of": "io_smd.dmx_convert:kind_of",
            "motion_loader": "io_smd.blender_dmx:load_motion",
            "export_target": "io_smd.blender_dmx:export_target",
            "write_scene": "io_smd.dmx_write:write_scene",
        },
    ),
    FormatSpec(
        name="qc",
        label="Valve QC project",
        kind="model",
        extensions=(".qc",),
        sniff=None,  # free text of commands: only the extension names it
        capabilities={
            "info": "io_smd.qc:info",
            "kind_of": "io_smd.qc:kind_of",
            "blender_import": "io_smd.blender_qc:blender_import",
        },
    ),
)
