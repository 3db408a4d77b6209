"""`skinbridge render` and the contact-sheet operator.

Everything is measured on the PNG pixels written: mesh pixels are grey (r = g = b), bone pixels take the
palette colours (weighted bones the saturated ones), text only in the header and label strips. The panel
rectangles follow the documented layout (`render.HEADER_HEIGHT`, `LABEL_HEIGHT`, `panel_size`).
"""
from __future__ import annotations

import numpy as np
import pytest

from skinbridge import formats

from conftest import run_cli
from support.png_decode import decode_png

bpy = pytest.importorskip("bpy")

from skinbridge.app import render  # noqa: E402
from support.fingerprint import diff_fingerprints, scene_fingerprint  # noqa: E402
from skinbridge.app.options import ConvertOptions  # noqa: E402
from support.contact_sheet import header_has_text, panel_boxes  # noqa: E402

pytestmark = pytest.mark.blender

WEIGHTED = [np.array(c) for (side, weighted), c in render.PALETTE.items() if weighted]


def dilate(mask: np.ndarray, radius: int) -> np.ndarray:
    """Binary dilation by a disc of `radius` pixels."""
    out = mask.copy()
    h, w = mask.shape
    for dy in range(-radius, radius + 1):
        for dx in range(-radius, radius + 1):
            if dx * dx + dy * dy > radius * radius:
                continue
            shifted = np.zeros_like(mask)
            shifted[max(-dy, 0):h + min(-dy, 0), max(-dx, 0):w + min(-dx, 0)] = \
                mask[max(dy, 0):h + min(dy, 0), max(dx, 0):w + min(dx, 0)]
            out |= shifted
    return out


def overlay_inside(px: np.ndarray, box) -> tuple[float, int]:
    """(share of weighted-bone pixels inside the mesh silhouette dilated by 3 px, their count) in one panel."""
    x0, y0, x1, y1 = box
    p = px[y0:y1, x0:x1, :3].astype(np.int64)
    silhouette = (p[..., 0] == p[..., 1]) & (p[..., 1] == p[..., 2])
    bones = np.zeros(silhouette.shape, bool)
    for c in WEIGHTED:
        bones |= (p == c).all(axis=2)
    n = int(bones.sum())
    return (float((bones & dilate(silhouette, 3)).sum()) / n if n else 0.0), n


@pytest.fixture(scope="module")
def fox_sheets(tmp_path_factory, testdata):
    out = tmp_path_factory.mktemp("render")
    fox = testdata / "gltf" / "Fox.glb"
    rest, walk = out / "rest.png", out / "walk10.png"
    r1 = run_cli("render", fox, "--rest", "-o", rest)
    r2 = run_cli("render", fox, "--action", "Walk", "--frame", "10", "-o", walk)
    assert r1.returncode == 0, r1.stderr
    assert r2.returncode == 0, r2.stderr
    return decode_png(rest.read_bytes()), decode_png(walk.read_bytes())


def test_rest_sheet_of_the_fox(fox_sheets):
    px, _ = fox_sheets
    h, w = px.shape[:2]
    assert w >= 800 and h >= 600
    assert header_has_text(px, 8, 6, "Fox.glb", 2)
    assert header_has_text(px, 8, 28, "rest position | 1728 vertices, 576 triangles, 24 bones (22 weighted)", 1)
    for box, view in zip(panel_boxes(3, 1), render.VIEWS):
        share, n = overlay_inside(px, box)
        assert n > 200, (view, n)  # the bones are drawn in every panel
        assert share >= 0.80, (view, share)


def test_walk_frame_10_sheet(fox_sheets):
    rest, walk = fox_sheets
    h, w = walk.shape[:2]
    assert w >= 800 and h >= 600
    assert header_has_text(walk, 8, 28, "frame 10, action Walk | 1728 vertices", 1)
    pw, _ = render.panel_size(3, 1)
    assert header_has_text(walk, 6, render.HEADER_HEIGHT + 3, "front  frame 10", 2)
    for box, view in zip(panel_boxes(3, 1), render.VIEWS):
        share, n = overlay_inside(walk, box)
        assert n > 200 and share >= 0.80, (view, share, n)
    # the legs moved: the side panels of rest and frame 10 differ in many bone pixels
    x0, y0, x1, y1 = panel_boxes(3, 1)[1]

    def bone_mask(px):
        p = px[y0:y1, x0:x1, :3].astype(np.int64)
        return np.any([(p == c).all(axis=2) for c in WEIGHTED], axis=0)

    assert (bone_mask(rest) ^ bone_mask(walk)).sum() > 300


def _import_fox(testdata):
    formats.get("gltf").get("blender_import")(bpy.context, str(testdata / "gltf" / "Fox.glb"), ConvertOptions())
    arm, meshes = render.scene_objects(bpy.context)
    co = np.array([tuple(v.co) for v in meshes[0].data.vertices])
    return arm, meshes, float(np.linalg.norm(co.max(axis=0) - co.min(axis=0)))


def test_control_render_with_the_skeleton_moved_sideways(clean_scene, testdata, tmp_path):
    """The armature's rest moved by 25 % of the diagonal along X (the Fox's left-right axis: it faces -Y);
    in Rest Position the mesh stays, so the overlay leaves the silhouette in the front and top views."""
    arm, meshes, diag = _import_fox(testdata)
    bpy.context.view_layer.objects.active = arm
    bpy.ops.object.mode_set(mode="EDIT")
    for eb in arm.data.edit_bones:
        eb.head.x += 0.25 * diag
        eb.tail.x += 0.25 * diag
    bpy.ops.object.mode_set(mode="OBJECT")
    before = scene_fingerprint()
    sheet = render.render_sheet(bpy.context, title="Fox.glb (skeleton moved)")
    assert diff_fingerprints(before, scene_fingerprint()) == []
    render.write_sheet(sheet, str(tmp_path / "control.png"))
    px = decode_png((tmp_path / "control.png").read_bytes())
    shares = {p.view: overlay_inside(px, p.box) for p in sheet.panels}
    assert [p.box for p in sheet.panels] == panel_boxes(3, 1)
    assert shares["front"][0] < 0.40 and shares["top"][0] < 0.40, shares
    assert shares["front"][1] > 200 and shares["top"][1] > 200
    # the side view sees the move end-on: the overlay stays on the body
    assert shares["side"][0] >= 0.80, shares


def test_contact_sheet_and_operator_leave_the_scene_alone(clean_scene, testdata, tmp_path):
    arm, meshes, _ = _import_fox(testdata)
    bpy.context.view_layer.objects.active = arm
    before = scene_fingerprint()
    out = tmp_path / "sheet.png"
    assert bpy.ops.skinbridge.render_sheet(filepath=str(out), pose="FRAMES", frame_start=0, frame_end=8,
                                           frame_step=4, action="Walk", views="front,side") == {"FINISHED"}
    assert diff_fingerprints(before, scene_fingerprint()) == []
    assert arm.animation_data.action.name == "Survey" and arm.data.pose_position == "POSE"
    px = decode_png(out.read_bytes())
    pw, ph = render.panel_size(2, 3)
    assert px.shape[:2] == (render.HEADER_HEIGHT + 3 * (render.LABEL_HEIGHT + ph), 2 * pw)
    for r, frame in enumerate((0, 4, 8)):
        y = render.HEADER_HEIGHT + r * (render.LABEL_HEIGHT + ph) + 3
        assert header_has_text(px, pw + 6, y, f"side  frame {frame}", 2)
    for box in panel_boxes(2, 3):
        share, n = overlay_inside(px, box)
        assert n > 100 and share >= 0.80


def test_bone_sides_and_font():
    assert [render.bone_side(n) for n in ("b_LeftLeg01_015", "b_RightHand_08", "b_Hip_01", "arm.L", "R_foot",
                                          "左ひざ", "右足ＩＫ", "Lower")] == \
        ["left", "right", "centre", "left", "right", "left", "right", "centre"]
    glyphs = {chr(c): render.text_mask(chr(c)).tobytes() for c in range(33, 127)}
    assert len(set(glyphs.values())) == len(glyphs)  # every printable character has its own glyph
    assert render.text_mask("日").any()  # anything else is an open box, never nothing


@pytest.mark.slow
def test_render_errors(testdata, tmp_path):
    r = run_cli("render", testdata / "gltf" / "Fox.glb", "--action", "Trot", "--frame", "3", "-o", tmp_path / "x.png")
    assert r.returncode == 1 and "Trot" in r.stderr and "Walk" in r.stderr
    assert not (tmp_path / "x.png").exists()
    r = run_cli("render", testdata / "gltf" / "Fox.glb", "--views", "front,back", "-o", tmp_path / "y.png")
    assert r.returncode == 1 and "back" in r.stderr
