"""Fox's armature and its Walk written as GR2 files from Blender and read back: the skeleton's bones, and the
same pose at every key and half key (the action as the core reads it, slerped, against Granny's evaluation
of the written curves) within 1e-5 of the Fox's height."""
from __future__ import annotations

import pathlib

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from skinbridge import formats  # noqa: E402
from skinbridge.app.options import ConvertOptions  # noqa: E402
from skinbridge.app.pipeline import convert_file  # noqa: E402
from skinbridge.blender import action as bact  # noqa: E402
from skinbridge.blender import armature as barm  # noqa: E402
from skinbridge.core.transforms import quat_to_matrix3, slerp  # noqa: E402
from skinbridge.io_mdb.gr2 import animation as gr2_animation, blender_io as gr2_blender, convert as gr2_convert, gr2  # noqa: E402
from skinbridge.io_mdb.gr2 import export as gr2_export, skeleton as gr2_skeleton  # noqa: E402

pytestmark = pytest.mark.blender


def _interpolated(times, values, t, rotation: bool):
    k = int(np.clip(np.searchsorted(times, t, side="right") - 1, 0, max(len(times) - 2, 0)))
    if len(times) == 1:
        return values[0]
    u = float(np.clip((t - times[k]) / (times[k + 1] - times[k]), 0, 1))
    return slerp(values[k], values[k + 1], u) if rotation else (1 - u) * values[k] + u * values[k + 1]


def _core_local(track, t: float) -> np.ndarray:
    out = np.eye(4)
    out[:3, :3] = quat_to_matrix3(_interpolated(track.rotation_times, track.rotations, t, True))
    out[:3, 3] = _interpolated(track.translation_times, track.translations, t, False)
    if track.scales is not None:
        out[:3, :3] *= _interpolated(track.scale_times, track.scales, t, False)[None, :]
    return out


def _granny_local(track: gr2_animation.Gr2Track, t: float) -> np.ndarray:
    s = gr2_animation.sample_track(track, np.array([t]))
    out = np.eye(4)
    out[:3, :3] = gr2_skeleton.quaternion_matrix(s["orientation"][1][-1])
    if s["scale_shear"] is not None:
        out[:3, :3] = out[:3, :3] @ s["scale_shear"][1][-1].reshape(3, 3)
    out[:3, 3] = s["position"][1][-1] / gr2_export.UNITS_PER_METRE
    return out


def _heads(skel, locals_: dict) -> np.ndarray:
    world = np.empty((len(skel.bones), 4, 4))
    for i, b in enumerate(skel.bones):
        local = locals_.get(b.name, b.rest_local)
        world[i] = local if b.parent < 0 else world[b.parent] @ local
    return world[:, :3, 3]


def test_fox_walk_written_as_gr2_reads_back_with_the_same_pose(clean_scene, testdata, tmp_path):
    formats.get("gltf").get("blender_import")(bpy.context, str(testdata / "gltf" / "Fox.glb"), ConvertOptions())
    rig = next(ob for ob in bpy.context.scene.objects if ob.type == "ARMATURE")
    paths, _ = gr2_blender.export_gr2(bpy.context, str(tmp_path), "Fox", rig, "Fox_skel")
    assert [p.rsplit("/", 1)[-1] for p in paths][0] == "Fox.gr2" and str(tmp_path / "Walk.gr2") in paths
    skeleton = gr2_export.parents_first(barm.read_skeleton(rig))
    (written,) = gr2_skeleton.skeletons(gr2.read((tmp_path / "Fox.gr2").read_bytes()))
    assert written.name == "Fox_skel" and written.names == skeleton.names
    world = written.world_matrices()
    world[:, :3, 3] /= gr2_export.UNITS_PER_METRE
    assert np.abs(world - skeleton.binds()).max() < 1e-5 * max(1.0, np.abs(skeleton.binds()[:, :3, 3]).max())

    core, _ = bact.read_action(bpy.context, rig, bpy.data.actions["Walk"])
    (read,) = gr2_animation.animations(gr2.read((tmp_path / "Walk.gr2").read_bytes()))
    assert read.duration == pytest.approx(core.length, abs=1e-6)
    (group,) = read.groups
    assert group.name == "Fox_skel" and len(group.tracks) == len(core.tracks)
    granny = {t.name: t for t in group.tracks}
    ours = {t.bone: t for t in core.tracks}
    keys = np.unique(np.concatenate([t.rotation_times for t in core.tracks] + [t.translation_times
                                                                                 for t in core.tracks]))
    times = np.concatenate([keys, (keys[:-1] + keys[1:]) / 2])
    rest = _heads(skeleton, {})
    height = float(np.ptp(rest, axis=0).max())
    worst = moved = 0.0
    for t in times:
        a = _heads(skeleton, {n: _core_local(tr, t) for n, tr in ours.items()})
        b = _heads(skeleton, {n: _granny_local(tr, t) for n, tr in granny.items()})
        worst = max(worst, float(np.abs(a - b).max()))
        moved = max(moved, float(np.abs(a - rest).max()))
    assert moved > 0.05 * height  # the walk moves the legs: the comparison is not of rest poses
    assert worst < 1e-5 * height


def test_convert_to_gr2_writes_the_heads_skeleton_and_the_loaded_attack(addon, tmp_path):
    gr2_dir = pathlib.Path(__file__).resolve().parents[3] / "shared" / "testdata" / "gr2"
    attack = gr2_dir / "ovr_p_ddf_glaive01.GR2"
    paths, _ = convert_file(str(gr2_dir / "ovr_P_HEF_head83.MDB"), str(tmp_path), "head",
                            ConvertOptions(target="gr2", motions=[str(attack)]))
    assert sorted(pathlib.Path(p).name for p in paths) == ["head.gr2", "ovr_p_ddf_glaive01.gr2"]
    (skeleton,) = gr2_skeleton.skeletons(gr2.read((tmp_path / "head.gr2").read_bytes()))
    assert skeleton.name == "P_HHF_skel" and len(skeleton.bones) == 88  # as the head's SKIN packets name it
    (anim,) = gr2_animation.animations(gr2.read((tmp_path / "ovr_p_ddf_glaive01.gr2").read_bytes()))
    (group,) = anim.groups
    # the body group's 67 tracks: 55 on bones, 12 on none kept on the action and written back
    assert group.name == "P_HHF_skel" and len(group.tracks) == 67
    assert anim.duration == pytest.approx(5 / 3, abs=1e-6)
    assert {t.scale_shear.format for t in group.tracks} == {"DaIdentity"}
    # the output folder as `compare` reads it: the skeleton file with the motion beside it
    scene, _ = gr2_convert.load(str(tmp_path / "head.gr2"), (tmp_path / "head.gr2").read_bytes(), True,
                             [str(tmp_path / "ovr_p_ddf_glaive01.gr2")])
    assert len(scene.skeleton.bones) == 88 and [len(a.tracks) for a in scene.animations] == [67]
