"""Neverwinter Nights 2: models (.mdb, the part `mdb/`) and the Granny 2 skeletons and animations they play on
(.gr2, the part `gr2/`), each part with the module names of docs/architecture.md §4.1; the File menu entries of
both (`ops`) sit in the family. docs/nwn2.md "Code map" lists the modules.

No bpy here: `import skinbridge.io_mdb.mdb.mdb` works in a Python without Blender.
"""
from ..core.formatspec import FormatSpec, Option
from .gr2 import MAGIC as GR2_MAGIC

# An input named "pack.hak:head.mdb" (or a Data zip's member) when no file has that name: read from the archive
# (formats.py asks every package's MEMBER_READER; docs/nwn2.md §5.8)
MEMBER_READER = "io_mdb.archive.archive:member_input"

# The parts of this package, bottom first: a part imports only the parts before it (an MDB binds its GR2
# skeleton: mdb uses gr2; both read archives); modules directly in the package (ops) use both.
PARTS = ("archive", "gr2", "mdb")

OPTIONS = (
    Option("skeleton", str, None, metavar="NAME",
           help="the GR2 skeleton a skinned model's SKIN packets name, e.g. P_HHM_skel (required for skinned "
                "meshes without one)"),
    Option("limit_weights", bool, False, label="Limit and Normalise Weights",
           help="keep each vertex's 4 largest weights and renormalise them (otherwise refused)"),
    Option("skeleton_path", str, None, metavar="DIR", reading=True,
           help="when the input is an MDB: folders or archives (.zip, .hak, .erf, .mod; separated by the system's "
                "path separator) searched after the MDB's own for the .gr2 holding the skeleton its SKIN packets "
                "name"),
    Option("hak", str, None, metavar="NAME.hak", label="Hak Pack",
           help="also pack the .mdb written into NAME.hak beside it (an ERF V1.1 pack a module can use)"),
)
EXPORT_OPTIONS = tuple(o for o in OPTIONS if not o.reading)  # skeleton_path is the import's (see gr2/bind.py)


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
            "read": "io_mdb.mdb.mdb:read",
            "write": "io_mdb.mdb.mdb:write",
            "info": "io_mdb.mdb.info:info",
            "check": "io_mdb.mdb.check:check",
            "load": "io_mdb.mdb.convert:load",
            "semantic": "io_mdb.mdb.convert:semantic",
            "blender_import": "io_mdb.mdb.blender_io:blender_import",
            "export_target": "io_mdb.mdb.blender_io:export_target",
            "demo": "io_mdb.mdb.blender_demo:demo_rows",
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
            "read": "io_mdb.gr2.gr2:read",
            "write": "io_mdb.gr2.write:rewrite",  # our layout (sections uncompressed): the typed data, not the bytes
            "diff_view": "io_mdb.gr2.check:diff_view",
            "info": "io_mdb.gr2.info:info",
            "check": "io_mdb.gr2.check:check",
            "load": "io_mdb.gr2.convert:load",
            "semantic": "io_mdb.gr2.convert:semantic",
            "kind_of": "io_mdb.gr2.convert:kind_of",
            "motion_loader": "io_mdb.gr2.blender_io:load_motion",
            "export_target": "io_mdb.gr2.blender_io:export_target",
            "blender_import": "io_mdb.gr2.blender_io:blender_import",
        },
    ),
)
