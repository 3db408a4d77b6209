"""An independent walker for Urho3D-family models (UMDL, UMD2, UMD3), written for the tests straight from the
layout tables in docs/urho.md §3.1–§3.4 and §4 (it shares no code with io_urhox/model/umd2.py).

It returns plain dicts and raw bytes: element descriptors, strides, index arrays, geometries with their LOD
tuples, morph buffers (absolute vertex index + deltas), bones with collision extras, bbox and centers.
"""
from __future__ import annotations

import struct

import numpy as np

SIZE_OF_TYPE = [4, 4, 8, 12, 16, 4, 4]
# UMDL legacy mask bit → descriptor (type | semantic << 8 | index << 16), in interleaving order.
LEGACY = [(1 << 0, 0x000003), (1 << 1, 0x000103), (1 << 2, 0x000506), (1 << 3, 0x000402), (1 << 4, 0x010402),
          (1 << 5, 0x000403), (1 << 6, 0x010403), (1 << 7, 0x000304), (1 << 8, 0x000604), (1 << 9, 0x000705),
          (1 << 10, 0x040404), (1 << 11, 0x050404), (1 << 12, 0x060404), (1 << 13, 0x000800)]


class _Cursor:
    def __init__(self, data: bytes):
        self.data, self.pos = data, 0

    def take(self, fmt: str):
        values = struct.unpack_from("<" + fmt, self.data, self.pos)
        self.pos += struct.calcsize("<" + fmt)
        return values if len(values) > 1 else values[0]

    def raw(self, n: int) -> bytes:
        assert self.pos + n <= len(self.data), "walked past the end"
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def name(self) -> str:
        end = self.data.index(b"\0", self.pos)
        out = self.data[self.pos:end].decode("utf-8")
        self.pos = end + 1
        return out


def walk(data: bytes) -> dict:
    c = _Cursor(data)
    magic = c.raw(4).decode("ascii")
    assert magic in ("UMDL", "UMD2", "UMD3")
    out = {"magic": magic, "version": c.take("I") if magic == "UMD3" else None,
           "vbs": [], "ibs": [], "geometries": [], "morphs": [], "bones": []}
    for _ in range(c.take("I")):
        count = c.take("I")
        if magic == "UMDL":
            mask = c.take("I")
            descs = [d for bit, d in LEGACY if mask & bit]
        else:
            mask = None
            descs = [c.take("I") for _ in range(c.take("I"))]
        morph_start, morph_count = c.take("II")
        stride = sum(SIZE_OF_TYPE[d & 0xFF] for d in descs)
        out["vbs"].append({"count": count, "mask": mask, "descs": descs, "stride": stride,
                           "morph_range": (morph_start, morph_count), "raw": c.raw(count * stride)})
    for _ in range(c.take("I")):
        count, size = c.take("II")
        out["ibs"].append(np.frombuffer(c.raw(count * size), "<u2" if size == 2 else "<u4").copy())
    for _ in range(c.take("I")):
        mapping = [c.take("I") for _ in range(c.take("I"))]
        lods = [c.take("fIIIII") for _ in range(c.take("I"))]
        out["geometries"].append({"mapping": mapping, "lods": lods})
    weighted = magic == "UMD3" and out["version"] >= 2
    for _ in range(c.take("I")):
        morph = {"name": c.name(), "weight": c.take("f") if weighted else None, "buffers": []}
        for _ in range(c.take("I")):
            vb, mask, n = c.take("III")
            per = 4 + 12 * ((mask & 1) + ((mask >> 1) & 1) + ((mask >> 7) & 1))
            rows = c.raw(n * per)
            buf = {"vb": vb, "mask": mask, "index": [], "position": [], "normal": [], "tangent": []}
            for k in range(n):
                row = rows[k * per:(k + 1) * per]
                buf["index"].append(struct.unpack_from("<I", row, 0)[0])
                at = 4
                for bit, key in ((1, "position"), (2, "normal"), (0x80, "tangent")):
                    if mask & bit:
                        buf[key].append(struct.unpack_from("<3f", row, at))
                        at += 12
            morph["buffers"].append({k: np.array(v) if k in ("index", "position", "normal", "tangent") else v
                                     for k, v in buf.items()})
        out["morphs"].append(morph)
    for _ in range(c.take("i")):
        bone = {"name": c.name(), "parent": c.take("i")}
        values = np.array(c.take("22f"), dtype=np.float64)
        bone.update(position=values[:3], rotation=values[3:7], scale=values[7:10], offset=values[10:].reshape(3, 4))
        bone["mask"] = c.take("B")
        bone["radius"] = c.take("f") if bone["mask"] & 1 else None
        bone["box"] = np.array(c.take("6f")) if bone["mask"] & 2 else None
        out["bones"].append(bone)
    out["bbox"] = np.array(c.take("6f"))
    n_centers = (len(data) - c.pos) // 12
    out["centers"] = np.array(c.take(f"{3 * n_centers}f") if n_centers else []).reshape(-1, 3)
    out["end"] = c.pos
    return out


def columns(vb: dict) -> dict:
    """The vertex buffer's columns keyed by (semantic, index), as float64 or uint8 arrays."""
    shapes = {0: ("<i4", 1), 1: ("<f4", 1), 2: ("<f4", 2), 3: ("<f4", 3), 4: ("<f4", 4), 5: ("u1", 4), 6: ("u1", 4)}
    names, formats, offsets, at = [], [], [], 0
    for d in vb["descs"]:
        t = d & 0xFF
        base, n = shapes[t]
        names.append(f"c{len(names)}")
        formats.append((base, (n,)))
        offsets.append(at)
        at += SIZE_OF_TYPE[t]
    dt = np.dtype({"names": names, "formats": formats, "offsets": offsets, "itemsize": at})
    arr = np.frombuffer(vb["raw"], dt, vb["count"])
    return {((d >> 8) & 0xFF, (d >> 16) & 0xFF): arr[f"c{i}"] for i, d in enumerate(vb["descs"])}
