"""Hostile UMD2 / UMDL / UMD3 models, built field by field (layout: docs/urho.md §3).

The base model is small but uses every part of the layout: one skinned vertex buffer, one index buffer, one
geometry with a bone mapping and one LOD, one morph, two bones (the first with collision sphere and box),
the bounding box and one geometry center. Each case is the base with one field changed or the file cut.
"""
from __future__ import annotations

from .hostile_cases import ANY, MAP_ERROR, REJECT, SEMANTIC, VALID, WARN, Case, Layout, count_attacks, poison

UMD2_ELEMENTS = [  # (type, semantic): POSITION, NORMAL, TEXCOORD0, BLENDWEIGHTS, BLENDINDICES
    (3, 0), (3, 1), (2, 4), (4, 6), (5, 7),
]
UMDL_MASK = 0x0001 | 0x0002 | 0x0008 | 0x0100 | 0x0200  # the same elements in legacy bit order
VERTICES = [((0, 0, 0), (0, 0, 1), (0, 0)), ((1, 0, 0), (0, 0, 1), (1, 0)), ((0, 1, 0), (0, 0, 1), (0, 1))]
IDENTITY_3X4 = (1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0)


def build(magic: str = "UMD2", version: int = 2, centers: int = 1) -> Layout:
    b = Layout()
    b.raw("magic", magic.encode())
    if magic == "UMD3":
        b.put("version", "I", version)
    b.put("vertex buffer count", "I", 1)
    b.put("vertex count", "I", len(VERTICES))
    if magic == "UMDL":
        b.put("element mask", "I", UMDL_MASK)
    else:
        b.put("element count", "I", len(UMD2_ELEMENTS))
        for k, (t, s) in enumerate(UMD2_ELEMENTS):
            b.put(f"element {k}", "I", t | s << 8)
    b.put("morph range start", "I", 0)
    b.put("morph range count", "I", len(VERTICES))
    for i, (pos, nrm, uv) in enumerate(VERTICES):
        b.put(f"vertex {i} position", "3f", *pos)
        b.put(f"vertex {i} normal", "3f", *nrm)
        b.put(f"vertex {i} uv", "2f", *uv)
        b.put(f"vertex {i} weights", "4f", 0.5, 0.5, 0, 0)
        b.put(f"vertex {i} blend indices", "4B", 0, 1, 0, 0)
    b.put("index buffer count", "I", 1)
    b.put("index count", "I", 3)
    b.put("index size", "I", 2)
    for k in range(3):
        b.put(f"index {k}", "H", k)
    b.put("geometry count", "I", 1)
    b.put("bone mapping count", "I", 2)
    b.put("bone mapping 0", "I", 0)
    b.put("bone mapping 1", "I", 1)
    b.put("LOD count", "I", 1)
    b.put("LOD distance", "f", 0.0)
    b.put("LOD primitive type", "I", 0)
    b.put("LOD vertex buffer", "I", 0)
    b.put("LOD index buffer", "I", 0)
    b.put("LOD index start", "I", 0)
    b.put("LOD index count", "I", 3)
    b.put("morph count", "I", 1)
    b.cstring("morph name", "smile")
    if magic == "UMD3" and version >= 2:
        b.put("morph default weight", "f", 0.25)
    b.put("morph buffer count", "I", 1)
    b.put("morph vertex buffer", "I", 0)
    b.put("morph element mask", "I", 1)
    b.put("morph vertex count", "I", 1)
    b.put("morph vertex index", "I", 2)
    b.put("morph position delta", "3f", 0, 0, 0.5)
    b.put("bone count", "i", 2)
    for i, (name, parent, pos, mask) in enumerate((("root", 0, (0, 0, 0), 3), ("child", 0, (0, 1, 0), 0))):
        b.cstring(f"bone {i} name", name)
        b.put(f"bone {i} parent", "i", parent)
        b.put(f"bone {i} position", "3f", *pos)
        b.put(f"bone {i} rotation", "4f", 1, 0, 0, 0)
        b.put(f"bone {i} scale", "3f", 1, 1, 1)
        offset = list(IDENTITY_3X4)
        offset[7] = -pos[1]
        b.put(f"bone {i} offset", "12f", *offset)
        b.put(f"bone {i} collision mask", "B", mask)
        if mask & 1:
            b.put(f"bone {i} radius", "f", 0.5)
        if mask & 2:
            b.put(f"bone {i} box", "6f", -1, -1, -1, 1, 1, 1)
    b.put("bbox min", "3f", 0, 0, 0)
    b.put("bbox max", "3f", 1, 1, 0)
    for k in range(centers):
        b.put(f"center {k}", "3f", 0.3, 0.3, 0)
    b.at["end"] = len(b.buf)
    return b


COUNTS = ["vertex buffer count", "vertex count", "element count", "index buffer count", "index count",
          "geometry count", "bone mapping count", "LOD count", "morph count", "morph buffer count",
          "morph vertex count", "bone count"]


# floats the mapping checks today; the others are imported silently
WARNED = {"vertex 1 position", "vertex 1 normal", "morph position delta", "bone 1 offset"}


def _nan_cases(b: Layout, prefix: str) -> list[Case]:
    """NaN (three bit patterns) and ±Inf in every float field kind."""
    out = []
    floats = {  # label: (fmt, index of the component to poison, expectation)
        "vertex 1 position": ("3f", 1, SEMANTIC), "vertex 1 normal": ("3f", 0, SEMANTIC),
        "vertex 0 uv": ("2f", 1, SEMANTIC), "vertex 2 weights": ("4f", 0, SEMANTIC),
        "LOD distance": ("f", 0, SEMANTIC), "morph position delta": ("3f", 2, SEMANTIC),
        "bone 1 position": ("3f", 0, SEMANTIC), "bone 1 rotation": ("4f", 0, SEMANTIC),
        "bone 1 scale": ("3f", 2, SEMANTIC), "bone 1 offset": ("12f", 3, MAP_ERROR),
        "bone 0 radius": ("f", 0, SEMANTIC), "bone 0 box": ("6f", 4, SEMANTIC),
        "bbox min": ("3f", 0, SEMANTIC), "center 0": ("3f", 1, SEMANTIC),
    }
    for n, (label, (fmt, k, expect)) in enumerate(floats.items()):
        known = None
        for kind, data in poison(b.buf, b.at[label] + 4 * k, n):
            out.append(Case(f"{prefix}: {label}[{k}] = {kind}", data, expect, f"non-finite {label}", known))
    return out


def cases() -> list[Case]:
    out: list[Case] = []
    for magic in ("UMD2", "UMDL", "UMD3"):
        b = build(magic)
        p = magic
        out.append(Case(f"{p}: base", b.bytes(), VALID, "the unmodified base model"))
        out += count_attacks(b, [c for c in COUNTS if c in b.at], p)
        # truncation at every field: a structural fault before the bounding box ends, the optional
        # geometry centers after it
        for label, at in b.at.items():
            if label in ("magic", "end"):
                continue
            expect = WARN if at >= b.at["center 0"] else REJECT
            out.append(Case(f"{p}: cut before {label}", b.bytes()[:at], expect, "truncated"))
        out.append(Case(f"{p}: cut inside morph name (unterminated)", b.cut("morph name", 3), REJECT,
                        "string without terminator"))
        out.append(Case(f"{p}: cut inside bone 1 name (unterminated)", b.cut("bone 1 name", 2), REJECT,
                        "string without terminator"))
        out.append(Case(f"{p}: cut inside center 0", b.cut("center 0", 7), WARN, "partial optional tail"))
        out.append(Case(f"{p}: trailing bytes", b.bytes() + b"\x01\x02\x03", WARN, "bytes after the centers"))
        out.append(Case(f"{p}: no centers, nothing after the box", build(magic, centers=0).bytes(), WARN,
                        "optional tail missing"))
    b = build("UMD2")
    p = "UMD2"
    out += _nan_cases(b, p)
    # layout-selecting values out of range
    out += [
        Case(f"{p}: element type 7", b.set("element 0", 7), REJECT, "element type out of range"),
        Case(f"{p}: element descriptor bits 24-31", b.set("element 0", 3 | 0x01000000), REJECT, "reserved bits"),
        Case(f"{p}: index size 3", b.set("index size", 3), REJECT, "index size"),
        Case(f"{p}: index size 0", b.set("index size", 0), REJECT, "index size"),
        Case(f"{p}: morph element mask 0x4", b.set("morph element mask", 0x4), REJECT, "morph mask"),
        Case(f"{p}: magic UMD9", b.set("magic", b"UMD9", fmt="4s"), REJECT, "magic"),
        Case("UMDL: element mask bit 0x4000", build("UMDL").set("element mask", UMDL_MASK | 0x4000), REJECT,
             "unknown legacy mask bit"),
        Case(f"{p}: vertices but no elements", b.set("element count", 0), ANY, "zero-size vertex"),
    ]
    # indices and parents out of range: the codec keeps them, the mapping refuses what would index out of range
    out += [
        Case(f"{p}: LOD vertex buffer 5 of 1", b.set("LOD vertex buffer", 5), MAP_ERROR, "index out of range"),
        Case(f"{p}: LOD index buffer 0xFFFFFFFF", b.set("LOD index buffer", 0xFFFFFFFF), MAP_ERROR, "index"),
        Case(f"{p}: LOD index start past the buffer", b.set("LOD index start", 2), MAP_ERROR, "offset past end"),
        Case(f"{p}: LOD index count 2^32-1", b.set("LOD index count", 0xFFFFFFFF), MAP_ERROR, "count past end"),
        Case(f"{p}: LOD start+count wraps 2^32", b.set("LOD index start", 0xFFFFFFFF), MAP_ERROR, "offset wrap"),
        Case(f"{p}: index 2 -> vertex 7 of 3", b.set("index 2", 7), MAP_ERROR, "vertex index out of range"),
        Case(f"{p}: index 2 -> vertex 65535", b.set("index 2", 0xFFFF), MAP_ERROR, "vertex index out of range"),
        Case(f"{p}: bone mapping -> bone 99 of 2", b.set("bone mapping 1", 99), MAP_ERROR, "bone index"),
        Case(f"{p}: blend index 7, mapping of 2", b.set("vertex 0 blend indices", 0, 7, 0, 0), MAP_ERROR,
             "blend index past the bone mapping"),
        Case(f"{p}: morph vertex buffer 4 of 1", b.set("morph vertex buffer", 4), MAP_ERROR, "index"),
        Case(f"{p}: morph vertex index 50 of 3", b.set("morph vertex index", 50), MAP_ERROR, "index"),
        Case(f"{p}: morph vertex outside the morph range", b.set("morph range count", 1), SEMANTIC, "range"),
        Case(f"{p}: primitive type 99", b.set("LOD primitive type", 99), SEMANTIC, "unknown primitive"),
        Case(f"{p}: bone 1 parent 2 of 2", b.set("bone 1 parent", 2), MAP_ERROR, "parent out of range"),
        Case(f"{p}: bone 1 parent -2", b.set("bone 1 parent", -2), MAP_ERROR, "negative parent"),
        Case(f"{p}: bone 1 parent -1 (no Urho3D meaning)", b.set("bone 1 parent", -1), ANY, "parent -1"),
        Case(f"{p}: bone 0 parent 0x7FFFFFFF", b.set("bone 0 parent", 0x7FFFFFFF), MAP_ERROR, "huge parent"),
        Case(f"{p}: parent cycle 0 -> 1 -> 0", _cycle(b), MAP_ERROR, "parent cycle"),
        Case(f"{p}: bone 1 is its own parent (a second root)", b.set("bone 1 parent", 1), VALID,
             "Urho3D: a self-parent is a root"),
        Case(f"{p}: singular offset matrix", b.set("bone 1 offset", *([0.0] * 12)), MAP_ERROR, "singular"),
        Case(f"{p}: collision radius -0.0 writes back", b.set("bone 0 radius", -0.0), VALID, "signed zero"),
        Case("UMD3: morph default weight -0.0 writes back", build("UMD3").set("morph default weight", -0.0), VALID,
             "signed zero"),
        Case(f"{p}: zero bones, skinned vertices", _no_bones(), ANY, "weights without a skeleton"),
        Case(f"{p}: zero scale bone", b.set("bone 1 scale", 0, 0, 0), ANY, "degenerate rest pose"),
    ]
    return out


def _cycle(b: Layout) -> bytes:
    data = bytearray(b.set("bone 0 parent", 1))
    data[b.at["bone 1 parent"]:b.at["bone 1 parent"] + 4] = (0).to_bytes(4, "little")
    return bytes(data)


def _no_bones() -> bytes:
    b = build("UMD2")
    head = b.bytes()[:b.at["bone count"]]
    return head + (0).to_bytes(4, "little") + b.bytes()[b.at["bbox min"]:]


def seeds() -> list[tuple[str, bytes]]:
    """Code-made seeds of the three magics (the testdata has no UMD3 and no morphs)."""
    return [(f"generated {m}", build(m).bytes()) for m in ("UMD2", "UMDL", "UMD3")]


# Seeds above the fuzzing size cap are shrunk with the codec itself (fewer vertices, same structure).
def shrink(data: bytes, keep: int = 48) -> bytes:
    """The same model with at most `keep` vertices per buffer (indices folded into range)."""
    from skinbridge.io_urhox.model import umd2

    m = umd2.read(data)
    for vb in m.vertex_buffers:
        vb.vertices = vb.vertices[:keep]
        vb.morph_range_start, vb.morph_range_count = 0, min(vb.morph_range_count, len(vb.vertices))
    for ib in m.index_buffers:
        ib.indices = ib.indices[:3 * keep] % keep
    for g in m.geometries:
        for lod in g.lods:
            lod.index_start, lod.index_count = 0, min(lod.index_count, 3 * keep) // 3 * 3
    for morph in m.morphs:
        for buf in morph.buffers:
            buf.vertices = buf.vertices[buf.vertices["index"] < keep]
    return umd2.write(m)
