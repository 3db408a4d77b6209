"""Hostile Wallpaper Engine files, built field by field (layout: docs/wallpaper_engine.md §2, §5).

The base model is a wide MDLV0023 puppet with every section the codec parses or walks: a mesh with bbox,
format 0x0180000F, three 80-byte vertices, u16 indices, the v21 blocks (both present) and one v23 group;
MDLS0002 with one link, rest matrices, a constraint, an IK chain and the per-bone tables; MDAT0001; MDLA0003
with a link track, a constraint track, scalar tracks, a reference block and an event; MDMP0001 (no targets);
MDLE0002; an unknown tag; the end tag and zero padding. The base texture is TEXB0003 DXT5 with an LZ4 mip and
a TEXS0002 sprite frame.
"""
from __future__ import annotations

import struct

from .hostile_cases import ANY, MAP_ERROR, REJECT, SEMANTIC, VALID, WARN, Case, Layout, count_attacks, poison

IDENTITY = (1.0, 0, 0, 0, 0, 1.0, 0, 0, 0, 0, 1.0, 0, 0, 0, 0, 1.0)


class _Mdl(Layout):
    def section(self, tag: str) -> None:
        self.cstring(f"{tag} tag", tag)
        self.put(f"{tag} end", "I", 0)
        self.open = tag

    def close(self) -> None:
        struct.pack_into("<I", self.buf, self.at[f"{self.open} end"], len(self.buf))


def build_model() -> _Mdl:
    b = _Mdl()
    b.cstring("magic", "MDLV0023")
    b.put("legacy format", "I", 0x01800009)
    b.put("materials per mesh", "I", 1)
    b.put("mesh count", "I", 1)
    b.cstring("mesh 0 material", "materials/hostile.json")
    b.put("mesh 0 flags", "I", 0)
    b.put("mesh 0 bbox", "6f", -1, -1, 0, 1, 1, 0)
    b.put("mesh 0 format", "I", 0x0180000F)
    b.put("mesh 0 vertex bytes", "I", 3 * 80)
    for i, (x, y) in enumerate(((0, 0), (10, 0), (0, 10))):
        v = f"vertex {i}"
        b.put(f"{v} position", "3f", x, y, 0)
        b.put(f"{v} normal", "3f", 0, 0, 1)
        b.put(f"{v} tangent", "4f", 1, 0, 0, 1)
        b.put(f"{v} joints", "4I", i % 2, 0, 0, 0)
        b.put(f"{v} weights", "4f", 1, 0, 0, 0)
        b.put(f"{v} uv", "2f", x / 10, y / 10)
    b.put("mesh 0 index bytes", "I", 6)
    b.put("index 0", "H", 0)
    b.put("index 1", "H", 1)
    b.put("index 2", "H", 2)
    b.put("mesh 0 extra positions flag", "B", 1)
    b.put("mesh 0 extra positions word", "I", 7)
    b.put("mesh 0 extra positions length", "I", 4)
    b.raw("mesh 0 extra positions", b"\1\2\3\4")
    b.put("mesh 0 vector4 flag", "B", 1)
    b.put("mesh 0 vector4 length", "I", 16)
    b.put("mesh 0 vector4 block", "4f", 1, 2, 3, 4)
    b.put("mesh 0 group count", "I", 1)
    b.put("group 0 id", "Q", 99)
    b.cstring("group 0 name", "g")
    b.put("group 0 flags", "I", 0)
    b.put("group 0 list a count", "I", 1)
    b.put("group 0 list a", "I", 0)
    b.put("group 0 list b count", "I", 0)
    b.section("MDLS0002")
    b.put("bone count", "I", 2)
    for i in range(2):
        b.cstring(f"bone {i} name", "" if i else "Root")
        b.put(f"bone {i} flags", "I", 1)
        b.put(f"bone {i} parent", "i", i - 1)
        b.put(f"bone {i} matrix length", "I", 64)
        b.put(f"bone {i} matrix", "16f", *IDENTITY[:12], 5.0 * i, 0, 0, 1.0)
        b.cstring(f"bone {i} props", '{"a":"1 0 0"}' if i else "")
    b.put("links count", "H", 1)
    b.cstring("link 0 name", "L")
    b.put("link 0 bone/type", "2I", 1, 0)
    b.put("link 0 matrix", "16f", *IDENTITY)
    b.put("rest matrices flag", "B", 1)
    b.put("rest matrices", "48f", *(IDENTITY * 3))
    b.put("constraints count", "I", 1)
    b.put("constraint 0", "3I", 1, 0, 0)
    b.put("map ids count", "H", 0)
    b.put("IK chains count", "H", 1)
    b.put("IK chain 0 bone", "I", 1)
    b.put("IK chain 0 links count", "I", 1)
    b.put("IK chain 0 link", "I", 0)
    b.put("IK chain 0 elements count", "H", 1)
    b.put("IK chain 0 element 0 bone", "I", 0)
    b.put("IK chain 0 element 0 joints count", "H", 1)
    b.put("IK chain 0 element 0 joint 0", "2I2f", 1, 0, 0.5, 1.0)
    b.put("IK chain 0 element 0 joint 0 bones count", "H", 1)
    b.put("IK chain 0 element 0 joint 0 bone", "I", 0)
    b.put("offset transforms flag", "B", 0)
    b.put("bone words A flag", "B", 1)
    b.put("bone words A", "2I", 0, 1)
    b.close()
    b.section("MDAT0001")
    b.put("attachment count", "H", 1)
    b.put("attachment 0 bone", "H", 1)
    b.cstring("attachment 0 name", "Hand")
    b.put("attachment 0 matrix", "16f", *IDENTITY)
    b.close()
    b.section("MDLA0003")
    b.put("clip count", "i", 1)
    b.put("clip 0 id", "2I", 5, 0)
    b.cstring("clip 0 name", "Wave")
    b.cstring("clip 0 mode", "mirror")
    b.put("clip 0 fps", "f", 10.0)
    b.put("clip 0 length", "I", 1)
    b.put("clip 0 flags", "I", 1)
    b.put("clip 0 track count", "i", 2)
    for t in range(2):
        b.put(f"clip 0 track {t} flags", "I", 0)
        b.put(f"clip 0 track {t} bytes", "I", 72)
        for k in range(2):
            b.put(f"clip 0 track {t} sample {k}", "9f", 5.0 * t, 0, 0, 0, 0, 0.1 * k, 1, 1, 1)
    b.put("clip 0 link track word", "I", 0)
    b.put("clip 0 link track bytes", "I", 72)
    b.put("clip 0 link track", "18f", *([0.0] * 18))
    b.put("clip 0 constraint track word", "I", 0)
    b.put("clip 0 constraint track bytes", "I", 8)
    b.put("clip 0 constraint track", "2f", 0, 1)
    b.put("clip 0 scalar tracks count", "I", 1)
    b.put("clip 0 scalar track word", "I", 0)
    b.put("clip 0 scalar track bytes", "I", 8)
    b.put("clip 0 scalar track", "2f", 0, 1)
    b.put("clip 0 bone scalar tracks flag", "B", 0)
    b.put("clip 0 reference", "H4I", 0, 0, 1, 0, 0)
    b.put("clip 0 event count", "i", 1)
    b.put("clip 0 event 0 frame", "f", 1.0)
    b.cstring("clip 0 event 0 text", '{"frame":1,"name":"tick"}')
    b.close()
    b.section("MDMP0001")
    b.put("mesh 0 morph target count", "H", 0)
    b.close()
    b.section("MDLE0002")
    b.put("reference pose bytes", "I", 128)
    b.put("reference pose", "32f", *(IDENTITY * 2))
    b.close()
    b.section("ZZZZ0001")
    b.raw("unknown body", b"anything at all")
    b.close()
    b.put("end tag", "B", 0)
    b.raw("padding", bytes(64))
    b.at["end"] = len(b.buf)
    return b


def build_texture() -> Layout:
    from skinbridge.io_wepuppet.texture import tex

    raw = bytes(range(8)) * 2 + bytes(16) * 3  # four DXT5 blocks: one patterned, three zero
    packed = tex.lz4_compress(raw)
    b = Layout()
    b.cstring("magic", "TEXV0005")
    b.cstring("TEXI tag", "TEXI0001")
    b.put("format", "i", 4)
    b.put("flags", "i", 4)
    b.put("texture size", "2i", 8, 8)
    b.put("image size", "2i", 8, 8)
    b.put("unknown", "I", 0)
    b.cstring("container", "TEXB0003")
    b.put("image count", "i", 1)
    b.put("image format", "i", -1)
    b.put("mip count", "i", 2)
    b.put("mip 0 size", "2i", 8, 8)
    b.put("mip 0 lz4", "i", 1)
    b.put("mip 0 decompressed size", "i", len(raw))
    b.put("mip 0 data size", "i", len(packed))
    b.raw("mip 0 data", packed)
    b.put("mip 1 size", "2i", 4, 4)
    b.put("mip 1 lz4", "i", 0)
    b.put("mip 1 decompressed size", "i", 16)
    b.put("mip 1 data size", "i", 16)
    b.raw("mip 1 data", bytes(16))
    b.cstring("sprite tag", "TEXS0002")
    b.put("frame count", "i", 1)
    b.put("frame 0", "if6f", 0, 0.1, 0, 0, 8, 0, 0, 8)
    b.at["end"] = len(b.buf)
    return b


_OPTIONAL_STARTS = ("MDLS0002 tag", "MDAT0001 tag", "MDLA0003 tag", "MDMP0001 tag", "MDLE0002 tag",
                    "ZZZZ0001 tag")


def model_cases() -> list[Case]:
    b = build_model()
    p = "MDLV0023"
    out = [Case(f"{p}: base", b.bytes(), VALID, "base")]
    counts = ["materials per mesh", "mesh count", "mesh 0 vertex bytes", "mesh 0 index bytes",
              "mesh 0 extra positions length", "mesh 0 vector4 length", "mesh 0 group count", "group 0 list a count",
              "bone count", "constraints count", "IK chain 0 links count", "clip count", "clip 0 track count",
              "clip 0 scalar tracks count", "clip 0 event count", "reference pose bytes"]
    out += count_attacks(b, counts, p)
    for label, at in b.at.items():
        if label in ("magic", "end") or label == "padding":
            continue
        if label in _OPTIONAL_STARTS or label == "end tag":
            out.append(Case(f"{p}: cut before {label}", b.bytes()[:at], WARN, "ends between sections"))
        else:
            out.append(Case(f"{p}: cut before {label}", b.bytes()[:at], REJECT, "truncated"))
    pad = b.at["padding"]
    out += [Case(f"{p}: cut inside the padding", b.bytes()[:pad + 10], VALID, "padding is optional"),
            Case(f"{p}: nonzero byte in the padding", b.set("padding", 7, fmt="B"), WARN, "padding not zero")]
    for n, (label, k) in enumerate({"vertex 1 position": 1, "vertex 2 weights": 0, "vertex 0 uv": 1,
                                    "bone 1 matrix": 12, "clip 0 track 1 sample 1": 4, "clip 0 fps": 0,
                                    "attachment 0 matrix": 3}.items()):
        for kind, data in poison(b.buf, b.at[label] + 4 * k, n):
            out.append(Case(f"{p}: {label}[{k}] = {kind}", data, ANY, f"non-finite {label}"))
    out += [
        Case(f"{p}: version 24", b.set("magic", b"MDLV0024", fmt="8s"), REJECT, "version"),
        Case(f"{p}: version 3", b.set("magic", b"MDLV0003", fmt="8s"), REJECT, "version"),
        Case(f"{p}: magic MDLX", b.set("magic", b"MDLX", fmt="4s"), REJECT, "magic"),
        Case(f"{p}: unknown format bit", b.set("mesh 0 format", 0x0180000F | 0x04000000), REJECT, "format bits"),
        Case(f"{p}: 52-byte format with 240 bytes", b.set("mesh 0 format", 0x01800009), REJECT, "stride"),
        Case(f"{p}: vertex bytes not a multiple", b.set("mesh 0 vertex bytes", 239), REJECT, "stride"),
        Case(f"{p}: odd index bytes", b.set("mesh 0 index bytes", 5), REJECT, "index size"),
        Case(f"{p}: vector4 block of 12 bytes", b.set("mesh 0 vector4 length", 12), REJECT, "vector4"),
        Case(f"{p}: bone matrix length 48", b.set("bone 0 matrix length", 48), REJECT, "matrix length"),
        Case(f"{p}: section end backwards", b.set("MDLS0002 end", b.at["MDLS0002 tag"]), REJECT, "end offset"),
        Case(f"{p}: section end one short", b.set("MDAT0001 end", b.at["MDLA0003 tag"] - 1), REJECT, "end offset"),
        Case(f"{p}: section end one long", b.set("MDAT0001 end", b.at["MDLA0003 tag"] + 1), REJECT, "end offset"),
        Case(f"{p}: section end past the file", b.set("MDLE0002 end", 1 << 30), REJECT, "end offset"),
        Case(f"{p}: unknown section end past the file", b.set("ZZZZ0001 end", len(b.buf) + 1), REJECT, "end"),
        Case(f"{p}: track bytes 71", b.set("clip 0 track 1 bytes", 71), REJECT, "track size"),
        Case(f"{p}: constraint track bytes 4", b.set("clip 0 constraint track bytes", 4), REJECT, "track size"),
        Case(f"{p}: reference pose for 3 bones", b.set("reference pose bytes", 192), REJECT, "MDLE size"),
        Case(f"{p}: clip length 2^32-1, no tracks", _no_tracks(b), ANY, "length without tracks"),
        Case(f"{p}: vertex bone index 9", b.set("vertex 0 joints", 9, 0, 0, 0), MAP_ERROR, "bone index"),
        Case(f"{p}: face index -> vertex 7", b.set("index 2", 7), MAP_ERROR, "vertex index"),
        Case(f"{p}: bone parent 5", b.set("bone 1 parent", 5), MAP_ERROR, "parent out of range"),
        Case(f"{p}: bone is its own parent", b.set("bone 1 parent", 1), MAP_ERROR, "parent loop"),
        Case(f"{p}: attachment bone 9", b.set("attachment 0 bone", 9), MAP_ERROR, "attachment bone"),
        Case(f"{p}: clip fps 0", b.set("clip 0 fps", 0.0), MAP_ERROR, "fps"),
        Case(f"{p}: clip with one track for two bones", _one_track(b), SEMANTIC, "track count"),
        Case(f"{p}: mode 'bounce'", b.splice("clip 0 mode", 7, b"bounce\0"), VALID, "unknown mode kept"),
    ]
    return out


def _no_tracks(b: _Mdl) -> bytes:
    start, end = b.at["clip 0 length"], b.at["clip 0 link track word"]
    data = bytearray(b.buf)
    body = struct.pack("<IIi", 0xFFFFFFFF, 1, 0)
    # the link / constraint tracks of MDLA v2+ follow the skeleton's counts and need the length too: drop the
    # skeleton tables' link and constraint so that the clip ends right after its scalar blocks
    new = bytes(data[:start]) + body + bytes(data[end:])
    return _fix_ends(b, new, start, (end - start) - len(body))


def _one_track(b: _Mdl) -> bytes:
    start, end = b.at["clip 0 track 1 flags"], b.at["clip 0 link track word"]
    data = bytes(b.buf[:start]) + bytes(b.buf[end:])
    data = bytearray(data)
    struct.pack_into("<i", data, b.at["clip 0 track count"], 1)
    return _fix_ends(b, bytes(data), start, end - start)


def _fix_ends(b: _Mdl, data: bytes, at: int, removed: int) -> bytes:
    """Section end offsets after `at` moved back by `removed` bytes."""
    out = bytearray(data)
    for label, where in b.at.items():
        if label.endswith(" end") and label[:8].isalnum() and where < len(out):
            value = struct.unpack_from("<I", b.buf, where)[0]
            if value > at:
                pos = where if where < at else where - removed
                struct.pack_into("<I", out, pos, value - removed)
    return bytes(out)


def texture_cases() -> list[Case]:
    b = build_texture()
    p = "TEXB0003"
    out = [Case(f"{p}: base", b.bytes(), VALID, "base")]
    out += count_attacks(b, ["image count", "mip count", "mip 0 data size", "frame count"], p)
    for label, at in b.at.items():
        if label not in ("magic", "end"):
            out.append(Case(f"{p}: cut before {label}", b.bytes()[:at], REJECT, "truncated"))
    out += [
        Case(f"{p}: format 5", b.set("format", 5), REJECT, "pixel format"),
        Case(f"{p}: container TEXB0005", b.set("container", b"TEXB0005", fmt="8s"), REJECT, "container"),
        Case(f"{p}: TEXV0004", b.set("magic", b"TEXV0004", fmt="8s"), REJECT, "version"),
        Case(f"{p}: mip side 2^30", b.set("mip 0 size", 1 << 30, 8), REJECT, "mip size"),
        Case(f"{p}: decompressed size 2^31-1", b.set("mip 0 decompressed size", 0x7FFFFFFF), SEMANTIC, "lz4 size"),
        Case(f"{p}: decompressed size one short", b.set("mip 0 decompressed size", 63), SEMANTIC, "lz4 size"),
        Case(f"{p}: raw mip too short for DXT5 4×4", b.set("mip 1 size", 8, 8), SEMANTIC, "mip bytes"),
        Case(f"{p}: frame of image 3", b.set("frame 0", 3, 0.1, 0, 0, 8, 0, 0, 8), SEMANTIC, "frame image"),
        Case(f"{p}: sprite tag TEXS0009", b.set("sprite tag", b"TEXS0009", fmt="8s"), REJECT, "sprite tag"),
        Case(f"{p}: trailing bytes", b.bytes() + b"\1", WARN, "bytes after the texture"),
    ]
    return out


def cases() -> list[Case]:
    return model_cases()


def seeds() -> list[tuple[str, bytes]]:
    return [("generated MDLV0023 wide puppet", build_model().bytes())]


def texture_seeds() -> list[tuple[str, bytes]]:
    return [("generated TEXB0003 DXT5 LZ4 sprite", build_texture().bytes())]


MAX_LEN = 1 << 14


def shrink(data: bytes, keep: int = 48) -> bytes:
    """The same model with at most `keep` vertices per mesh (triangles that use others dropped), clips cut to
    4 samples where they carry no v2+ blocks, and no padding."""
    import numpy as np

    from skinbridge.io_wepuppet.puppet import mdl

    m = mdl.read(data)
    for mesh in m.meshes:
        mesh.vertices = mesh.vertices[:keep]
        tris = np.asarray(mesh.indices)[:len(mesh.indices) // 3 * 3].reshape(-1, 3)
        mesh.indices = tris[(tris < keep).all(axis=1)].reshape(-1).astype(mesh.indices.dtype)
    anims = m.animations
    if anims is not None:
        for c in anims.clips:
            if not c.blocks and len(c.track_flags):
                c.length = min(c.length, 3)
                c.samples = np.ascontiguousarray(c.samples[:, :c.length + 1])
    m.tail = b""
    return mdl.write(m)
