"""A minimal UMD2 parser written for the tests from the layout table of docs/urho.md §3.1 (not our codec)."""
from __future__ import annotations

import struct

import numpy as np

TYPE_SIZE = {0: 4, 1: 4, 2: 8, 3: 12, 4: 16, 5: 4, 6: 4}


def parse(data: bytes) -> dict:
    pos = 0

    def take(fmt):
        nonlocal pos
        v = struct.unpack_from("<" + fmt, data, pos)
        pos += struct.calcsize("<" + fmt)
        return v if len(v) > 1 else v[0]

    assert data[:4] == b"UMD2"
    pos = 4
    out = {"vbs": [], "ibs": [], "geoms": [], "bones": []}
    for _ in range(take("I")):
        n, ne = take("I"), take("I")
        descs = [take("I") for _ in range(ne)]
        mstart, mcount = take("I"), take("I")
        stride = sum(TYPE_SIZE[d & 0xFF] for d in descs)
        raw = data[pos:pos + n * stride]
        pos += n * stride
        out["vbs"].append({"count": n, "descs": descs, "stride": stride, "raw": raw, "morph": (mstart, mcount)})
    for _ in range(take("I")):
        n, size = take("I"), take("I")
        out["ibs"].append(np.frombuffer(data, "<u2" if size == 2 else "<u4", n, pos).copy())
        pos += n * size
    for _ in range(take("I")):
        nm = take("I")
        mapping = [take("I") for _ in range(nm)]
        lods = []
        for _ in range(take("I")):
            lods.append((take("f"),) + tuple(take("I") for _ in range(5)))
        out["geoms"].append({"mapping": mapping, "lods": lods})
    out["morphs"] = take("I")
    for i in range(take("i")):
        end = data.index(b"\0", pos)
        name = data[pos:end].decode()
        pos = end + 1
        parent = take("i")
        vals = np.array(struct.unpack_from("<22f", data, pos), dtype=np.float64)
        pos += 88
        mask = take("B")
        assert mask == 0, "the UrhoX writer writes collision mask 0"
        out["bones"].append({"name": name, "parent": parent, "position": vals[:3], "rotation": vals[3:7],
                             "scale": vals[7:10], "offset": vals[10:22].reshape(3, 4)})
    out["bbox"] = np.array(struct.unpack_from("<6f", data, pos))
    pos += 24
    n_centers = (len(data) - pos) // 12
    out["centers"] = np.array(struct.unpack_from(f"<{3 * n_centers}f", data, pos)).reshape(-1, 3)
    out["end"] = pos + 12 * n_centers
    return out
