"""Valve's model files, one part per format:

* `qc/`: QC projects (the studiomdl project file): reader and writer (`qc`), summary (`info`);
* `smd/`: SMD and VTA (Studiomdl Data, text): codec (`smd`), summary (`info`), findings (`check`), mapping
  (`convert`), an imported file's bytes kept while unchanged (`kept`), a core Scene as files (`scene_files`)
  and, inside Blender only, import/export (`blender_io`) and the demo's rows (`blender_demo`);
* `dmx/`: DMX (the element graph of the Source tools, binary or keyvalues2 text): codec (`dmx`, with the text
  encoding in `kv2` and the records in `records`), summary (`info`), findings (`check`), the model and its
  animations as a core Scene (`convert`), a core Scene as DMX files with a QC (`write`, `scene_files`) and,
  inside Blender only, import/export (`blender_io`, with shared vertices and polygons in `blender_mesh`).

In the family package above the parts: the import of every file a QC names (`blender_qc`, Blender only) and the
File menu entries of SMD and DMX (`ops`).

No bpy here: `import skinbridge.io_smd.smd.smd` works in a Python without Blender.
"""
from ..core.formatspec import FormatSpec, Option

# The parts of this package, bottom first: a part imports only the parts before it (SMD and DMX exports write a
# QC, the DMX export samples animations as SMD does); modules directly in the package may use every part.
PARTS = ("qc", "smd", "dmx")

# What File › Export and `convert --to smd` take (one path: smd/blender_io.py `export_target`)
SMD_OPTIONS = (
    Option("flavour", str, "AUTO", label="Flavour",
           choices=(("AUTO", "As Read", "The flavour the mesh was imported in (Source for new meshes)"),
                    ("SOURCE", "Source", "Link columns on every vertex line, LF line ends"),
                    ("GOLDSRC", "GoldSrc", "No link columns (each corner on its heaviest bone), CRLF line ends")),
           help="the reference's flavour: AUTO as the mesh was imported (Source for new meshes), SOURCE (link "
                "columns, LF) or GOLDSRC (no link columns, each corner on its heaviest bone, CRLF)"),
    Option("animations", bool, True, label="Animations",
           help="write each action of the armature as <action>.smd in the same folder"),
    Option("flex", bool, True, label="Shape Keys (VTA)",
           help="write the shape keys as <name>.vta beside the reference"),
    Option("write_qc", bool, True, label="QC",
           help="write <name>.qc beside the files, naming them and each animation's fps"),
)


# What File › Export and `convert --to dmx` take (one path: dmx/blender_io.py `export_target`); the values of
# `dmx_version` but AUTO are dmx/write.py `BRANCHES` (tests/smd/test_dmx_encodings.py holds them equal)
DMX_OPTIONS = (
    Option("dmx_version", str, "AUTO", label="Engine Branch",
           choices=(("AUTO", "As Read", "The imported file's own encoding and model version; Source 2's for a new "
                                        "model"),
                    ("SOURCE2", "Source 2", "Binary 9, model 22 (Dota 2, Half-Life: Alyx, Counter-Strike 2)"),
                    ("SFM", "Portal 2 / SFM", "Binary 5, model 18 (Portal 2, Alien Swarm, Source Filmmaker)"),
                    ("L4D2", "Left 4 Dead 2", "Binary 4, model 15"),
                    ("TF2", "TF2 / SDK 2013", "Binary 2, model 1 (Team Fortress 2, Source SDK 2013, Garry's Mod)")),
           help="the engine branch whose tools read the files: AUTO (an imported file's own encoding, binary 9 / "
                "model 22 for a new model), SOURCE2 (binary 9, model 22), SFM (Portal 2 and Source Filmmaker: "
                "binary 5, model 18), L4D2 (binary 4, model 15) or TF2 (Source SDK 2013: binary 2, model 1)"),
    Option("keyvalues2", bool, False, label="Text (keyvalues2)",
           help="write keyvalues2 text instead of binary, in the branch's model version"),
)


def _sniff(head: bytes) -> bool:
    from .smd.smd import sniff  # numpy, 60-90 ms import: the registry loads for --help without it

    return sniff(head)


def _sniff_dmx(head: bytes) -> bool:
    from .dmx.dmx import sniff  # numpy, 60-90 ms import: the registry loads for --help without it

    return sniff(head)


FORMATS = (
    FormatSpec(
        name="smd", label="Valve SMD / VTA", kind="model", extensions=(".smd", ".vta"),
        sniff=_sniff, head=4096, weak=True,
        target="smd", folder_suffix="_SMD", options=SMD_OPTIONS,
        operators="io_smd.ops", import_operator="import_scene.skinbridge_smd",
        export_operator="export_scene.skinbridge_smd",
        capabilities={
            "read": "io_smd.smd.smd:read", "write": "io_smd.smd.smd:write", "kind_of": "io_smd.smd.smd:kind_of",
            "info": "io_smd.smd.info:info", "check": "io_smd.smd.check:check",
            "diff_view": "io_smd.smd.check:diff_view",
            "load": "io_smd.smd.convert:load", "semantic": "io_smd.smd.convert:semantic",
            "write_scene": "io_smd.smd.scene_files:write_scene",
            # inside Blender only
            "blender_import": "io_smd.smd.blender_io:blender_import", "demo": "io_smd.smd.blender_demo:demo_rows",
            "motion_loader": "io_smd.smd.blender_io:load_motion",
            "export_target": "io_smd.blender_qc:export_target",  # a scene imported from a QC: that project
        }),
    FormatSpec(
        name="dmx", label="Valve DMX", kind="model", extensions=(".dmx",), target="dmx", folder_suffix="_DMX",
        options=DMX_OPTIONS,
        operators="io_smd.ops", import_operator="import_scene.skinbridge_dmx",
        export_operator="export_scene.skinbridge_dmx",
        sniff=_sniff_dmx,
        head=512,  # a gzip-compressed file's header comment lies inside its first few hundred bytes
        capabilities={
            "read": "io_smd.dmx.dmx:read", "write": "io_smd.dmx.dmx:write", "info": "io_smd.dmx.info:info",
            "diff_view": "io_smd.dmx.check:diff_view",
            "check": "io_smd.dmx.check:check", "write_scene": "io_smd.dmx.scene_files:write_scene",
            "load": "io_smd.dmx.convert:load", "semantic": "io_smd.dmx.convert:semantic",
            "kind_of": "io_smd.dmx.convert:kind_of",
            # inside Blender only
            "blender_import": "io_smd.dmx.blender_io:blender_import",
            "motion_loader": "io_smd.dmx.blender_io:load_motion",
            "export_target": "io_smd.dmx.blender_io:export_target",
        }),
    FormatSpec(
        name="qc", label="Valve QC project", kind="model", extensions=(".qc",),
        sniff=None,  # free text of commands: only the extension names it
        capabilities={
            "info": "io_smd.qc.info:info", "kind_of": "io_smd.qc.qc:kind_of",
            "blender_import": "io_smd.blender_qc:blender_import",
        }),
)
