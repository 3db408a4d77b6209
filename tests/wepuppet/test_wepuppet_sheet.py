"""Sprite sheets and GIFs come in as frames and go back out equal: a sheet our writer makes (known pixels per
frame, known frame times) imports as an image sequence whose frame files carry each frame for its time at the
scene's rate; exported unchanged it is byte-identical; with a frame edited it is a sheet of the same layout and
timings carrying the new pixels."""
from __future__ import annotations

import copy
import os
import shutil

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from skinbridge.core.png import encode_png  # noqa: E402
from skinbridge.io_wepuppet.project import blender_io as blender_project  # noqa: E402
from skinbridge.io_wepuppet.puppet import project_docs as wp  # noqa: E402
from skinbridge.io_wepuppet.texture import blender_io, sheet, tex  # noqa: E402

pytestmark = pytest.mark.blender

TIMES = (0.1, 0.2, 0.05, 0.15)  # seconds per frame; at 20 fps 2, 4, 1 and 3 scene frames
FPS = 20
FW, FH = 16, 8  # one frame; the sheet is 2 × 2 frames in a 32 × 32 texture (rows 16..31 unused)


def _frame(k: int) -> np.ndarray:
    """Frame k's known pixels: every channel differs per frame, per row and per column."""
    yy, xx = np.mgrid[0:FH, 0:FW]
    px = np.empty((FH, FW, 4), np.uint8)
    px[..., 0] = 60 * k + xx
    px[..., 1] = 200 - 30 * k + yy
    px[..., 2] = (xx * yy + 17 * k) % 256
    px[..., 3] = 255 - 10 * k - xx
    return px


def _sheet(fmt: int = tex.FORMAT_RGBA8888) -> tex.Texture:
    page = np.zeros((32, 32, 4), np.uint8)
    page[16:] = 99  # outside every frame: must come back as it was
    frames = []
    for k, time in enumerate(TIMES):
        x, y = FW * (k % 2), FH * (k // 2)
        page[y:y + FH, x:x + FW] = _frame(k)
        frames.append(tex.Frame(0, np.float32(time), (x, y, FW, 0, 0, FH)))
    t = tex.from_rgba(page, lz4=True, flags=tex.FLAG_SPRITE | 2, fmt=fmt)
    t.sprite_tag, t.sprite_size, t.frames = "TEXS0003", (FW, FH), frames
    return tex.read(tex.write(t))


def _write_sheet(tmp_path, t: tex.Texture) -> tuple[str, bytes]:
    path = tmp_path / "walk.tex"
    path.write_bytes(tex.write(t))
    return str(path), path.read_bytes()


def _load_rgba(path: str) -> np.ndarray:
    img = bpy.data.images.load(path, check_existing=False)
    try:
        return blender_io.rgba_of(img)
    finally:
        bpy.data.images.remove(img)


def _frame_files(img) -> list[str]:
    folder = os.path.dirname(bpy.path.abspath(img.filepath))
    return sorted(f for f in os.listdir(folder) if f.endswith(".png"))


def test_schedule_starts_each_frame_at_the_nearest_scene_frame():
    # starts 0.1 k s at 24 fps: round(2.4 k) = 0, 2, 5, 7, 10, 12, 14, 17, end 19
    assert [len(n) for n in sheet.schedule([0.1] * 8, 24)] == [2, 3, 2, 3, 2, 2, 3, 2]
    assert sheet.schedule([0.01, 0.01, 0.5], 24) == [[0], [1], list(range(2, 12))]
    assert sheet.schedule(list(TIMES), FPS) == [[0, 1], [2, 3, 4, 5], [6], [7, 8, 9]]


def test_rebuild_with_the_same_frames_is_the_same_file_and_with_a_new_one_keeps_layout_and_timing():
    t = _sheet()
    data = tex.write(t)
    frames = [px for _, px in tex.sprite_frames(t)]
    assert [float(time) for time, _ in tex.sprite_frames(t)] == [float(np.float32(x)) for x in TIMES]
    assert all(np.array_equal(px, _frame(k)) for k, px in enumerate(frames))
    same, warnings = sheet.rebuild(t, frames)
    assert tex.write(same) == data and warnings == []
    edited = np.full((FH, FW, 4), (10, 220, 30, 128), np.uint8)
    out, _ = sheet.rebuild(t, frames[:2] + [edited] + frames[3:])
    back = tex.read(tex.write(out))
    got = [px for _, px in tex.sprite_frames(back)]
    assert np.array_equal(got[2], edited)
    assert all(np.array_equal(got[k], _frame(k)) for k in (0, 1, 3))
    assert [(f.image, f.time, tuple(f.values)) for f in back.frames] == \
        [(f.image, f.time, tuple(f.values)) for f in t.frames]
    assert (back.flags, back.sprite_tag, back.sprite_size, back.format) == (t.flags, "TEXS0003", (FW, FH), t.format)
    assert [(m.width, m.height) for m in back.images[0]] == [(m.width, m.height) for m in t.images[0]]
    assert np.array_equal(tex.mip_pixels(back)[16:], np.full((16, 32, 4), 99, np.uint8))
    mean = tex.mip_pixels(back, 0, 1)[4, 4]  # the mean of level 0's rows and columns 8..9: inside frame 2
    assert np.array_equal(mean, edited[0, 0])


def test_a_sheet_imports_as_a_sequence_playing_each_frame_for_its_time(clean_scene, tmp_path):
    clean_scene.render.fps, clean_scene.render.fps_base = FPS, 1.0
    path, data = _write_sheet(tmp_path, _sheet())
    img, warnings = blender_io.import_texture(bpy.context, path)
    assert warnings == [] and img.source == "SEQUENCE" and tuple(img.size) == (FW, FH)
    files = _frame_files(img)
    assert files == [f"walk_{n:04d}.png" for n in range(10)]
    shown = [0, 0, 1, 1, 1, 1, 2, 3, 3, 3]  # scene frame j shows the frame whose time span holds j / 20 s
    folder = os.path.dirname(bpy.path.abspath(img.filepath))
    for j, k in enumerate(shown):
        assert np.array_equal(_load_rgba(os.path.join(folder, files[j])), _frame(k)), j
    assert np.array_equal(blender_io.rgba_of(img), _frame(0))
    mat = blender_project.image_material("walk", img)
    user = next(n for n in mat.node_tree.nodes if n.type == "TEX_IMAGE").image_user
    assert (user.frame_duration, user.frame_start, user.frame_offset, user.use_cyclic, user.use_auto_refresh) == \
        (10, clean_scene.frame_start, -1, True, True)
    out = tmp_path / "out.tex"
    assert blender_io.export_texture(img, str(out)) == []
    assert out.read_bytes() == data


def test_an_edited_frame_file_is_written_into_the_sheet(clean_scene, tmp_path):
    clean_scene.render.fps, clean_scene.render.fps_base = FPS, 1.0
    path, data = _write_sheet(tmp_path, _sheet())
    img, _ = blender_io.import_texture(bpy.context, path)
    folder = os.path.dirname(bpy.path.abspath(img.filepath))
    edited = np.zeros((FH, FW, 4), np.uint8)
    edited[..., 0], edited[..., 3] = np.arange(FW) * 16, 255
    paint = bpy.data.images.load(os.path.join(folder, "walk_0004.png"), check_existing=False)  # frame 2's third
    paint.pixels.foreach_set((edited[::-1].astype(np.float32) / 255).reshape(-1))
    paint.save()
    bpy.data.images.remove(paint)
    out = tmp_path / "out.tex"
    assert blender_io.export_texture(img, str(out)) == []
    back = tex.read(out.read_bytes())
    got = tex.sprite_frames(back)
    assert np.array_equal(got[1][1], edited)
    assert all(np.array_equal(got[k][1], _frame(k)) for k in (0, 2, 3))
    assert [time for time, _ in got] == [float(np.float32(x)) for x in TIMES]
    assert [tuple(f.values) for f in back.frames] == [tuple(f.values) for f in tex.read(data).frames]


def test_a_sheet_in_a_format_without_encoder_is_written_as_rgba8888_with_a_warning():
    dxt = copy.copy(_sheet())
    dxt.format = tex.FORMAT_DXT5
    dxt.images = [[tex.Mip(32, 32, bytes(64 * 16), 0, 64 * 16)]]  # 64 all-zero DXT5 blocks: black, alpha 0
    frames = [_frame(k) for k in range(4)]
    out, warnings = sheet.rebuild(dxt, frames)
    assert warnings == ["sprite sheet in DXT5, which has no encoder here: written as RGBA8888"]
    back = tex.read(tex.write(out))
    assert back.format == tex.FORMAT_RGBA8888
    assert all(np.array_equal(px, frames[k]) for k, (_, px) in enumerate(tex.sprite_frames(back)))
    assert np.array_equal(tex.mip_pixels(back)[16:], np.zeros((16, 32, 4), np.uint8))


def test_a_project_image_layer_plays_its_sheet_and_exports_an_edited_frame(clean_scene, tmp_path):
    clean_scene.render.fps, clean_scene.render.fps_base = FPS, 1.0
    src, out = tmp_path / "src", tmp_path / "out"
    (src / "models").mkdir(parents=True)
    (src / "materials").mkdir()
    (src / "materials" / "walk.tex").write_bytes(tex.write(_sheet()))
    (src / "materials" / "walk.json").write_bytes(wp.format_json({"passes": [{"textures": ["walk"]}]}))
    (src / "models" / "walk.json").write_bytes(wp.format_json({"material": "materials/walk.json"}))
    layer = wp.layer_doc("image", "models/walk.json", 1, "walker", (64, 32, 0), size=f"{FW:.5f} {FH:.5f}")
    (src / "scene.json").write_bytes(wp.format_json(wp.scene_doc(128, 64, [layer])))
    result = blender_project.import_project(bpy.context, str(src / "scene.json"))
    ob = next(o for o in result.layers if o.type == "MESH")
    node = next(n for n in ob.data.materials[0].node_tree.nodes if n.type == "TEX_IMAGE")
    assert node.image.source == "SEQUENCE" and node.image_user.frame_duration == 10
    bpy.context.view_layer.objects.active = ob
    blender_project.export_project(bpy.context, str(out / "project.json"))
    assert (out / "materials" / "walk.tex").read_bytes() == (src / "materials" / "walk.tex").read_bytes()
    folder = os.path.dirname(bpy.path.abspath(node.image.filepath))
    edited = np.full((FH, FW, 4), (200, 10, 90, 255), np.uint8)
    os.remove(os.path.join(folder, "walk_0007.png"))  # frame 3's first file, replaced as an outside editor does
    with open(os.path.join(folder, "walk_0007.png"), "wb") as f:
        f.write(encode_png(edited))
    _, warnings = blender_project.export_project(bpy.context, str(out / "project.json"))
    assert warnings == []
    got = tex.sprite_frames(tex.read((out / "materials" / "walk.tex").read_bytes()))
    assert np.array_equal(got[3][1], edited) and all(np.array_equal(got[k][1], _frame(k)) for k in range(3))
    assert (src / "materials" / "walk.tex").read_bytes() == tex.write(_sheet())  # the source is left alone


def test_a_sheet_whose_frame_files_are_gone_is_written_as_imported_with_a_warning(clean_scene, tmp_path):
    clean_scene.render.fps, clean_scene.render.fps_base = FPS, 1.0
    path, data = _write_sheet(tmp_path, _sheet())
    img, _ = blender_io.import_texture(bpy.context, path)
    folder = os.path.dirname(bpy.path.abspath(img.filepath))
    shutil.rmtree(folder)  # the system cleaned its temporary folder
    img.reload()
    out = tmp_path / "out.tex"
    warnings = blender_io.export_texture(img, str(out))
    assert out.read_bytes() == data
    assert warnings == [f"image 'walk': 10 frame files missing in {folder}: those frames are written as imported"]
