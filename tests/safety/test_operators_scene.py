"""Operators change nothing when they import nothing, motions follow one rule in the operators and in convert,
motion Collection Exporters take their collection's rig, and "Add MMD Physics to Chain" never doubles a body."""
from __future__ import annotations

import pytest

bpy = pytest.importorskip("bpy")

from support.blender_scenes import import_urhox  # noqa: E402
from skinbridge.app import pipeline  # noqa: E402
from skinbridge.app.options import ConvertOptions  # noqa: E402
from skinbridge.core.errors import ExportError  # noqa: E402
from skinbridge.io_pmx.blender_side import blender_physics as blender_physics# noqa: E402

pytestmark = pytest.mark.blender

URHO = "urho3d"


def _import(path) -> object:
    """The armature of an UrhoX model imported through the operator."""
    return next(o for o in import_urhox(path) if o.type == "ARMATURE")


def _choose(arm) -> None:
    for ob in bpy.context.view_layer.objects:
        ob.select_set(False)
    arm.select_set(True)
    bpy.context.view_layer.objects.active = arm


def _state(arm) -> tuple:
    s = bpy.context.scene
    ad = arm.animation_data
    return (s.render.fps, s.render.fps_base, s.frame_start, s.frame_end, s.frame_current,
            sorted(a.name for a in bpy.data.actions), ad.action.name if ad and ad.action else None,
            sorted(o.name for o in bpy.data.objects))


def test_vmd_matching_no_bone_leaves_the_scene_time_as_it_was(clean_scene, testdata):
    """The VMD operator sets MMD's 30 fps and the motion's range when it imports: not when it imports nothing."""
    ninja = _import(testdata / URHO / "Ninja.mdl")
    _choose(ninja)
    scene = bpy.context.scene
    scene.render.fps, scene.frame_start, scene.frame_end = 24, 5, 77
    scene.frame_set(9)
    before = _state(ninja)
    with pytest.raises(RuntimeError, match="shagamu.vmd"):
        bpy.ops.import_anim.skinbridge_vmd(filepath=str(testdata / "pmx" / "mlibgo_shagamu.vmd"))
    assert _state(ninja) == before


SMD_TWO_TRACKS = ("version 1\nnodes\n0 \"NoSuchBoneA\" -1\n1 \"NoSuchBoneB\" 0\nend\nskeleton\n"
                  "time 0\n0 0 0 0 0 0 0\n1 0 1 0 0 0 0\ntime 1\n0 0 0 1 0 0 0\n1 0 1 0 0 0 0.5\nend\n")


def test_smd_animation_matching_no_bone_is_refused_by_operator_and_convert_alike(clean_scene, testdata, tmp_path):
    ninja = _import(testdata / URHO / "Ninja.mdl")
    _choose(ninja)
    path = tmp_path / "walk.smd"
    path.write_text(SMD_TWO_TRACKS)
    before = _state(ninja)
    with pytest.raises(RuntimeError, match=r"walk.*none of its 2 tracks matches a bone of Ninja"):
        bpy.ops.import_scene.skinbridge_smd(filepath=str(path))
    assert _state(ninja) == before
    with pytest.raises(ExportError, match="none of its .*tracks matches a bone"):  # convert --motion's step
        pipeline.load_motion(bpy.context, str(path), ConvertOptions(target="urhox"))
    assert _state(ninja) == before


def test_multi_file_smd_import_keeps_the_good_files_and_names_the_bad(clean_scene, testdata, tmp_path):
    """One transaction per file: the refused animation leaves nothing, the other files are imported."""
    ninja = _import(testdata / URHO / "Ninja.mdl")
    _choose(ninja)
    (tmp_path / "walk.smd").write_text(SMD_TWO_TRACKS)
    (tmp_path / "broken.smd").write_bytes(b"version 1\nnodes\n0 \"root -1\nend\n")
    (tmp_path / "cube.smd").write_bytes((testdata / "smd" / "bst_Cube_Armature_ref.smd").read_bytes())
    objects = set(bpy.data.objects)
    with pytest.raises(RuntimeError) as e:
        bpy.ops.import_scene.skinbridge_smd(directory=str(tmp_path), files=[
            {"name": "walk.smd"}, {"name": "broken.smd"}, {"name": "cube.smd"}])
    assert "walk.smd" in str(e.value) and "broken.smd: " in str(e.value) and "no closing quote" in str(e.value)
    new = set(bpy.data.objects) - objects
    assert new and all(o.name.startswith(("bst_Cube", "cube", "Cube", "Armature")) for o in new), new
    assert "walk" not in [a.name for a in bpy.data.actions]


@pytest.fixture
def two_rigs_with_actions(clean_scene, testdata):
    ninja = _import(testdata / URHO / "Ninja.mdl")
    kachujin = _import(testdata / URHO / "Kachujin.mdl")
    for arm, motion in ((ninja, "Ninja_Walk.ani"), (kachujin, "Kachujin_Walk.ani")):
        _choose(arm)
        assert bpy.ops.import_anim.skinbridge_urhox_ani(filepath=str(testdata / URHO / motion)) == {"FINISHED"}
    coll = bpy.data.collections.new("NinjaOnly")
    bpy.context.scene.collection.children.link(coll)
    for ob in [ninja, *ninja.children]:
        coll.objects.link(ob)
    return ninja, kachujin


@pytest.mark.parametrize("export,file", [
    (lambda out, **kw: bpy.ops.export_anim.skinbridge_vmd(filepath=str(out / "m.vmd"), **kw), "m.vmd"),
    (lambda out, **kw: bpy.ops.export_anim.skinbridge_urhox_ani(directory=str(out), **kw),
     "Animations/Ninja_Walk.ani")])
def test_motion_collection_exporter_takes_its_collections_rig(two_rigs_with_actions, tmp_path, export, file):
    ninja, kachujin = two_rigs_with_actions
    _choose(ninja)
    alone = tmp_path / "alone"
    assert export(alone) == {"FINISHED"}
    _choose(kachujin)  # the active rig is of another collection
    scoped = tmp_path / "scoped"
    assert export(scoped, collection="NinjaOnly") == {"FINISHED"}
    assert (scoped / file).read_bytes() == (alone / file).read_bytes()
    with pytest.raises(RuntimeError, match="holds no armature"):
        empty = bpy.data.collections.new("Empty")
        bpy.context.scene.collection.children.link(empty)
        export(tmp_path / "none", collection="Empty")
    assert not (tmp_path / "none").exists()


def test_physics_chain_twice_adds_nothing_the_second_time(clean_scene, addon):
    from skinbridge.app import demo
    from skinbridge.blender import scene as bscene

    arm = bscene.build_scene(bpy.context, demo.humanoid_scene(), "Humanoid").armature
    chain = [demo.PREFIX + n for n in ("LeftArm", "LeftForeArm", "LeftHand")]
    bpy.context.view_layer.objects.active = arm
    bpy.ops.object.mode_set(mode="POSE")
    for part in (chain, chain, chain[1:]):  # the same chain, then a part of it
        with bpy.context.temp_override(selected_pose_bones=[arm.pose.bones[n] for n in part]):
            if part is chain and not blender_physics.physics_objects(arm)[0]:
                assert bpy.ops.pose.skinbridge_mmd_physics_chain() == {"FINISHED"}
                continue
            objects = len(bpy.data.objects)
            with pytest.raises(RuntimeError, match=f"{part[0]}.* MMD physics: nothing added"):
                bpy.ops.pose.skinbridge_mmd_physics_chain()
            assert len(bpy.data.objects) == objects
    bpy.ops.object.mode_set(mode="OBJECT")
    bodies, joints = blender_physics.physics_objects(arm)
    assert (len(bodies), len(joints)) == (3, 2)
    assert sum(c.name.startswith(blender_physics.FOLLOW) for n in chain for c in arm.pose.bones[n].constraints) == 2
