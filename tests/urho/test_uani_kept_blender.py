"""Through Blender, what an unchanged `.ani` keeps (issue 29): while a track's F-curves are unchanged its file
record is written again byte for byte (float32 rounding of rotations, key times, −0.0, tiny positions), and the
file's length and header fields while the frame range and format are the file's; an edited bone gets computed
keys for its track alone. Classic Urho3D, UrhoX v2 (written by our codec from a classic file) and rbfx UAN2
(whose track records are the classic ones) are covered."""
from __future__ import annotations

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from support.bytes_compare import assert_same_bytes  # noqa: E402

from skinbridge.blender import action as bact  # noqa: E402
from skinbridge.io_urhox.motion import blender_io as motion_io, uani  # noqa: E402
from skinbridge.io_urhox.model import blender_io  # noqa: E402

pytestmark = pytest.mark.blender

CLASSIC = [("Ninja.mdl", "Ninja_Walk"), ("Ninja.mdl", "Ninja_Idle1"), ("Ninja.mdl", "Ninja_HighJump")]
_ARRAYS = ("times", "positions", "rotations", "scales", "weights")


def _import(testdata, model: str, ani_paths, profile: str = "urho3d"):
    arm = blender_io.import_mdl(bpy.context, str(testdata / "urho3d" / model), profile).armature
    acts, _ = motion_io.import_ani(bpy.context, [str(p) for p in ani_paths], arm, profile)
    return arm, acts


def _export(arm, tmp_path, fmt: str, acts=None) -> dict[str, bytes]:
    written, _ = motion_io.export_actions(bpy.context, str(tmp_path / "out"), arm, fmt, "urho3d", actions=acts)
    return {p.rsplit("/", 1)[1][:-4]: open(p, "rb").read() for p in written if p.endswith(".ani")}


def _same_track(a: uani.Track, b: uani.Track) -> bool:
    if (a.name, a.channel_mask, a.interpolation) != (b.name, b.channel_mask, b.interpolation):
        return False
    for attr in _ARRAYS[:4]:
        x, y = getattr(a, attr), getattr(b, attr)
        if (x is None) != (y is None) or (x is not None and np.asarray(x).tobytes() != np.asarray(y).tobytes()):
            return False
    return True


def _as_urhox(classic: uani.Animation) -> uani.Animation:
    """A UrhoX v2 file of a classic one: every key holds T, R, S (identity fill where the file had none)."""
    out = uani.Animation(uani.VARIANT_URHOX, uani.URHOX_VERSION, "", classic.length)
    for t in classic.tracks:
        n = t.key_count
        out.tracks.append(uani.Track(
            t.name, t.times, positions=t.positions if t.positions is not None else np.zeros((n, 3), np.float32),
            rotations=t.rotations if t.rotations is not None else np.tile(np.float32([1, 0, 0, 0]), (n, 1)),
            scales=t.scales if t.scales is not None else np.ones((n, 3), np.float32),
            channel_mask=uani.CHANNELS_ALL, interpolation=uani.INTERPOLATION_LINEAR))
    return out


def _edit_one_key(act, bone: str) -> None:
    fc = next(fc for cb in bact._channelbags(act) for fc in cb.fcurves
              if fc.data_path == f'pose.bones["{bone}"].location' and fc.array_index == 0)
    fc.keyframe_points[len(fc.keyframe_points) // 2].co[1] += 0.01
    fc.update()


@pytest.mark.parametrize("model,clip", CLASSIC)
def test_classic_unchanged_is_byte_identical(clean_scene, testdata, tmp_path, model, clip):
    src = testdata / "urho3d" / f"{clip}.ani"
    arm, _ = _import(testdata, model, [src])
    got = _export(arm, tmp_path, "urho3d")[clip]
    assert_same_bytes(got, src.read_bytes(), uani.read, clip)


def test_several_files_at_once_each_byte_identical(clean_scene, testdata, tmp_path):
    paths = [testdata / "urho3d" / f"{c}.ani" for _, c in CLASSIC]
    arm, _ = _import(testdata, "Ninja.mdl", paths)
    got = _export(arm, tmp_path, "urho3d")
    for p in paths:
        assert_same_bytes(got[p.stem], p.read_bytes(), uani.read, p.stem)


def test_urhox_v2_unchanged_is_byte_identical(clean_scene, testdata, tmp_path):
    data = uani.write(_as_urhox(uani.read((testdata / "urho3d" / "Ninja_Walk.ani").read_bytes())))
    src = tmp_path / "Ninja_Walk.ani"
    src.write_bytes(data)
    arm, _ = _import(testdata, "Ninja.mdl", [src])
    assert_same_bytes(_export(arm, tmp_path, "urhox")["Ninja_Walk"], data, uani.read, "UrhoX v2")


def test_kachujin_rbfx_tracks_and_length_come_back(clean_scene, testdata, tmp_path):
    """Kachujin_Walk is rbfx UAN2 v2 (inexact bone frames, fitted keys): written as classic UANI, its header
    loses only the magic and version; every track record and the length are the file's, bit for bit."""
    src = testdata / "urho3d" / "Kachujin_Walk.ani"
    original = uani.read(src.read_bytes())
    assert original.variant == uani.VARIANT_RBFX
    arm, _ = _import(testdata, "Kachujin.mdl", [src])
    back = uani.read(_export(arm, tmp_path, "urho3d")["Kachujin_Walk"])
    assert back.variant == uani.VARIANT_URHO3D and back.name == original.name
    assert np.float32(back.length).tobytes() == np.float32(original.length).tobytes()
    assert len(back.tracks) == len(original.tracks)
    assert all(_same_track(a, b) for a, b in zip(back.tracks, original.tracks))


def test_kachujin_rbfx_unchanged_is_byte_identical_as_rbfx(clean_scene, testdata, tmp_path):
    """Issue 29: an rbfx UAN2 written with the rbfx animation format comes back as the same UAN2 bytes."""
    src = testdata / "urho3d" / "Kachujin_Walk.ani"
    arm, _ = _import(testdata, "Kachujin.mdl", [src])
    assert_same_bytes(_export(arm, tmp_path, "rbfx")["Kachujin_Walk"], src.read_bytes(), uani.read, "rbfx UAN2")


def test_kachujin_classic_unchanged_is_byte_identical(clean_scene, testdata, tmp_path):
    rbfx = uani.read((testdata / "urho3d" / "Kachujin_Walk.ani").read_bytes())
    rbfx.variant, rbfx.version = uani.VARIANT_URHO3D, None
    data = uani.write(rbfx)
    src = tmp_path / "Kachujin_Walk.ani"
    src.write_bytes(data)
    arm, _ = _import(testdata, "Kachujin.mdl", [src])
    assert_same_bytes(_export(arm, tmp_path, "urho3d")["Kachujin_Walk"], data, uani.read, "Kachujin classic")


@pytest.mark.parametrize("fmt", ["urho3d", "urhox"])
def test_editing_one_key_changes_only_that_track(clean_scene, testdata, tmp_path, fmt):
    src = testdata / "urho3d" / "Ninja_Walk.ani"
    data = src.read_bytes()
    if fmt == "urhox":
        data = uani.write(_as_urhox(uani.read(data)))
        src = tmp_path / "Ninja_Walk.ani"
        src.write_bytes(data)
    original = uani.read(data)
    arm, (act,) = _import(testdata, "Ninja.mdl", [src])
    bone = next(t.name for t in original.tracks[1:] if t.positions is not None and t.key_count > 2)
    _edit_one_key(act, bone)
    back = uani.read(_export(arm, tmp_path, fmt)["Ninja_Walk"])
    assert [t.name for t in back.tracks] == [t.name for t in original.tracks]
    changed = [a.name for a, b in zip(back.tracks, original.tracks) if not _same_track(a, b)]
    assert changed == [bone]
    edited = next(t for t in back.tracks if t.name == bone)
    was = next(t for t in original.tracks if t.name == bone)
    assert np.abs(edited.positions.astype(np.float64) - was.positions).max() > 1e-3
    assert back.length == original.length


def test_frame_range_and_rig_decide_too(clean_scene, testdata, tmp_path):
    """A new end frame gives a computed length but keeps the tracks; a moved armature keeps nothing (computed
    keys of this file differ from its own in float32 rounding)."""
    src = testdata / "urho3d" / "Ninja_Walk.ani"
    original = uani.read(src.read_bytes())
    arm, (act,) = _import(testdata, "Ninja.mdl", [src])
    act.frame_end += 6
    back = uani.read(_export(arm, tmp_path / "a", "urho3d")["Ninja_Walk"])
    assert abs(float(back.length) - float(original.length) - 6 / bact.fps_of(bpy.context.scene)) < 1e-5
    assert all(_same_track(a, b) for a, b in zip(back.tracks, original.tracks))
    act.frame_end -= 6
    arm.location.x += 1.0
    bpy.context.view_layer.update()
    back = uani.read(_export(arm, tmp_path / "b", "urho3d")["Ninja_Walk"])
    assert sum(not _same_track(a, b) for a, b in zip(back.tracks, original.tracks)) > 1
