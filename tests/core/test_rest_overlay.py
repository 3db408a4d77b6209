"""core/rest_overlay.py without Blender: colour bands, the two distance modes, bone marks, the picture's strip."""
from __future__ import annotations

import numpy as np

from skinbridge.core import rest_overlay as ro
from skinbridge.core.compare import Comparison, Difference


def test_bands_are_decades_above_the_limit():
    d = np.array([0.0, 1e-3, 1.0001e-3, 1e-2, 1.0001e-2, 0.1, 1.0, 5.0, np.inf, np.nan])
    assert ro.bands(d, 1e-3).tolist() == [0, 0, 1, 1, 2, 2, 3, 4, 4, 4]


def test_same_vertex_order_gives_each_vertex_its_own_displacement():
    rng = np.random.default_rng(5)
    p = rng.uniform(-1, 1, (200, 3))
    q = p.copy()
    q[:10, 0] += 0.3  # far enough to land nearer another vertex than its own for some
    da, db, mode = ro.vertex_distances(p, q, 1e-6, 3.4)
    assert mode == "same vertex order"
    np.testing.assert_allclose(da, np.r_[np.full(10, 0.3), np.zeros(190)], atol=1e-12)
    np.testing.assert_array_equal(da, db)


def test_another_order_falls_back_to_the_nearest_vertex():
    rng = np.random.default_rng(6)
    p = rng.uniform(-1, 1, (200, 3))
    q = p[::-1].copy()
    q[0] += [0.0, 0.0, 1e-3]  # p's last vertex, moved
    da, db, mode = ro.vertex_distances(p, q, 1e-6, 3.4)
    assert mode == "nearest vertex"
    brute = np.sqrt(((p[:, None] - q[None]) ** 2).sum(axis=2))
    np.testing.assert_allclose(da, brute.min(axis=1), atol=1e-12)
    np.testing.assert_allclose(db, brute.min(axis=0), atol=1e-12)
    assert da[-1] == np.float64(np.linalg.norm(q[0] - p[-1])) and (da[:-1] == 0).all()


def test_marked_bones_are_the_rest_findings_only():
    result = Comparison(differences=[
        Difference("skeleton", "bone Head", "rest head", "moved"),
        Difference("skeleton", "bone Tail", "rest orientation", "turned"),
        Difference("skeleton", "bone Ear", "presence", "in A only"),
        Difference("skeleton", "bone Arm", "default pose head", "moved"),
        Difference("mesh", "mesh Body vertex 3 of A", "vertex distance", "far"),
    ])
    assert ro.marked_bones(result) == {"Head", "Tail", "Ear"}


def test_largest_names_one_vertex_per_region():
    d = np.array([0.5, 0.4, 0.0, 0.3, np.inf])
    names = ["tail", "tail", "head", "leg", "leg"]
    assert ro.largest(d, names) == [("tail", 0.5), ("leg", 0.3)]


def test_the_strip_holds_a_swatch_per_band_and_a_line_per_finding():
    entries = ro.legend(1e-5, 176.0)
    strip = ro.footer(1200, entries, ["one", "two"], (22, 24, 32), (235, 235, 225))
    assert strip.shape == (ro.LEGEND_HEIGHT + 2 * ro.FINDING_LINE + 6, 1200, 3)
    step = (1200 - 16) // len(entries)
    for k, (color, _) in enumerate(entries):
        assert (strip[10, 8 + k * step:8 + k * step + 14] == color).all()
    assert entries[-1][1] == "> 1e-02 (1.76)"


def test_composite_snaps_meshes_to_bands_and_bones_to_the_palette():
    mesh = np.zeros((2, 3, 4), np.uint8)
    mesh[0, 0] = (199, 201, 200, 255)  # dithered grey
    mesh[0, 1] = (135, 165, 172, 255)  # half-way between grey and blue: the nearer
    bone = np.zeros((2, 3, 4), np.uint8)
    bone[1, 2] = (250, 5, 250, 255)
    out = ro.composite_colors(mesh, bone, [ro.MARKED_BONE_COLOR, (40, 190, 70)], (38, 42, 56))
    assert tuple(out[0, 0]) == ro.SAME_COLOR
    assert tuple(out[0, 1]) in (ro.SAME_COLOR, ro.BAND_COLORS[0])
    assert tuple(out[1, 2]) == ro.MARKED_BONE_COLOR and tuple(out[1, 0]) == (38, 42, 56)
