"""A minimal GLB reader written for the tests: JSON chunk + BIN chunk + accessors, with numpy only."""
from __future__ import annotations

import json
import struct

import numpy as np

_COMPONENTS = {"SCALAR": 1, "VEC2": 2, "VEC3": 3, "VEC4": 4, "MAT4": 16}
_TYPES = {5120: np.int8, 5121: np.uint8, 5122: np.int16, 5123: np.uint16, 5125: np.uint32, 5126: np.float32}


class Glb:
    def __init__(self, path):
        data = open(path, "rb").read()
        assert data[:4] == b"glTF"
        json_len = struct.unpack_from("<I", data, 12)[0]
        self.json = json.loads(data[20:20 + json_len])
        bin_at = 20 + json_len
        bin_len = struct.unpack_from("<I", data, bin_at)[0]
        self.bin = data[bin_at + 8:bin_at + 8 + bin_len]

    def accessor(self, index: int) -> np.ndarray:
        a = self.json["accessors"][index]
        view = self.json["bufferViews"][a["bufferView"]]
        n = _COMPONENTS[a["type"]]
        dt = np.dtype(_TYPES[a["componentType"]])
        start = view.get("byteOffset", 0) + a.get("byteOffset", 0)
        stride = view.get("byteStride", dt.itemsize * n)
        rows = np.lib.stride_tricks.as_strided(
            np.frombuffer(self.bin, np.uint8, offset=start), shape=(a["count"], dt.itemsize * n),
            strides=(stride, 1))
        out = np.ascontiguousarray(rows).view(dt).reshape(a["count"], n)
        if a.get("normalized"):
            out = out.astype(np.float64) / np.iinfo(dt).max
        return out

    def node_local(self, node: dict) -> np.ndarray:
        if "matrix" in node:
            return np.array(node["matrix"], dtype=np.float64).reshape(4, 4).T
        t = np.array(node.get("translation", [0, 0, 0]), dtype=np.float64)
        x, y, z, w = node.get("rotation", [0, 0, 0, 1])
        s = np.array(node.get("scale", [1, 1, 1]), dtype=np.float64)
        r = np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                      [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                      [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])
        m = np.eye(4)
        m[:3, :3] = r * s
        m[:3, 3] = t
        return m

    def parents(self) -> dict[int, int]:
        out = {}
        for i, n in enumerate(self.json["nodes"]):
            for c in n.get("children", []):
                out[c] = i
        return out
