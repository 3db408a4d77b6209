"""Hostile Wallpaper Engine projects and textures the issue-45 tests build in their own folders: a project
holding links that leave it, a sprite sheet of a few hundred KB whose frames claim gigabytes, JSON nested past
any recursion limit, layers scaled to 0 (as BlacRyu's public PS2 menu project has them)."""
from __future__ import annotations

import os

import numpy as np

from skinbridge.io_wepuppet.puppet.project_docs import format_json, layer_doc, project_doc, scene_doc
from skinbridge.io_wepuppet.texture import tex


def lz4_zeros(n: int) -> bytes:
    """An LZ4 block of `n` (≥ 12) zero bytes, written by hand in a few bytes: one zero literal, one match of
    distance 1 repeating it, and the five literals the format keeps at the end."""
    ml = n - 6 - 4  # the match's length beyond the 4 every match has
    out = bytearray([0x10 | min(ml, 15), 0, 1, 0])  # 1 literal, the match's length; the literal; distance 1
    if ml >= 15:
        out += b"\xff" * ((ml - 15) // 255) + bytes([(ml - 15) % 255])
    out += bytes([0x50]) + bytes(5)
    return bytes(out)


def sheet(frames: int, side: int, time: float = 0.1) -> bytes:
    """A sprite sheet (TEXS0003) of one `side`² RGBA8888 image, all zeros in an LZ4 block of a few hundred KB
    at most, and `frames` frames each cut as the whole image, each shown `time` seconds."""
    t = tex.from_rgba(np.zeros((4, 4, 4), np.uint8), levels=1, flags=tex.FLAG_SPRITE)
    size = side * side * 4
    t.texture_width = t.texture_height = t.image_width = t.image_height = side
    t.images = [[tex.Mip(side, side, lz4_zeros(size), 1, size)]]
    t.sprite_tag, t.sprite_size = "TEXS0003", (side, side)
    box = (0.0, 0.0, float(side), 0.0, 0.0, float(side))
    t.frames = [tex.Frame(0, np.float32(time), box) for _ in range(frames)]
    return tex.write(t)


def image_project(folder, texture: bytes | None = None, layers: list[dict] | None = None) -> str:
    """A project in `folder` (made) whose image layer "picture" shows materials/picture.tex (`texture`, else
    a small plain one); `layers` replace the one layer. Returns its project.json."""
    os.makedirs(os.path.join(folder, "models"), exist_ok=True)
    os.makedirs(os.path.join(folder, "materials"), exist_ok=True)
    if texture is None:
        texture = tex.write(tex.from_rgba(np.full((8, 8, 4), 200, np.uint8)))
    with open(os.path.join(folder, "materials", "picture.tex"), "wb") as f:
        f.write(texture)
    with open(os.path.join(folder, "materials", "picture.json"), "wb") as f:
        f.write(format_json({"passes": [{"shader": "genericimage2", "textures": ["picture"]}]}))
    with open(os.path.join(folder, "models", "picture.json"), "wb") as f:
        f.write(format_json({"material": "materials/picture.json"}))
    if layers is None:
        layers = [layer_doc("image", "models/picture.json", 1, "picture", (64, 64, 0), size="64 64")]
    with open(os.path.join(folder, "project.json"), "wb") as f:
        f.write(format_json(project_doc("hostile")))
    with open(os.path.join(folder, "scene.json"), "wb") as f:
        f.write(format_json(scene_doc(128, 128, layers)))
    return os.path.join(folder, "project.json")


SECRET = b"outside the project: must never be copied 7f3a91\n"


def linked_project(base, pipe: bool = False) -> tuple[str, str]:
    """A project in `base`/project whose folder holds links leaving it (`hostname_link` -> /etc/hostname,
    `materials/secret.txt` -> secret.txt of a folder beside it, `models/outside_dir` -> that folder), a link to
    a file inside it (`materials/alias.json` -> picture.json) and, with `pipe`, a pipe (`materials/pipe.tex`).
    Returns (its project.json, the outside secret file)."""
    project = os.path.join(base, "project")
    outside = os.path.join(base, "outside")
    os.makedirs(outside)
    secret = os.path.join(outside, "secret.txt")
    with open(secret, "wb") as f:
        f.write(SECRET)
    path = image_project(project)
    os.symlink("/etc/hostname", os.path.join(project, "hostname_link"))
    os.symlink("../../outside/secret.txt", os.path.join(project, "materials", "secret.txt"))
    os.symlink(outside, os.path.join(project, "models", "outside_dir"))
    os.symlink("picture.json", os.path.join(project, "materials", "alias.json"))
    if pipe:
        os.mkfifo(os.path.join(project, "materials", "pipe.tex"))
    return path, secret


def deep_json(depth: int) -> bytes:
    """A scene.json whose one layer holds an array nested `depth` deep (a few hundred KB)."""
    return (b'{"camera": {}, "general": {}, "objects": [{"name": "deep", "id": 1, "nest": ' + b"[" * depth
            + b"]" * depth + b"}]}")


def zero_scale_layers() -> list[dict]:
    """Layers as BlacRyu's PS2 menu project has them: image layers scaled to 0 (its script modules and its
    hidden helpers), one turned and scaled to 0, and a layer parented to a layer scaled to 0."""
    return [
        layer_doc("image", "models/picture.json", 1, "script module", (-5.5, 0, 0), scale=(0, 0, 0), size="64 64"),
        layer_doc("image", "models/picture.json", 2, "turned", (40, 30, 0), scale=(0, 0, 0), angles=(0.1, 0.2, 0.3),
                  size="64 64"),
        layer_doc("image", "models/picture.json", 3, "flat", (64, 64, 0), scale=(2, 0, 1), size="64 64"),
        layer_doc("image", "models/picture.json", 4, "child", (10, 10, 0), parent=1, size="32 32"),
        layer_doc("image", "models/picture.json", 5, "picture", (64, 64, 0), size="64 64"),
    ]


def write(path, data: bytes | dict) -> None:
    with open(path, "wb") as f:
        f.write(format_json(data) if isinstance(data, dict) else data)

