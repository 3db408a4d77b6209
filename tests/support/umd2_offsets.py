"""Byte offsets in a UMD2 model written by `convert` from Fox.glb, walked from the layout table (docs/urho.md §3;
one vertex buffer, collision mask 0), never taken from our reader: where to corrupt a copy so `check` must name
that field."""
from __future__ import annotations

import struct

TYPE_SIZE = {0: 4, 1: 4, 2: 8, 3: 12, 4: 16, 5: 4, 6: 4}


def fox_layout(data: bytes) -> dict:
    assert data[:4] == b"UMD2" and struct.unpack_from("<I", data, 4)[0] == 1
    count, n_elements = struct.unpack_from("<II", data, 8)
    descs = struct.unpack_from(f"<{n_elements}I", data, 16)
    stride = sum(TYPE_SIZE[d & 0xFF] for d in descs)
    vdata = 16 + 4 * n_elements + 8
    at = vdata + count * stride
    n_index_buffers = struct.unpack_from("<I", data, at)[0]
    at += 4
    for _ in range(n_index_buffers):
        n, size = struct.unpack_from("<II", data, at)
        at += 8 + n * size
    n_geometries = struct.unpack_from("<I", data, at)[0]
    at += 4
    for _ in range(n_geometries):
        mapping = struct.unpack_from("<I", data, at)[0]
        at += 4 + 4 * mapping
        lods = struct.unpack_from("<I", data, at)[0]
        at += 4 + 24 * lods
    assert struct.unpack_from("<I", data, at)[0] == 0  # no morphs
    n_bones = struct.unpack_from("<i", data, at + 4)[0]
    at += 8
    bones = []
    for _ in range(n_bones):
        end = data.index(b"\0", at)
        bones.append((data[at:end].decode(), at, end + 1))  # name, record offset, parent offset
        at = end + 1 + 4 + 88 + 1
    return {"count_at": 8, "count": count, "stride": stride, "vertex_data": vdata, "position": 0,
            "n_bones": n_bones, "bones": bones}
