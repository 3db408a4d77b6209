"""Writes small GLB files for the tests (json + one binary buffer), with numpy only."""
from __future__ import annotations

import json
import struct
import zlib

import numpy as np


def png_bytes(rgba: np.ndarray) -> bytes:
    h, w, _ = rgba.shape
    raw = b"".join(b"\0" + rgba[y].astype(np.uint8).tobytes() for y in range(h))

    def chunk(k, d):
        return struct.pack(">I", len(d)) + k + d + struct.pack(">I", zlib.crc32(k + d) & 0xFFFFFFFF)

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 6, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def textured_quads_glb(material_names: list[str], image_names: list[str]) -> bytes:
    """One mesh with a textured quad per material; material i uses image i (a 2×2 PNG of its own colour)."""
    blob = bytearray()
    views, accessors, prims, images, textures, materials = [], [], [], [], [], []

    def add(data: bytes, target=None):
        while len(blob) % 4:
            blob.append(0)
        view = {"buffer": 0, "byteOffset": len(blob), "byteLength": len(data)}
        views.append({**view, "target": target} if target else view)
        blob.extend(data)
        return len(views) - 1

    for i, (mname, iname) in enumerate(zip(material_names, image_names)):
        pos = np.array([[i, 0, 0], [i + 1, 0, 0], [i + 1, 1, 0], [i, 1, 0]], np.float32)
        uv = np.array([[0, 1], [1, 1], [1, 0], [0, 0]], np.float32)
        idx = np.array([0, 1, 2, 0, 2, 3], np.uint16)
        a_pos = len(accessors)
        accessors.append({"bufferView": add(pos.tobytes(), 34962), "componentType": 5126, "count": 4, "type": "VEC3",
                          "min": pos.min(0).tolist(), "max": pos.max(0).tolist()})
        accessors.append({"bufferView": add(uv.tobytes(), 34962), "componentType": 5126, "count": 4, "type": "VEC2"})
        accessors.append({"bufferView": add(idx.tobytes(), 34963), "componentType": 5123, "count": 6, "type": "SCALAR"})
        rgba = np.zeros((2, 2, 4), np.uint8)
        rgba[:] = (40 * i, 255 - 40 * i, 7 * i, 255)
        images.append({"name": iname, "mimeType": "image/png", "bufferView": add(png_bytes(rgba))})
        textures.append({"source": i})
        materials.append({"name": mname, "pbrMetallicRoughness": {"baseColorTexture": {"index": i},
                                                                   "metallicFactor": 0.25, "roughnessFactor": 0.5}})
        prims.append({"attributes": {"POSITION": a_pos, "TEXCOORD_0": a_pos + 1}, "indices": a_pos + 2, "material": i})
    doc = {"asset": {"version": "2.0"}, "scene": 0, "scenes": [{"nodes": [0]}],
           "nodes": [{"name": "quads", "mesh": 0}], "meshes": [{"primitives": prims}], "accessors": accessors,
           "bufferViews": views, "buffers": [{"byteLength": len(blob)}], "images": images, "textures": textures,
           "materials": materials}
    js = json.dumps(doc).encode()
    js += b" " * (-len(js) % 4)
    blob += b"\0" * (-len(blob) % 4)
    body = struct.pack("<I4s", len(js), b"JSON") + js + struct.pack("<I4s", len(blob), b"BIN\0") + bytes(blob)
    return struct.pack("<4sII", b"glTF", 2, 12 + len(body)) + body
