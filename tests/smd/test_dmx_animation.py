"""DMX animations → core Animations: every DmeChannelsClip channel into a joint's transform becomes that bone's
keys, with the times and values srctools (an independent reader, test-only) reads from the same file. The
expected keys are worked out here from srctools' tree alone: times in seconds put on the clip's frame when
within one tick of 1/10000 s (docs/source.md §6.5), values as stored, a root bone's turned by the model's up
axis as its rest is (Y up: +90° about X)."""
from __future__ import annotations

import io
import pathlib

import numpy as np
import pytest

from skinbridge.core import model as cm
from skinbridge.core.errors import ExportError
from skinbridge.io_smd.dmx import dmx
from skinbridge.io_smd.dmx import convert as dmx_convert
from skinbridge.io_smd.dmx import write as dmx_write

try:
    import srctools.dmx as srctools_dmx
except ImportError:  # the independent reader is test-only
    srctools_dmx = None

DMX_DIR = pathlib.Path(__file__).resolve().parents[2].parent / "shared" / "testdata" / "dmx"
TOL = 1e-6
HALF = np.sqrt(0.5)
# file: (clip name, frame rate, length in seconds, channels, up-axis turn of a root bone's values as a matrix and
# as a (w, x, y, z) quaternion)
CLIPS = {
    "bst_walkn.dmx.gz": ("walkn", 30.0, 1.0, 308, np.array([[1, 0, 0], [0, 0, -1], [0, 1, 0]], float),
                         np.array([HALF, HALF, 0, 0])),
    "bst_ActionFilter_X_Axis.dmx": ("X_Axis", 24.0, 2 / 24, 2, np.eye(3), np.array([1.0, 0, 0, 0])),
}


def _srctools_clip(name: str):
    """srctools reads binary 1-5: a binary 9 sample goes to it as our binary 5 write of it (test_dmx_codec shows
    that file holds the same elements and values)."""
    d = dmx.read((DMX_DIR / name).read_bytes())
    d.encoding_version, d.strings, d.header, d.prefix, d.gzip = 5, None, None, [], None
    root = srctools_dmx.Element.parse(io.BytesIO(dmx.write(d)))[0]
    return list(root["animationList"].val_elem["animations"].iter_elem())[0]


def _quat_mul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """(w, x, y, z) products, written out here apart from core/transforms.py."""
    aw, ax, ay, az = a
    bw, bx, by, bz = b.T
    return np.stack([aw * bw - ax * bx - ay * by - az * bz, aw * bx + ax * bw + ay * bz - az * by,
                     aw * by - ax * bz + ay * bw + az * bx, aw * bz + ax * by - ay * bx + az * bw], 1)


@pytest.mark.skipif(srctools_dmx is None, reason="srctools (test-only reference) not installed")
@pytest.mark.parametrize("name", sorted(CLIPS))
def test_channels_equal_srctools(name):
    clip_name, rate, length, count, up, up_q = CLIPS[name]
    scene, warnings = dmx_convert.load(name, (DMX_DIR / name).read_bytes())
    assert warnings == []
    (anim,) = scene.animations
    assert (anim.name, anim.extras["fps"], anim.length) == (clip_name, rate, pytest.approx(length, abs=1e-12))
    tracks = {t.bone: t for t in anim.tracks}
    parents = {b.name: b.parent for b in scene.skeleton.bones}
    clip = _srctools_clip(name)
    channels = list(clip["channels"].iter_elem())
    assert len(channels) == count
    for ch in channels:
        bone = ch["toElement"].val_elem.name
        layer = list(ch["log"].val_elem["layers"].iter_elem())[0]
        times = np.array([float(t) for t in layer["times"].iter_time()])
        frames = np.round(times * rate) / rate
        times = np.where(np.abs(frames - times) <= 1e-4 + 1e-12, frames, times)
        track = tracks[bone]
        root = parents[bone] < 0
        if ch["toAttribute"].val_str == "position":
            want = np.array([list(v) for v in layer["values"].iter_vec3()])
            want = want @ up.T if root else want
            got_t, got = track.translation_times, track.translations
        else:
            q = np.array([list(v) for v in layer["values"].iter_quat()])[:, [3, 0, 1, 2]]
            want = _quat_mul(up_q, q) if root else q
            got_t, got = track.rotation_times, track.rotations
        np.testing.assert_allclose(got_t, times, rtol=0, atol=1e-12, err_msg=f"{ch.name} times")
        np.testing.assert_allclose(got, want, rtol=TOL, atol=TOL, err_msg=f"{ch.name} values")


def test_without_animations_reads_none():
    scene, _ = dmx_convert.load("w.dmx", (DMX_DIR / "bst_walkn.dmx.gz").read_bytes(), with_animations=False)
    assert scene.animations == [] and len(scene.skeleton.bones) == 154


def test_writer_refuses_values_a_dmx_must_not_hold(tmp_path):
    """A NaN position names its mesh and vertex; a weight on a joint past the skeleton names its vertex;
    nothing is written."""
    p = np.zeros((3, 3), np.float32)
    p[2, 1] = np.nan
    with pytest.raises(ExportError, match="mesh 'm': vertex 2: position is not finite"):
        dmx_write.write_files(cm.Scene(meshes=[cm.Mesh("m", p, np.array([[0, 1, 2]], np.int32))]), str(tmp_path), "x")
    m = cm.Mesh("m", np.zeros((3, 3), np.float32), np.array([[0, 1, 2]], np.int32))
    m.joints, m.weights = np.array([[0], [0], [1]], np.int32), np.ones((3, 1), np.float32)
    skel = cm.Skeleton(bones=[cm.Bone("b", -1, np.eye(4), np.zeros(3), np.array([1.0, 0, 0, 0]), np.ones(3))])
    with pytest.raises(ExportError, match="vertex 2: joint index outside the 1 bones"):
        dmx_write.write_files(cm.Scene(skeleton=skel, meshes=[m]), str(tmp_path), "x")
    assert list(tmp_path.iterdir()) == []
