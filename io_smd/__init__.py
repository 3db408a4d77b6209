"""Valve SMD and VTA (Studiomdl Data, text): codec (`smd`), `info`, `check`, mapping (`convert`) and, inside
Blender only, import/export (`blender_io`) with File menu entries (`ops`).

No bpy here: `import skinbridge.io_smd.smd` works in a Python without Blender.
"""
from ..core.formatspec import FormatSpec


def _sniff(head: bytes) -> bool:
    from .smd import sniff

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
        capabilities={
            "read": "io_smd.smd:read",
            "write": "io_smd.smd:write",
            "kind_of": "io_smd.smd:kind_of",
            "info": "io_smd.info:info",
            "check": "io_smd.check:check",
        },
    ),
)
