"""Actions owned by their rig (issue 46 item 3): two models of one kind, whose bones share names, in one scene each
export their own actions and nothing else, byte-identical to the export of the model alone; an action no armature
plays and no import tagged goes to an armature by bone names only when exactly one fits, else the export refuses it
naming the candidates (`blender.action.armature_actions`, docs/architecture.md §6.2)."""
from __future__ import annotations

import pathlib

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from skinbridge.blender import action as bact  # noqa: E402
from skinbridge.core.errors import ExportError  # noqa: E402
from skinbridge.io_pmx.blender_side import blender_io as pmx_io  # noqa: E402
from skinbridge.io_pmx.blender_side import blender_motion_export, blender_motion_import  # noqa: E402
from skinbridge.io_pmx.motion import vmd  # noqa: E402
from skinbridge.io_smd.smd import blender_io as smd_io  # noqa: E402
from skinbridge.io_wepuppet.puppet import blender_io as we_io  # noqa: E402
from skinbridge.io_wepuppet.puppet import mdl  # noqa: E402

pytestmark = pytest.mark.blender


def _armatures() -> list:
    return sorted((o for o in bpy.data.objects if o.type == "ARMATURE"), key=lambda o: o.name)


def _new_armature(before: set):
    new = [o for o in _armatures() if o.name not in before]
    assert len(new) == 1
    return new[0]


def _select_rig(arm) -> None:
    for ob in bpy.data.objects:
        ob.select_set(ob == arm or ob.parent == arm or any(
            m.type == "ARMATURE" and m.object == arm for m in getattr(ob, "modifiers", [])))
    bpy.context.view_layer.objects.active = arm


def test_two_wallpaper_engine_puppets_export_each_its_own_clips(clean_scene, testdata, tmp_path):
    path = testdata / "wepuppet" / "blacryu_goose_t_puppet.mdl"
    clips = len(mdl.read(path.read_bytes()).animations.clips)
    we_io.import_wepuppet(bpy.context, str(path))
    first = _armatures()[0]
    alone = tmp_path / "alone.mdl"
    we_io.export_wepuppet(bpy.context, str(alone))
    we_io.import_wepuppet(bpy.context, str(path))  # the same bone names (bone_N), the same clip names + .001
    second = _new_armature({first.name})
    for arm, other in ((first, second), (second, first)):
        mine = bact.armature_actions(arm)
        assert len(mine) == clips and not set(mine) & set(bact.armature_actions(other))
    _select_rig(first)
    both = tmp_path / "first.mdl"
    we_io.export_wepuppet(bpy.context, str(both), selected_only=True)
    assert len(mdl.read(both.read_bytes()).animations.clips) == clips
    assert both.read_bytes() == alone.read_bytes()


def _pmx_motion(bones: list[str], seed: int) -> vmd.Motion:
    rng = np.random.default_rng(seed)
    keys = vmd.new_bone_keys(2 * len(bones))
    for i, name in enumerate(bones):
        for k in range(2):
            rec = keys[2 * i + k]
            rec["name"] = vmd.encode_name(name)
            rec["frame"] = 10 * k
            rec["position"] = rng.uniform(-1, 1, 3) if k else (0, 0, 0)
    return vmd.Motion(bone_keys=keys)


def test_two_mmd_models_export_each_its_own_motions(clean_scene, testdata, tmp_path):
    path = testdata / "pmx" / "babylonmmd_constraint_test.pmx"
    first = pmx_io.import_pmx(bpy.context, str(path), physics=False).armature
    bones = [b.name for b in first.data.bones][:2]
    for k, arm in enumerate([first]):
        (tmp_path / f"m{k}.vmd").write_bytes(vmd.write(_pmx_motion(bones, k)))
        blender_motion_import.import_vmd(bpy.context, [str(tmp_path / f"m{k}.vmd")], arm)
    alone, _ = blender_motion_export.export_actions(bpy.context, str(tmp_path / "alone"), first)
    second = pmx_io.import_pmx(bpy.context, str(path), physics=False).armature
    assert second != first and {b.name for b in second.data.bones} == {b.name for b in first.data.bones}
    (tmp_path / "m1.vmd").write_bytes(vmd.write(_pmx_motion(bones, 1)))
    blender_motion_import.import_vmd(bpy.context, [str(tmp_path / "m1.vmd")], second)
    written, _ = blender_motion_export.export_actions(bpy.context, str(tmp_path / "both"), first)
    assert [pathlib.Path(p).name for p in written] == [pathlib.Path(p).name for p in alone] == ["m0.vmd"]
    assert pathlib.Path(written[0]).read_bytes() == pathlib.Path(alone[0]).read_bytes()
    assert [a.name for a in blender_motion_export.motion_actions(second)] == ["m1"]


SMD_DIR = pathlib.Path(__file__).resolve().parents[2].parent / "shared" / "testdata" / "smd"


def test_two_source_models_export_each_its_own_and_untagged_actions_by_bone_names(clean_scene, tmp_path):
    ref, anim = SMD_DIR / "bst_Cube_Armature_ref.smd", SMD_DIR / "bst_ActionFilter_X_Axis_anim.smd"
    smd_io.import_file(bpy.context, str(ref))
    first = _armatures()[0]
    smd_io.import_file(bpy.context, str(anim), armature=first)
    alone, _ = smd_io.export_animations(bpy.context, str(tmp_path / "alone"), first)
    smd_io.import_file(bpy.context, str(ref))
    second = _new_armature({first.name})
    smd_io.import_file(bpy.context, str(anim), armature=second)
    second.animation_data.action = None  # its action kept only by the import's tag
    _select_rig(first)
    written, _ = smd_io.export_animations(bpy.context, str(tmp_path / "both"), first)
    assert len(written) == len(alone) == 1
    assert pathlib.Path(written[0]).read_bytes() == pathlib.Path(alone[0]).read_bytes()
    assert [a.name for a in bact.armature_actions(second)] == ["bst_ActionFilter_X_Axis_anim.001"]
    # the tag follows the object through a rename
    first.name = "renamed"
    assert [a.name for a in bact.armature_actions(first)] == ["bst_ActionFilter_X_Axis_anim"]

    # an untagged action no armature plays, whose bones both armatures have: refused, naming both
    loose = first.animation_data.action.copy()
    loose.name = "loose"
    loose.use_fake_user = True  # kept by the saved file
    del loose[bact.OWNER_PROP]
    for arm in (first, second):
        _select_rig(arm)
        with pytest.raises(ExportError, match=r"'loose' \(fits bst_Cube_Armature_ref_rig\.001, renamed\)"):
            smd_io.export_animations(bpy.context, str(tmp_path / "refused"), arm)
    assert not (tmp_path / "refused").exists() or not any((tmp_path / "refused").iterdir())
    op = tmp_path / "op"  # File › Export: one error report, not even the reference written
    op.mkdir()
    with pytest.raises(RuntimeError, match="'loose'"):
        bpy.ops.export_scene.skinbridge_smd(filepath=str(op / "cube.smd"), animations=True)
    assert not any(op.iterdir())
    # ... whose bones only one armature has: exported with it
    bact.assign(second, bpy.data.actions["bst_ActionFilter_X_Axis_anim.001"])  # its curves follow the renames
    for bone in list(second.data.bones):
        bone.name = bone.name + "_b"
    assert [a.name for a in bact.armature_actions(first)] == ["bst_ActionFilter_X_Axis_anim", "loose"]
    assert [a.name for a in bact.armature_actions(second)] == ["bst_ActionFilter_X_Axis_anim.001"]
    _select_rig(first)
    written, _ = smd_io.export_animations(bpy.context, str(tmp_path / "one"), first)
    assert sorted(pathlib.Path(p).name for p in written) == ["bst_ActionFilter_X_Axis_anim.smd", "loose.smd"]
    # the tag survives save and reload (the action played by no armature)
    first.animation_data.action = None
    saved = tmp_path / "two.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(saved), copy=True)
    bpy.ops.wm.open_mainfile(filepath=str(saved))
    assert [a.name for a in bact.armature_actions(bpy.data.objects["renamed"])] == [
        "bst_ActionFilter_X_Axis_anim", "loose"]
