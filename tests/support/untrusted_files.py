"""Small hostile inputs made by the tests of untrusted files: a skinned one-triangle glTF whose buffer and image
URIs the test chooses, and a PNG."""
from __future__ import annotations

import base64
import json
import pathlib
import struct

import numpy as np

from skinbridge.core.png import encode_png


def triangle_buffer() -> bytes:
    """Positions (3 × vec3), joints (3 × u8vec4), weights (3 × vec4), indices (3 × u16 + pad), one identity
    inverse bind matrix: the bytes of the one buffer of `gltf_doc`."""
    pos = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0]], np.float32).tobytes()
    joints = np.zeros((3, 4), np.uint8).tobytes()
    weights = np.array([[1, 0, 0, 0]] * 3, np.float32).tobytes()
    idx = np.array([0, 1, 2, 0], np.uint16).tobytes()
    ibm = np.eye(4, dtype=np.float32).tobytes()
    return pos + joints + weights + idx + ibm


def gltf_doc(buffer_uri: str, image_uri: str | None = None, byte_length: int | None = None) -> dict:
    data = triangle_buffer()
    views = [(0, 36), (36, 12), (48, 48), (96, 8), (104, 64)]
    doc = {
        "asset": {"version": "2.0"},
        "buffers": [{"uri": buffer_uri, "byteLength": byte_length if byte_length is not None else len(data)}],
        "bufferViews": [{"buffer": 0, "byteOffset": o, "byteLength": n} for o, n in views],
        "accessors": [
            {"bufferView": 0, "componentType": 5126, "count": 3, "type": "VEC3", "min": [0, 0, 0],
             "max": [1, 1, 0]},
            {"bufferView": 1, "componentType": 5121, "count": 3, "type": "VEC4"},
            {"bufferView": 2, "componentType": 5126, "count": 3, "type": "VEC4"},
            {"bufferView": 3, "componentType": 5123, "count": 3, "type": "SCALAR"},
            {"bufferView": 4, "componentType": 5126, "count": 1, "type": "MAT4"},
        ],
        "meshes": [{"name": "tri", "primitives": [{"attributes": {"POSITION": 0, "JOINTS_0": 1, "WEIGHTS_0": 2},
                                                    "indices": 3, "material": 0}]}],
        "materials": [{"name": "mat", "pbrMetallicRoughness": {}}],
        "nodes": [{"name": "tri", "mesh": 0, "skin": 0}, {"name": "root"}],
        "skins": [{"joints": [1], "inverseBindMatrices": 4}],
        "scenes": [{"nodes": [0, 1]}],
        "scene": 0,
    }
    if image_uri is not None:
        doc["images"] = [{"uri": image_uri}]
        doc["textures"] = [{"source": 0}]
        doc["materials"][0]["pbrMetallicRoughness"]["baseColorTexture"] = {"index": 0}
    return doc


def data_uri(data: bytes, mime: str = "application/octet-stream") -> str:
    return f"data:{mime};base64,{base64.b64encode(data).decode()}"


def write_gltf(path: pathlib.Path, doc: dict) -> pathlib.Path:
    path.write_text(json.dumps(doc))
    return path


def write_glb(path: pathlib.Path, doc: dict, bin_chunk: bytes) -> pathlib.Path:
    text = json.dumps(doc).encode()
    text += b" " * (-len(text) % 4)
    bin_chunk += b"\0" * (-len(bin_chunk) % 4)
    body = struct.pack("<II", len(text), 0x4E4F534A) + text + struct.pack("<II", len(bin_chunk), 0x004E4942) + bin_chunk
    path.write_bytes(struct.pack("<4sII", b"glTF", 2, 12 + len(body)) + body)
    return path


def png(color=(200, 30, 30)) -> bytes:
    return encode_png(np.array([[list(color) + [255]] * 2] * 2, np.uint8))
