"""Motion import seconds: BST's walkn DMX (249 KB, 154 bones, no mesh; issue 47 asks at most 0.6 s for File ›
Import) and one motion of each other family that builds actions through blender/action.py.

usage: .venv/bin/python bench/dmx_motion.py [--repeat N] [--only TEXT,...] [--json FILE]

Rows (the shared samples, read in place):
  * walkn File › Import: the operator on the file into an empty scene (its own rig and one action);
  * walkn onto a rig: the registry's motion loader onto the armature a first import made;
  * UANI Kachujin_Walk onto Kachujin (bones whose binds carry shear: fitted keys, the deformation check over
    7,602 vertices), UANI Ninja_Walk onto Ninja, GR2 glaive onto the Genasi head's MDB, SMD ActionFilter onto
    BST's Cube: each the motion loader onto the armature of the model's import.
Each row: the fewest seconds of N runs, each in a fresh factory-settings scene (the model's import and the
scene reset untimed). Compare two checkouts by running this file from each (the rows name no revision).
"""
from __future__ import annotations

import argparse
import json
import pathlib
import runpy

ROOT = pathlib.Path(__file__).resolve().parents[1]
SAMPLES = ROOT.parent / "shared" / "testdata"
WALKN = SAMPLES / "dmx" / "bst_walkn.dmx.gz"
LIMIT = 0.6  # seconds: walkn's File › Import (issue 47; BST 3.4.3 takes 0.61 s)

runpy.run_path(str(ROOT / "bench" / "_checkout.py"))  # `skinbridge` importable before its first import

from skinbridge.bench.timing import best_of, fresh_blender  # noqa: E402

# (row, model imported untimed before each run or None, the motion, how it is imported)
ROWS = [
    ("DMX walkn File > Import", None, WALKN, "operator"),
    ("DMX walkn onto its rig", WALKN, WALKN, "loader"),
    ("UANI Kachujin_Walk", SAMPLES / "urho3d" / "Kachujin.mdl", SAMPLES / "urho3d" / "Kachujin_Walk.ani", "loader"),
    ("UANI Ninja_Walk", SAMPLES / "urho3d" / "Ninja.mdl", SAMPLES / "urho3d" / "Ninja_Walk.ani", "loader"),
    ("GR2 glaive onto head", SAMPLES / "gr2" / "ovr_P_HEF_head83.MDB", SAMPLES / "gr2" / "ovr_p_ddf_glaive01.GR2",
     "loader"),
    ("SMD ActionFilter", SAMPLES / "smd" / "bst_Cube_Armature_ref.smd",
     SAMPLES / "smd" / "bst_ActionFilter_X_Axis_anim.smd", "loader"),
]


def measure(row: tuple, repeat: int) -> float:
    """The fewest seconds of `repeat` imports of the row's motion, each in a fresh scene."""
    bpy = fresh_blender()
    from skinbridge import formats  # bpy's modules: only once fresh_blender has set Blender up
    from skinbridge.blender.selection import find_armature  # the same

    _, model, motion, how = row
    target = {}

    def setup():
        bpy.ops.wm.read_factory_settings(use_empty=True)
        target.clear()
        if model is not None:
            formats.identify_file(model).get("blender_import")(bpy.context, str(model), None)
            target["arm"] = find_armature(bpy.context, required=True)

    def run():
        if how == "operator":
            assert bpy.ops.import_scene.skinbridge_dmx(filepath=str(motion)) == {"FINISHED"}
        else:
            formats.identify_file(motion).get("motion_loader")(bpy.context, str(motion), target.get("arm"), None)

    seconds, _ = best_of(repeat, run, setup)
    return seconds


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--only", default="", help="rows whose name holds one of these (comma-separated)")
    ap.add_argument("--json", help="also write the figures here")
    args = ap.parse_args()
    wanted = [w.strip().lower() for w in args.only.split(",") if w.strip()]
    figures = {}
    print(f"motion import, fewest seconds of {args.repeat} (each in a fresh factory-settings scene)")
    for row in ROWS:
        if wanted and not any(w in row[0].lower() for w in wanted):
            continue
        figures[row[0]] = measure(row, args.repeat)
        print(f"  {row[0]:<26} {figures[row[0]]:.3f} s", flush=True)
    ok = True
    if ROWS[0][0] in figures:
        ok = figures[ROWS[0][0]] <= LIMIT
        print(f"walkn File > Import {figures[ROWS[0][0]]:.3f} s, limit {LIMIT} s: {'ok' if ok else 'NOT MET'}")
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(figures, indent=1))
    return 0 if ok else 1


if __name__ == "__main__":
    from skinbridge.blender.compat import exit_process  # Blender 4.5's wheel hangs in teardown

    exit_process(main())
