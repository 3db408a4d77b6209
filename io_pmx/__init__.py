"""MikuMikuDance PMX 2.0/2.1 models, VMD motions and VPD poses: codecs (`pmx`, `vmd`, `vpd`), validator, summaries,
mappings and, inside Blender only, import/export (`blender_*`) with File menu entries (`ops`).

No bpy here: `import skinbridge.io_pmx.model.pmx` works in a Python without Blender; the add-on's registration
(app/operators.py) imports the operators (`FORMATS`' `operators`).
"""
from ..core.formatspec import FormatSpec, Option
from .model.units import METRES_PER_UNIT, UNITS_PER_METRE

# The parts of this package, bottom first: a part imports only the parts before it; modules directly in the
# package (scene_files) use the bpy-free parts; `blender_side` (the only part that imports bpy) may use everything.
PARTS = ("model", "motion", "pose", "rig", "blender_side")

VMD_SIGNATURE = b"Vocaloid Motion Data"
VPD_SIGNATURE = b"Vocaloid Pose Data file"

OPTIONS = (
    Option("mmd_rig", bool, False, label="MMD Rig",
           help="add the MMD control bones (全ての親, センター, グルーブ, 腰, 上半身2, 足IK親, 足ＩＫ, つま先ＩＫ) and "
                "MMD bone names to any humanoid or animal armature"),
    Option("bone_map", str, None, metavar="FILE.json", path=True, check="io_pmx.rig.bone_map:load_bone_map",
           help='JSON object {"source bone": "MMD name" or null} overriding the automatic bone mapping (null drops '
                'the bone as a helper)'),
    Option("arm_angle", float, 0.0, unit="degrees", low=-90.0, high=90.0, metavar="DEGREES",
           help="turn the left upper arm by +θ and the right by −θ degrees about Blender's +Y through the bone's "
                "head (a T-pose arm's tip drops by θ); the mesh is re-posed with linear blend skinning"),
    # 0 (the operator's start) or not given: the model's own import unit. Its earlier id `scale` (the --scale flag
    # and the operator property) sets it too.
    Option("units_per_metre", float, None, unit="units per metre", low=0.0, high=1e6, metavar="S", ui_default=0.0,
           aliases=("scale",), label="Units per Metre",
           help=f"MMD units written for one metre; 0 or not given: the model's own import unit, else "
                f"{UNITS_PER_METRE:g} (MMD's 8 cm unit); a model outside 2 to 200 units tall gets a warning naming "
                "the --units-per-metre that makes it 20"),
)

# Options of the PMX import operator (File › Import; the command line's conversions import with physics off:
# frames sampled out of order cannot simulate).
IMPORT_OPTIONS = (
    # inward, so metres per MMD unit; its earlier id `scale` held MMD units per metre, the inverse
    Option("metres_per_unit", float, METRES_PER_UNIT, unit="metres per MMD unit", low=1e-6, high=1e6,
           inverse_aliases=("scale",), label="Metres per Unit",
           help=f"Blender metres of one MMD unit ({METRES_PER_UNIT:g}: MMD's 8 cm), stored with the model so that "
                "its export writes the same units"),
    Option("physics", bool, True, label="MMD Physics",
           help="make the rigid bodies simulate when the scene plays, the bones following their bodies as in MMD "
                "(off: the bodies are kept for export and a motion plays as MMD plays it with physics off)"),
    Option("sdef", bool, True, label="SDEF",
           help="vertices with SDEF weights bend about their SDEF centre as in MMD (elbows and knees keep their "
                "volume), through a modifier after the Armature modifier; the MMD panel switches it"),
)

# What File › Export › MikuMikuDance Motion takes besides the action it writes (the command line writes a PMX's
# motions at their keyframes, as `convert --to pmx`).
# What File › Import › MikuMikuDance Motion takes (the command line's --motion imports with these defaults).
VMD_IMPORT_OPTIONS = (
    Option("camera", bool, True, label="Camera", help="make an animated camera from camera keys"),
    Option("mmd_time", bool, True, label="MMD Frame Rate",
           help="set the scene to 30 fps (keys on whole frames) and its frame range to cover the motion, as MMD "
                "plays it"),
)

VMD_OPTIONS = (
    Option("bake", bool, False, label="Bake Every Frame", blender_only=True,
           help="write a key on every whole 30-fps frame instead of at the keyframes"),
)

FORMATS = (
    FormatSpec(
        name="pmx", label="MikuMikuDance model (PMX)", kind="model", extensions=(".pmx",),
        sniff=lambda head: head[:4] == b"PMX ", head=4,
        target="pmx", folder_suffix="_PMX", options=OPTIONS, import_options=IMPORT_OPTIONS,
        operators="io_pmx.blender_side.ops", import_operator="import_scene.skinbridge_pmx",
        export_operator="export_scene.skinbridge_pmx",
        capabilities={
            "read": "io_pmx.model.pmx:read", "write": "io_pmx.model.pmx:write",
            "info": "io_pmx.model.info:info", "check": "io_pmx.model.check:check",
            "diff_view": "io_pmx.model.check:diff_view",
            "semantic": "io_pmx.model.validate:semantic",
            "load": "io_pmx.model.convert:load", "write_scene": "io_pmx.scene_files:write_scene",
            "blender_import": "io_pmx.blender_side.blender_io:blender_import",
            "export_target": "io_pmx.blender_side.blender_io:export_target",
            "demo": "io_pmx.blender_side.blender_demo:demo_rows",
            "rename_kept_bone": "io_pmx.blender_side.blender_names:rename_kept_bone",
            "compare_view": "io_pmx.model.convert:scene_compare_view",
        }),
    FormatSpec(
        name="pmd", label="MikuMikuDance model (PMD)", kind="model", extensions=(".pmd",),
        sniff=lambda head: head[:3] == b"Pmd", head=3, import_options=IMPORT_OPTIONS,
        operators="io_pmx.blender_side.ops", import_operator="import_scene.skinbridge_pmd",
        capabilities={
            "read": "io_pmx.model.pmd:read", "load": "io_pmx.model.pmd:load",
            "blender_import": "io_pmx.blender_side.blender_io:blender_import",
        }),
    FormatSpec(
        name="vmd", label="MikuMikuDance motion (VMD)", kind="motion", extensions=(".vmd",),
        sniff=lambda head: head[:len(VMD_SIGNATURE)] == VMD_SIGNATURE, head=len(VMD_SIGNATURE),
        options=VMD_OPTIONS, import_options=VMD_IMPORT_OPTIONS,
        import_operator="import_anim.skinbridge_vmd", export_operator="export_anim.skinbridge_vmd",
        rest_in_model=True,
        capabilities={
            "read": "io_pmx.motion.vmd:read", "write": "io_pmx.motion.vmd:write",
            "info": "io_pmx.motion.info:info", "check": "io_pmx.motion.check:check",
            "load": "io_pmx.motion.convert:load_vmd",
            "motion_loader": "io_pmx.blender_side.blender_motion_import:load_motion",
        }),
    FormatSpec(
        name="vpd", label="MikuMikuDance pose (VPD)", kind="motion", extensions=(".vpd",),
        sniff=lambda head: head[:len(VPD_SIGNATURE)] == VPD_SIGNATURE, head=len(VPD_SIGNATURE),
        import_operator="import_anim.skinbridge_vpd", export_operator="export_anim.skinbridge_vpd",
        capabilities={"read": "io_pmx.pose.vpd:read", "write": "io_pmx.pose.vpd:write",
                      "info": "io_pmx.pose.info:info"}),
)
