"""The command line on Urho3D files: a batch goes on past an input that fails (one `error:` line each, never a
traceback), Luka takes and gives `.ani` under `--profile urho3d`, a motion that names no bone is refused with
the scene unchanged, `compare` sees a scale change in one track, `check` writes UMDL back."""
from __future__ import annotations

import shutil

import numpy as np
import pytest
from conftest import run_cli

pytestmark = pytest.mark.blender


def _no_traceback(result) -> str:
    text = result.stdout + result.stderr
    assert "Traceback" not in text, text
    return text


def _errors(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("error:")]


@pytest.fixture
def folder(tmp_path, testdata):
    src = testdata / "urho3d"
    for name in ("Ninja.mdl", "Kachujin.mdl", "Ninja_Walk.ani"):
        shutil.copy(src / name, tmp_path / name)
    (tmp_path / "bad.mdl").write_bytes((src / "Ninja.mdl").read_bytes()[:3000])
    (tmp_path / "broken.ani").write_bytes((src / "Ninja_Walk.ani").read_bytes()[:200])
    return tmp_path


def test_convert_with_a_broken_motion_and_a_broken_model(folder):
    out = folder / "out"
    result = run_cli("convert", folder / "Ninja.mdl", folder / "bad.mdl", "--motion", folder / "broken.ani",
                     "--to", "urhox", "--profile", "urho3d", "-o", out)
    text = _no_traceback(result)
    assert result.returncode == 1
    errors = _errors(text)
    assert len(errors) == 2, text  # the motion fails on Ninja, the model itself on bad.mdl
    assert any("Ninja.mdl" in e and "broken.ani" in e for e in errors)
    assert any("bad.mdl" in e for e in errors)


def test_convert_goes_on_when_the_motion_fails_on_one_model_only(folder):
    out = folder / "out"
    result = run_cli("convert", folder / "Kachujin.mdl", folder / "Ninja.mdl", "--motion", folder / "Ninja_Walk.ani",
                     "--to", "urhox", "--profile", "urho3d", "--ani-format", "urho3d", "-o", out)
    text = _no_traceback(result)
    assert result.returncode == 1
    errors = _errors(text)
    assert len(errors) == 1 and "Kachujin.mdl" in errors[0] and "Ninja_Walk.ani" in errors[0], text
    assert "Joint1" in errors[0]  # the unmatched tracks are named
    written = sorted(p.relative_to(out).as_posix() for p in out.rglob("*.ani")) + \
        sorted(p.relative_to(out).as_posix() for p in out.rglob("*.mdl"))
    assert any(p.endswith("Animations/Ninja_Walk.ani") for p in written), written
    assert any(p.endswith("Ninja.mdl") for p in written) and not any("Kachujin" in p for p in written), written


@pytest.mark.slow
def test_luka_converts_with_its_motion(tmp_path, testdata):
    pmx = testdata / "pmx"
    out = tmp_path / "luka"
    result = run_cli("convert", pmx / "mmdtools_megurine_luka.pmx", "--to", "urhox", "--profile", "urho3d",
                     "--motion", pmx / "mlibgo_shagamu.vmd", "-o", out)
    text = _no_traceback(result)
    assert result.returncode == 0, text
    assert (out / "Animations" / "mlibgo_shagamu.ani").is_file()
    assert not any("shear" in line for line in text.splitlines())
    from skinbridge.io_urhox.motion import uani

    anim = uani.read((out / "Animations" / "mlibgo_shagamu.ani").read_bytes())
    assert len(anim.tracks) > 10


def test_a_motion_naming_no_bone_is_refused_with_the_scene_unchanged(clean_scene, testdata):
    import bpy
    from skinbridge.core.errors import ExportError
    from skinbridge.io_pmx.blender_side import blender_io as pmx_io
    from skinbridge.io_urhox.motion import blender_io as motion_io, uani

    result = pmx_io.import_pmx(bpy.context, str(testdata / "pmx" / "mmdtools_megurine_luka.pmx"))
    arm = result.armature
    before = (len(bpy.data.actions), len(bpy.data.objects), arm.animation_data is None,
              [pb.rotation_mode for pb in arm.pose.bones])
    path = testdata / "urho3d" / "Ninja_Walk.ani"
    tracks = [t.name for t in uani.read(path.read_bytes()).tracks]
    assert len(tracks) == 24
    with pytest.raises(ExportError) as caught:
        motion_io.import_ani(bpy.context, [str(path)], arm, "urho3d")
    message = str(caught.value)
    assert "Ninja_Walk.ani" in message and all(name in message for name in tracks)
    after = (len(bpy.data.actions), len(bpy.data.objects), arm.animation_data is None,
             [pb.rotation_mode for pb in arm.pose.bones])
    assert after == before


def test_compare_sees_one_track_scale(tmp_path, testdata):
    """Two walks that differ only in one track's scale (1.0 → 0.01)."""
    from skinbridge.io_urhox.motion import uani

    data = (testdata / "urho3d" / "Ninja_Walk.ani").read_bytes()
    files = []
    for name, scale in (("a", 1.0), ("b", 0.01)):
        anim = uani.read(data)
        for i, t in enumerate(anim.tracks):
            t.channel_mask |= uani.CHANNEL_SCALE
            t.scales = np.full((t.key_count, 3), scale if i == 5 else 1.0, np.float32)
        files.append(tmp_path / f"{name}.ani")
        files[-1].write_bytes(uani.write(anim))
    changed = uani.read(data).tracks[5].name
    result = run_cli("compare", *files)
    text = _no_traceback(result)
    assert result.returncode == 1, text
    assert changed in text, text


def test_check_writes_legacy_models_back(testdata):
    result = run_cli("check", testdata / "urho3d" / "Ninja.mdl")
    text = _no_traceback(result)
    assert result.returncode == 0, text
    assert text.strip().splitlines()[-1].strip() == "roundtrip: identical"
