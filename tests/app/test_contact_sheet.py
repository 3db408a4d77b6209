"""The contact sheet's Blender-free parts (core/contact_sheet.py, core/bitmap_font.py, core/png.py): layout,
compositing, the font and the PNG file, measured on numpy arrays. No bpy: these run in any Python with numpy.
"""
from __future__ import annotations

import os
import pathlib
import struct
import subprocess
import sys
import zlib

import numpy as np
import pytest

from skinbridge.core import contact_sheet as cs
from skinbridge.core.bitmap_font import FONT_ADVANCE, FONT_HEIGHT, draw_text, fit_text, text_mask
from skinbridge.core.png import encode_png


def read_png(data: bytes) -> np.ndarray:
    """Our own reading of the PNG layout (signature, chunks with their CRC, IHDR, IDAT rows of filter type 0),
    independent of core/png.py: (H, W, 3|4) uint8."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, chunks = 8, []
    while pos < len(data):
        (n,) = struct.unpack_from(">I", data, pos)
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + n]
        (crc,) = struct.unpack_from(">I", data, pos + 8 + n)
        assert crc == zlib.crc32(kind + body), kind
        chunks.append((kind, body))
        pos += 12 + n
    assert [k for k, _ in chunks][0] == b"IHDR" and chunks[-1] == (b"IEND", b"")
    w, h, depth, ctype, comp, filt, interlace = struct.unpack(">IIBBBBB", chunks[0][1])
    assert (depth, comp, filt, interlace) == (8, 0, 0, 0) and ctype in (2, 6)
    c = 4 if ctype == 6 else 3
    raw = np.frombuffer(zlib.decompress(b"".join(b for k, b in chunks if k == b"IDAT")), np.uint8)
    rows = raw.reshape(h, 1 + w * c)
    assert not rows[:, 0].any()  # filter type 0 (None) on every row: the bytes are the pixels
    return rows[:, 1:].reshape(h, w, c)


# -- PNG ---------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("channels", [3, 4])
def test_png_round_trip_gives_the_same_pixels(channels):
    px = np.random.default_rng(channels).integers(0, 256, (37, 53, channels), dtype=np.uint8)
    back = read_png(encode_png(px))
    assert back.shape == px.shape and np.array_equal(back, px)


def test_png_refuses_other_shapes():
    with pytest.raises(ValueError, match="expected"):
        encode_png(np.zeros((4, 4), np.uint8))
    with pytest.raises(ValueError, match="expected"):
        encode_png(np.zeros((4, 4, 2), np.uint8))


def test_write_sheet_writes_the_pixels(tmp_path):
    px = np.random.default_rng(7).integers(0, 256, (20, 30, 3), dtype=np.uint8)
    out = tmp_path / "sheet.png"
    cs.write_sheet(cs.Sheet(px, [], {}), str(out))
    assert np.array_equal(read_png(out.read_bytes()), px)
    assert [p.name for p in tmp_path.iterdir()] == ["sheet.png"]  # no staging file left beside it


# -- font --------------------------------------------------------------------------------------------------------

A = [".###.",
     "#...#",
     "#...#",
     "#####",
     "#...#",
     "#...#",
     "#...#"]


def bits(rows: list[str]) -> np.ndarray:
    return np.array([[ch == "#" for ch in r] for r in rows], bool)


def test_glyph_pixels_and_advance():
    mask = text_mask("A")
    assert mask.shape == (FONT_HEIGHT, FONT_ADVANCE)
    assert np.array_equal(mask[:, :5], bits(A)) and not mask[:, 5].any()  # one blank column after the glyph
    two = text_mask("A.")
    assert two.shape == (7, 12)
    assert np.array_equal(two[:, :6], mask)
    assert np.array_equal(two[:, 6:], text_mask("."))
    assert two[5:7, 7:9].all() and two[:5, 6:].sum() == 0  # '.' is a 2×2 block on the two bottom rows


def test_glyph_scale_and_unknown_characters():
    big = text_mask("A", 3)
    assert big.shape == (21, 18)
    assert np.array_equal(big[::3, ::3][:, :5], bits(A))
    box = text_mask("日")
    assert np.array_equal(box[:, :5], bits(["#####"] + ["#...#"] * 5 + ["#####"]))  # an open box, never nothing
    assert text_mask("").shape == (7, 0)
    glyphs = {chr(c): text_mask(chr(c)).tobytes() for c in range(33, 127)}
    assert len(set(glyphs.values())) == len(glyphs)  # every printable character has its own glyph
    assert not text_mask(" ").any()


def test_draw_text_puts_the_glyph_at_its_place_and_clips():
    img = np.zeros((10, 20, 3), np.uint8)
    draw_text(img, 3, 2, "A", (9, 8, 7))
    ink = (img == (9, 8, 7)).all(axis=2)
    assert ink.sum() == bits(A).sum() and np.array_equal(ink[2:9, 3:8], bits(A))
    assert not (img[~ink] != 0).any()  # paper pixels untouched
    clipped = np.zeros((5, 4, 3), np.uint8)
    draw_text(clipped, -2, -3, "A", (1, 1, 1))  # the glyph's columns 2-4 of rows 3-6 land at (0..2, 0..3)
    assert np.array_equal(clipped[:4, :3, 0].astype(bool), bits(A)[3:7, 2:5]) and not clipped[4].any()
    draw_text(clipped, 50, 50, "A", (2, 2, 2))  # entirely outside: nothing drawn, no error
    assert not (clipped == 2).any()


def test_fit_text():
    assert fit_text("abcdef", 6 * FONT_ADVANCE, 1) == "abcdef"
    assert fit_text("abcdefg", 6 * FONT_ADVANCE, 1) == "abc..."
    assert fit_text("abcdefg", 6 * FONT_ADVANCE, 2) == "..."


# -- layout ------------------------------------------------------------------------------------------------------

def test_panel_size_grows_to_the_minimum_sheet():
    assert cs.panel_size(3, 1) == cs.DEFAULT_PANEL
    assert cs.panel_size(1, 1, (100, 100)) == (800, 600 - cs.HEADER_HEIGHT - cs.LABEL_HEIGHT)
    assert cs.panel_size(2, 3, (100, 100)) == (400, -(-(600 - cs.HEADER_HEIGHT) // 3) - cs.LABEL_HEIGHT)
    for views in (1, 2, 3):
        for rows in (1, 2, 5, cs.MAX_FRAMES):
            w, h = cs.sheet_size(views, rows, cs.panel_size(views, rows, (10, 10)))
            assert w >= cs.MIN_SHEET[0] and h >= cs.MIN_SHEET[1], (views, rows, w, h)


def panel_grid(rows: int, cols: int, panel: tuple[int, int]) -> np.ndarray:
    """A grid whose every panel is one flat colour (10·row + col + 1, 0, 0)."""
    pw, ph = panel
    grid = np.zeros((rows * ph, cols * pw, 3), np.uint8)
    for r in range(rows):
        for c in range(cols):
            grid[r * ph:(r + 1) * ph, c * pw:(c + 1) * pw] = (10 * r + c + 1, 0, 0)
    return grid


def test_compose_sheet_places_every_panel_where_the_layout_says():
    panel, views, frames = (300, 150), ("front", "side", "top"), [0, 4]
    img, panels = cs.compose_sheet(panel_grid(2, 3, panel), frames, views, panel, "title", "info")
    assert img.shape == (cs.HEADER_HEIGHT + 2 * (cs.LABEL_HEIGHT + 150), 900, 3)
    assert [(p.view, p.frame) for p in panels] == [(v, f) for f in frames for v in views]
    for i, p in enumerate(panels):
        r, c = divmod(i, 3)
        top = cs.HEADER_HEIGHT + r * (cs.LABEL_HEIGHT + 150) + cs.LABEL_HEIGHT
        assert p.box == (300 * c + (1 if c else 0), top, 300 * (c + 1), top + 150)
        x0, y0, x1, y1 = p.box
        assert (img[y0:y1, x0:x1] == (10 * r + c + 1, 0, 0)).all()
        if c:  # the one-pixel separator left of the box
            assert (img[y0:y1, x0 - 1] == cs.HEADER_COLOR).all()
        label = text_mask(f"{p.view}  frame {p.frame}", 2)
        y, x = top - cs.LABEL_HEIGHT + 3, 300 * c + 6
        strip = img[y:y + label.shape[0], x:x + label.shape[1]]
        assert np.array_equal((strip == cs.TEXT_COLOR).all(axis=2), label)
    # the header: the title at (8, 6) in the large font, the info line at (8, 28); nothing else is text colour
    title = text_mask("title", 2)
    assert np.array_equal((img[6:6 + 14, 8:8 + title.shape[1]] == cs.TEXT_COLOR).all(axis=2), title)
    info = text_mask("info")
    assert np.array_equal((img[28:35, 8:8 + info.shape[1]] == cs.TEXT_COLOR).all(axis=2), info)


def test_compose_sheet_legend_only_where_it_fits():
    rest = [None]
    wide, _ = cs.compose_sheet(panel_grid(1, 3, (300, 100)), rest, cs.VIEWS, (300, 100), "", "")
    narrow, _ = cs.compose_sheet(panel_grid(1, 1, (300, 100)), rest, ("front",), (300, 100), "", "")
    header = wide[:cs.HEADER_HEIGHT].reshape(-1, 3)
    for colour in cs.PALETTE.values():  # a swatch of every class
        assert (header == colour).all(axis=1).sum() == 60, colour
        assert not (narrow[:cs.HEADER_HEIGHT].reshape(-1, 3) == colour).all(axis=1).any(), colour


def test_view_scale_one_scale_for_every_panel():
    pts = np.array([[0.0, 0, 0], [2, 1, 4], [np.nan, 0, 0], [np.inf, 1e9, 1e9]])
    scale, centres = cs.view_scale(pts, cs.VIEWS, (100, 100))
    usable = 100 * (1 - 2 * cs.MARGIN)
    assert scale == pytest.approx(4 / usable)  # the tallest extent: Z (4) in the front and side views
    assert np.allclose(centres["front"][:2], [1, 2]) and np.allclose(centres["side"][:2], [0.5, 2])
    assert np.allclose(centres["top"][:2], [1, 0.5])
    flat, _ = cs.view_scale(np.zeros((0, 3)), ("front",), (100, 50))
    assert flat == pytest.approx(1 / 50)


# -- compositing -------------------------------------------------------------------------------------------------

def test_composite_gives_exact_pixel_classes():
    mesh = np.zeros((2, 4, 4), np.uint8)
    bone = np.zeros((2, 4, 4), np.uint8)
    mesh[0, 0] = (255, 255, 255, 255)  # lit mesh: the lightest grey
    mesh[0, 1] = (0, 0, 0, 255)  # dark mesh: the darkest grey
    mesh[0, 2] = (255, 255, 255, 100)  # mostly transparent: background
    mesh[1, 0] = (200, 200, 200, 255)
    bone[1, 0] = (222, 55, 47, 255)  # near the weighted left colour: snapped to it, over the mesh
    bone[1, 1] = (160, 210, 255, 200)  # near the pale right colour
    bone[1, 2] = (0, 0, 255, 127)  # below half alpha: not a bone pixel
    out = cs.composite(mesh, bone)
    lo, hi = cs.MESH_GREY
    assert out.shape == (2, 4, 3) and out.dtype == np.uint8
    assert tuple(out[0, 0]) == (hi, hi, hi) and tuple(out[0, 1]) == (lo, lo, lo)
    assert tuple(out[0, 2]) == cs.BACKGROUND and tuple(out[0, 3]) == cs.BACKGROUND
    assert tuple(out[1, 0]) == cs.PALETTE[("left", True)]
    assert tuple(out[1, 1]) == cs.PALETTE[("right", False)]
    assert tuple(out[1, 2]) == cs.BACKGROUND


def test_srgb_to_linear_round_trips_through_the_standard_transform():
    for c in cs.PALETTE.values():
        lin = np.array(cs.srgb_to_linear(c)[:3])
        srgb = np.where(lin <= 0.0031308, lin * 12.92, 1.055 * lin ** (1 / 2.4) - 0.055)
        assert np.array_equal(np.round(srgb * 255).astype(int), np.array(c)), c


# -- bones -------------------------------------------------------------------------------------------------------

def test_bone_side():
    names = ("b_LeftLeg01_015", "b_RightHand_08", "b_Hip_01", "arm.L", "R_foot", "左ひざ", "右足ＩＫ", "Lower",
             "arm_r", "LeftRight")
    assert [cs.bone_side(n) for n in names] == \
        ["left", "right", "centre", "left", "right", "left", "right", "centre", "right", "centre"]


def test_bone_prisms_shape_and_geometry():
    heads = np.array([[0.0, 0, 0], [1, 2, 3]])
    ends = np.array([[0.0, 0, 2], [1, 2, 3]])  # the second bone has no length
    verts, tris = cs.bone_prisms(heads, ends, 0.1, 0.3)
    assert verts.shape == (28, 3) and tris.shape == (2 * cs.TRIANGLES_PER_BONE, 3)
    assert tris.min() == 0 and tris.max() == 27
    assert (tris[:cs.TRIANGLES_PER_BONE] < 14).all() and (tris[cs.TRIANGLES_PER_BONE:] >= 14).all()
    prism = verts[:8]
    assert np.allclose(np.hypot(prism[:, 0], prism[:, 1]), 0.1 * np.sqrt(2))  # corners around the Z axis
    assert np.allclose(np.sort(prism[:, 2]), [0, 0, 0, 0, 2, 2, 2, 2])
    assert np.allclose(np.linalg.norm(verts[8:14] - heads[0], axis=1), 0.3)  # the joint marker
    assert np.isfinite(verts).all()


# -- frames and header text --------------------------------------------------------------------------------------

def test_parse_frames():
    assert cs.parse_frames("0:16:4") == [0, 4, 8, 12, 16]
    assert cs.parse_frames(" 3:5 ") == [3, 4, 5]
    assert cs.parse_frames("1,5,9") == [1, 5, 9]
    for bad in ("5:1", "1:2:0", "1:2:3:4", ",", f"0:{cs.MAX_FRAMES}"):
        with pytest.raises(ValueError, match="--frames"):
            cs.parse_frames(bad)


def test_sheet_info():
    counts = {"vertices": 10, "triangles": 4, "bones": 3, "weighted_bones": 2}
    assert cs.sheet_info(counts, None, "Walk") == "rest position | 10 vertices, 4 triangles, 3 bones (2 weighted)"
    assert cs.sheet_info(counts, [10], "Walk").startswith("frame 10, action Walk | ")
    assert cs.sheet_info(counts, [0, 4, 8], None).startswith("frames 0..8 (3) | ")


def test_core_modules_import_without_blender():
    """In a fresh Python where bpy and mathutils cannot be imported."""
    code = ("import sys; sys.modules['bpy'] = sys.modules['mathutils'] = None\n"
            "import skinbridge.core.contact_sheet, skinbridge.core.bitmap_font, skinbridge.core.png")
    link = pathlib.Path(sys.modules["skinbridge"].__path__[0]).parent
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": str(link)})
    assert r.returncode == 0, r.stderr
