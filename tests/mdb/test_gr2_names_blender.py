"""Issue 50 item 5: a GR2 skeleton imported into Blender and exported again keeps the skeleton's name and its
animation's track group name (`P_HHF_skel`, not the armature object's `P_HHF_skel_rig`), also when the armature
lost the property that holds the name (a round trip through another format, a script), so the MDB parts that
name it still find it."""
from __future__ import annotations

import pathlib

import bpy
import pytest

from skinbridge.io_mdb.gr2 import animation, bind, gr2, skeleton
from skinbridge.io_mdb.gr2 import blender_io as gr2_blender

pytestmark = [pytest.mark.blender, pytest.mark.slow]  # two exports of the skeleton and its animation: about 2-3 s

GR2_DIR = pathlib.Path(__file__).resolve().parents[3] / "shared" / "testdata" / "gr2"
SKELETON = GR2_DIR / "ovr_P_HEF_skel83.GR2"
GLAIVE = GR2_DIR / "ovr_p_hhf_glaive01.GR2"


def _names(path: str) -> tuple[list[str], list[list[str]]]:
    f = gr2.read(pathlib.Path(path).read_bytes())
    return [s.name for s in skeleton.skeletons(f)], [[g.name for g in a.groups] for a in animation.animations(f)]


def test_a_skeleton_through_blender_keeps_its_name_and_its_track_group_name(clean_scene, tmp_path):
    gr2_blender.import_file(bpy.context, str(SKELETON), None)
    (rig,) = [ob for ob in bpy.data.objects if ob.type == "ARMATURE"]
    assert rig.name == "P_HHF_skel_rig"
    gr2_blender.import_gr2_animations(bpy.context, str(GLAIVE), rig)
    paths, _ = gr2_blender.export_gr2(bpy.context, str(tmp_path / "kept"), "out", keep=False)
    assert _names(paths[0]) == (["P_HHF_skel"], [])
    for key in list(rig.keys()):  # the property holding the name lost (another format, a script)
        del rig[key]
    paths, _ = gr2_blender.export_gr2(bpy.context, str(tmp_path), "out", keep=False)
    assert _names(paths[0]) == (["P_HHF_skel"], [])
    assert _names(paths[1]) == ([], [["P_HHF_skel"]])
    folder = tmp_path / "part"
    folder.mkdir()
    (folder / "out.gr2").write_bytes(pathlib.Path(paths[0]).read_bytes())
    assert bind.find_skeleton("P_HHF_skel", [str(folder)]) is not None  # the parts that name it find it
