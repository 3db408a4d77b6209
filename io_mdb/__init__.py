"""Neverwinter Nights 2 models (.mdb): codec (`mdb`), summary (`info`), findings (`check`), mapping (`convert`),
SKIN bone order (`bones`) and, inside Blender only, import/export (`blender_io`), the demo row (`blender_demo`)
and File menu entries (`ops`). Granny 2 skeletons and animations (.gr2): reader (`gr2`, with the `oodle1`
decompressor), skeletons (`gr2_skeleton`), curves (`gr2_curves`), animations (`gr2_anim`), summary and findings
(`gr2_info`), an MDB's skeleton found and bound (`gr2_bind`), a skeleton file as a core Scene (`gr2_convert`) and,
inside Blender only, a skeleton file as an armature and animations loaded onto one (`blender_gr2`).

No bpy here: `import skinbridge.io_mdb.mdb` works in a Python without Blender.
"""
from ..core.formatspec import FormatSpec, Option

OPTIONS = (
    Option("skeleton", str, None, metavar="NAME",
           help="the GR2 skeleton a skinned model's SKIN packets name, e.g. P_HHM_skel (required for skinned "
                "meshes without one)"),
    Option("limit_weights", bool, False, label="Limit and Normalise Weights",
           help="keep each vertex's 4 largest weights and renormalise them (otherwise refused)"),
    Option("skeleton_path", str, None, metavar="DIR", reading=True,
           help="when the input is an MDB: folders (separated by the system's path separator) searched after the "
                "MDB's own for the .gr2 holding the skeleton its SKIN packets name"),
)
EXPORT_OPTIONS = tuple(o for o in OPTIONS if not o.reading)  # skeleton_path is the import's (see gr2_bind)


# Granny 2, little-endian with 32-bit pointers: the only kind NWN2 ships (docs/nwn2.md §5.1)
GR2_MAGIC = bytes.fromhex("b867b0caf86db10f84728c7e5e19001e")


def _sniff(head: bytes) -> bool:
    return head[:4] == b"NWN2"


FORMATS = (
    FormatSpec(
        name="mdb",
        label="Neverwinter Nights 2 model",
        kind="model",
        extensions=(".mdb",),
        sniff=_sniff,
        head=16,
        target="mdb", options=OPTIONS,
        folder_suffix="_MDB",
        operators="io_mdb.ops",
        import_operator="import_scene.skinbridge_mdb",
        export_operator="export_scene.skinbridge_mdb",
        capabilities={
            "read": "io_mdb.mdb:read",
            "write": "io_mdb.mdb:write",
            "info": "io_mdb.info:info",
            "check": "io_mdb.check:check",
            "load": "io_mdb.convert:load",
            "semantic": "io_mdb.convert:semantic",
            "blender_import": "io_mdb.blender_io:blender_import",
            "export_target": "io_mdb.blender_io:export_target",
            "demo": "io_mdb.blender_demo:demo_rows",
        },
    ),
    FormatSpec(
        name="gr2",
        label="Granny 2 skeleton or animation (NWN2)",
        kind="model",
        extensions=(".gr2",),
        sniff=lambda head: head[:len(GR2_MAGIC)] == GR2_MAGIC,
        head=len(GR2_MAGIC),
        target="gr2",
        folder_suffix="_GR2",
        operators="io_mdb.ops",
        import_operator="import_scene.skinbridge_gr2",
        export_operator="export_scene.skinbridge_gr2",
        capabilities={
            "read": "io_mdb.gr2:read",
            "info": "io_mdb.gr2_info:info",
            "check": "io_mdb.gr2_info:check",
            "load": "io_mdb.gr2_anim:load",
            "semantic": "io_mdb.gr2_anim:semantic",
            "kind_of": "io_mdb.gr2_anim:kind_of",
            "motion_loader": "io_mdb.blender_gr2:load_motion",
            "export_target": "io_mdb.blender_gr2:export_target",
            "blender_import": "io_mdb.blender_gr2:blender_import",
        },
    ),
)
