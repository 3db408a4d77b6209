"""Issue 29, item 12: a clip's play mode survives conversion to a format that holds one (Wallpaper Engine) and a
target that holds none warns once, naming the clips that will play as loops."""
from __future__ import annotations

import pytest

from skinbridge.io_wepuppet.puppet import mdl

pytestmark = pytest.mark.blender

GOOSE = "blacryu_goose_t_puppet.mdl"


@pytest.fixture
def mirrored(testdata, tmp_path):
    """The goose puppet with its clip's mode set to "mirror" (and the texture and material beside it)."""
    model = mdl.read((testdata / "wepuppet" / GOOSE).read_bytes())
    clips = model.animations.clips
    assert clips and clips[0].mode in ("", "loop")
    clips[0].mode = "mirror"
    path = tmp_path / "goose.mdl"
    path.write_bytes(mdl.write(model))
    return path, clips[0].name


def _convert(src, target, out):
    from skinbridge.app import pipeline  # imports bpy: after the addon fixture set the user folder

    return pipeline.convert_file(str(src), str(out), "goose", pipeline.ConvertOptions(target=target))


def test_a_target_without_play_modes_warns_once_naming_the_clip(addon, mirrored, tmp_path):
    path, clip = mirrored
    for target in ("urhox", "smd", "pmx"):
        _, warnings = _convert(path, target, tmp_path / target)
        said = [w for w in warnings if "play modes not kept" in w]
        assert len(said) == 1 and f"{clip} (mirror)" in said[0], (target, warnings)


def test_wallpaper_engine_keeps_the_mode_and_does_not_warn(addon, mirrored, tmp_path):
    path, clip = mirrored
    written, warnings = _convert(path, "wepuppet", tmp_path / "we")
    assert not [w for w in warnings if "play modes not kept" in w]
    [out] = [p for p in written if p.endswith(".mdl")]
    back = mdl.read(open(out, "rb").read())
    assert [(c.name, c.mode) for c in back.animations.clips] == [(clip, "mirror")]
