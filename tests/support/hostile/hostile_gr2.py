"""Hostile GR2 files: small uncompressed files our writer makes (so the generic cuts and smashed words reach the
type tree, the curves and the animation fields rather than the Oodle1 stream), and animations whose curves or
duration an import cannot sample."""
from __future__ import annotations

import struct
import zlib

import numpy as np
from .hostile_cases import MAP_ERROR, VALID, Case

from skinbridge.core import model as cm
from skinbridge.io_mdb.gr2 import export as gr2_export, gr2, write as gr2_write


def _animation(length: float = 1.0) -> cm.Animation:
    times = np.array([0.0, 0.5, 1.0])
    moving = cm.Track("Hip", times, np.array([[0, 0, 0.9], [0, 0.1, 0.92], [0, 0.2, 0.9]]), times,
                      np.array([[1.0, 0, 0, 0], [0.98, 0.2, 0, 0], [1.0, 0, 0, 0]]))
    still = cm.Track("Knee", np.array([0.0]), np.array([[0, 0, -0.4]]), np.array([0.0]),
                     np.array([[1.0, 0, 0, 0]]), times, np.array([[1.0, 1, 1], [1.2, 1.2, 1.2], [1.0, 1, 1]]))
    return cm.Animation("walk", length, [moving, still])


def _skeleton() -> cm.Skeleton:
    skel = cm.Skeleton("S")
    for name, parent, z in (("Hip", -1, 0.9), ("Knee", 0, 0.5), ("Foot", 1, 0.1)):
        bind = np.eye(4)
        bind[2, 3] = z
        skel.bones.append(cm.Bone(name, parent, bind, np.zeros(3), np.array([1.0, 0, 0, 0]), np.ones(3)))
    skel.set_rest_from_binds()
    return skel


def seeds() -> list[tuple[str, bytes]]:
    return [("ours: animation", gr2_export.animation_file(_animation(), "S")),
            ("ours: skeleton", gr2_export.skeleton_file(_skeleton()))]


def _with_curve(change) -> bytes:
    """The seed animation written with one curve's fields changed by `change(fields)`."""
    f = gr2.read(gr2_export.animation_file(_animation(), "S"))
    change(f.root["TrackGroups"][0]["TransformTracks"][0]["PositionCurve"]["CurveData"])
    return gr2_write.rewrite(f)


def cases() -> list[Case]:
    def degree(fields):
        fields["CurveDataHeader_DaK32fC32f"]["Degree"] = 200

    def controls(fields):
        fields["Controls"] = fields["Controls"][:-1]

    return [
        Case("seed animation", seeds()[0][1], VALID, "our own file reads and maps"),
        Case("curve degree 200", _with_curve(degree), MAP_ERROR, "a B-spline degree above Granny's 6"),
        Case("controls not a multiple of the knots", _with_curve(controls), MAP_ERROR,
             "8 position controls for 3 knots"),
        Case("duration NaN", _duration(float("nan")), MAP_ERROR, "a Duration that is no time span"),
        Case("duration of a week", _duration(7 * 86400.0), MAP_ERROR, "more frames than an import samples"),
    ]


def _duration(seconds: float) -> bytes:
    """The seed animation with its Duration (the float before TimeStep 1/240) set to `seconds`."""
    data = bytearray(gr2_export.animation_file(_animation(), "S"))
    at = data.index(struct.pack("<ff", 1.0, 1.0 / 240))  # Duration, then TimeStep
    data[at:at + 4] = struct.pack("<f", seconds)
    data[40:44] = struct.pack("<I", zlib.crc32(bytes(data[88:])))
    return bytes(data)
