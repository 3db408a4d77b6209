"""Hostile PMX 2.0 / 2.1 models, built field by field (layout: docs/mmd.md §2).

The base model has every section and every optional bone part: three vertices (BDEF1, BDEF2, SDEF) with one
additional UV, a texture, a material, four bones (tail bone, tail offset, IK with a limited link, append +
fixed axis + local axes + external parent), vertex / bone / group / material / UV morphs, a display frame,
a rigid body, a joint and (2.1) a soft body with an anchor and a pin. Index sizes are mixed (vertex 2,
bone 2, the others 1) so that both widths are attacked.
"""
from __future__ import annotations

from .hostile_cases import ANY, REJECT, SEMANTIC, VALID, WARN, Case, Layout, count_attacks, poison

SIZES = {"vertex": 2, "texture": 1, "material": 1, "bone": 2, "morph": 1, "rigid": 1}
_IDX = {1: "b", 2: "h", 4: "i"}
_VIDX = {1: "B", 2: "H", 4: "i"}


class _Pmx(Layout):
    def __init__(self, encoding: int):
        super().__init__()
        self.codec = "utf-16-le" if encoding == 0 else "utf-8"
        self.lengths: list[str] = []

    def text(self, label: str, s: str) -> None:
        raw = s.encode(self.codec, "surrogatepass")
        self.put(f"{label} length", "I", len(raw))
        self.lengths.append(f"{label} length")
        self.raw(label, raw)

    def idx(self, label: str, kind: str, value: int) -> None:
        fmt = _VIDX[SIZES[kind]] if kind == "vertex" else _IDX[SIZES[kind]]
        self.put(label, fmt, value)

    def field(self, label: str, fmt: str, *values) -> "_Pmx":
        """`fmt` "text" is a text, an index kind of SIZES ("bone", "vertex"...) an index of that size."""
        if fmt == "text":
            self.text(label, *values)
        elif fmt in SIZES:
            self.idx(label, fmt, *values)
        else:
            self.put(label, fmt, *values)
        return self


def build(version: float = 2.0, encoding: int = 0) -> _Pmx:
    b = _Pmx(encoding)
    b.raw("magic", b"PMX ")
    b.put("version", "I", 0x40066666 if version > 2.05 else 0x40000000)
    b.put("globals count", "B", 8)
    b.put("encoding", "B", encoding)
    b.put("additional UV count", "B", 1)
    for kind in ("vertex", "texture", "material", "bone", "morph", "rigid"):
        b.put(f"{kind} index size", "B", SIZES[kind])
    for label in ("model name", "model name (English)", "comment", "comment (English)"):
        b.text(label, label.split()[0] + "\u30e2")
    b.put("vertex count", "i", 3)
    for i, deform in enumerate((0, 1, 3)):
        v = f"vertex {i}"
        b.put(f"{v} position", "3f", float(i), 0, 0)
        b.put(f"{v} normal", "3f", 0, 0, 1)
        b.put(f"{v} uv", "2f", 0.5, 0.5)
        b.put(f"{v} add uv", "4f", 0, 0, 0, 0)
        b.put(f"{v} deform type", "B", deform)
        b.idx(f"{v} bone 0", "bone", 0)
        if deform in (1, 3):
            b.idx(f"{v} bone 1", "bone", 1)
            b.put(f"{v} weight", "f", 0.5)
        if deform == 3:
            b.put(f"{v} sdef c", "3f", 0, 0, 0)
            b.put(f"{v} sdef r0", "3f", 0, 0, 0)
            b.put(f"{v} sdef r1", "3f", 0, 0, 0)
        b.put(f"{v} edge scale", "f", 1)
    b.put("index count", "i", 3)
    for k in range(3):
        b.idx(f"index {k}", "vertex", k)
    b.put("texture count", "i", 1)
    b.text("texture 0", "tex/a.png")
    b.put("material count", "i", 1)
    b.text("material 0 name", "skin")
    b.text("material 0 name (English)", "skin")
    b.put("material 0 diffuse", "4f", 1, 1, 1, 1)
    b.put("material 0 specular", "3f", 0, 0, 0)
    b.put("material 0 specular power", "f", 5)
    b.put("material 0 ambient", "3f", 0.5, 0.5, 0.5)
    b.put("material 0 draw flags", "B", 0)
    b.put("material 0 edge color", "4f", 0, 0, 0, 1)
    b.put("material 0 edge size", "f", 1)
    b.idx("material 0 texture", "texture", 0)
    b.idx("material 0 sphere texture", "texture", -1)
    b.put("material 0 sphere mode", "B", 0)
    b.put("material 0 shared toon", "B", 1)
    b.put("material 0 toon", "B", 0)
    b.text("material 0 memo", "")
    b.put("material 0 index count", "i", 3)
    bones = [("center", -1, 0x001 | 0x01E), ("leg", 0, 0x01A), ("legIK", 0, 0x03E),
             ("twist", 0, 0x01A | 0x100 | 0x400 | 0x800 | 0x2000)]
    b.put("bone count", "i", len(bones))
    for i, (name, parent, flags) in enumerate(bones):
        p = f"bone {i}"
        b.text(f"{p} name", name)
        b.text(f"{p} name (English)", name)
        b.put(f"{p} position", "3f", 0, float(i), 0)
        b.idx(f"{p} parent", "bone", parent)
        b.put(f"{p} layer", "i", 0)
        b.put(f"{p} flags", "H", flags)
        if flags & 0x1:
            b.idx(f"{p} tail bone", "bone", 1)
        else:
            b.put(f"{p} tail offset", "3f", 0, 0.5, 0)
        if flags & 0x300:
            b.idx(f"{p} append parent", "bone", 1)
            b.put(f"{p} append ratio", "f", 0.5)
        if flags & 0x400:
            b.put(f"{p} fixed axis", "3f", 1, 0, 0)
        if flags & 0x800:
            b.put(f"{p} local x", "3f", 1, 0, 0)
            b.put(f"{p} local z", "3f", 0, 0, 1)
        if flags & 0x2000:
            b.put(f"{p} external key", "i", 0)
        if flags & 0x20:
            b.idx(f"{p} IK target", "bone", 1)
            b.put(f"{p} IK loop", "i", 40)
            b.put(f"{p} IK limit angle", "f", 2.0)
            b.put(f"{p} IK link count", "i", 1)
            b.idx(f"{p} IK link 0 bone", "bone", 1)
            b.put(f"{p} IK link 0 has limit", "B", 1)
            b.put(f"{p} IK link 0 lower", "3f", -3.14, 0, 0)
            b.put(f"{p} IK link 0 upper", "3f", -0.01, 0, 0)
    morphs = [("vertex", 1), ("bone", 2), ("group", 0), ("material", 8), ("uv", 3)]
    b.put("morph count", "i", len(morphs))
    for i, (name, kind) in enumerate(morphs):
        p = f"morph {i}"
        b.text(f"{p} name", name)
        b.text(f"{p} name (English)", name)
        b.put(f"{p} panel", "B", 4)
        b.put(f"{p} type", "B", kind)
        b.put(f"{p} offset count", "i", 1)
        if kind == 1:
            b.idx(f"{p} vertex", "vertex", 2)
            b.put(f"{p} offset", "3f", 0, 0.1, 0)
        elif kind == 2:
            b.idx(f"{p} bone", "bone", 1)
            b.put(f"{p} translation", "3f", 0, 0, 0)
            b.put(f"{p} rotation", "4f", 0, 0, 0, 1)
        elif kind == 0:
            b.idx(f"{p} morph", "morph", 0)
            b.put(f"{p} ratio", "f", 1)
        elif kind == 8:
            b.idx(f"{p} material", "material", 0)
            b.put(f"{p} operation", "B", 0)
            b.put(f"{p} values", "28f", *([1.0] * 28))
        else:
            b.idx(f"{p} vertex", "vertex", 0)
            b.put(f"{p} offset", "4f", 0.1, 0, 0, 0)
    b.put("display frame count", "i", 1)
    b.fields("display frame 0", ("name", "text", "Root"), ("name (English)", "text", "Root"), ("special", "B", 1),
             ("element count", "i", 2), ("element 0 type", "B", 0), ("element 0 index", "bone", 0),
             ("element 1 type", "B", 1), ("element 1 index", "morph", 0))
    b.put("rigid body count", "i", 1)
    b.fields("rigid body 0", ("name", "text", "body"), ("name (English)", "text", "body"), ("bone", "bone", 0),
             ("group", "B", 0), ("mask", "H", 0xFFFF), ("shape", "B", 0), ("size", "3f", 1, 1, 1),
             ("position", "3f", 0, 0, 0), ("rotation", "3f", 0, 0, 0), ("mass", "f", 1),
             ("damping etc", "4f", 0.5, 0.5, 0, 0.5), ("mode", "B", 0))
    b.put("joint count", "i", 1)
    b.fields("joint 0", ("name", "text", "joint"), ("name (English)", "text", "joint"), ("kind", "B", 0),
             ("rigid a", "rigid", 0), ("rigid b", "rigid", 0), ("position", "3f", 0, 0, 0),
             ("rotation", "3f", 0, 0, 0), ("translation limits", "6f", *[0] * 6),
             ("rotation limits", "6f", *[0] * 6), ("springs", "6f", *[0] * 6))
    if version > 2.05:
        b.put("soft body count", "i", 1)
        b.fields("soft body 0", ("name", "text", "cloth"), ("name (English)", "text", "cloth"), ("shape", "B", 0),
                 ("material", "material", 0), ("group", "B", 0), ("mask", "H", 0), ("flags", "B", 1),
                 ("b-link distance", "i", 2), ("cluster count", "i", 0), ("total mass", "f", 1),
                 ("margin", "f", 0.05), ("aero model", "i", 0), ("config", "18f", *[0.1] * 18),
                 ("iterations", "4i", 1, 1, 1, 1), ("stiffness", "3f", 1, 1, 1), ("anchor count", "i", 1),
                 ("anchor 0 rigid body", "rigid", 0), ("anchor 0 vertex", "vertex", 1),
                 ("anchor 0 near mode", "B", 0), ("pin count", "i", 1), ("pin 0", "vertex", 2))
    b.at["end"] = len(b.buf)
    return b


def _counts(b: _Pmx) -> list[str]:
    """Counts of records that follow (not the material's face index count or the soft body's cluster count,
    which are values)."""
    return [label for label in b.at if label.endswith(" count") and b.fmt.get(label) == "i"
            and not label.endswith(("index count", "cluster count"))]


def _nan(b: _Pmx, prefix: str, labels: dict[str, int]) -> list[Case]:
    out = []
    for n, (label, k) in enumerate(labels.items()):
        for kind, data in poison(b.buf, b.at[label] + 4 * k, n):
            out.append(Case(f"{prefix}: {label}[{k}] = {kind}", data, SEMANTIC, f"non-finite {label}"))
    return out


def cases() -> list[Case]:
    out: list[Case] = []
    variants = {"PMX 2.0 UTF-16": build(2.0, 0), "PMX 2.0 UTF-8": build(2.0, 1), "PMX 2.1 UTF-8": build(2.1, 1)}
    for p, b in variants.items():
        out.append(Case(f"{p}: base", b.bytes(), VALID, "base"))
        out += count_attacks(b, _counts(b) + b.lengths[:3] + [x for x in b.lengths if x.startswith("bone 3")], p)
        for label, at in b.at.items():
            if label not in ("magic", "end"):
                out.append(Case(f"{p}: cut before {label}", b.bytes()[:at], REJECT, "truncated"))
        out.append(Case(f"{p}: trailing bytes", b.bytes() + b"\x07", WARN, "bytes after the last section"))
    b = variants["PMX 2.0 UTF-16"]
    p = "PMX 2.0"
    out += _nan(b, p, {"vertex 0 position": 1, "vertex 1 normal": 2, "vertex 2 uv": 0, "vertex 1 weight": 0,
                       "vertex 2 sdef r0": 0, "bone 1 position": 0, "bone 2 IK limit angle": 0,
                       "bone 2 IK link 0 lower": 0, "bone 3 append ratio": 0, "bone 3 fixed axis": 0,
                       "morph 0 offset": 1, "morph 2 ratio": 0, "material 0 diffuse": 3,
                       "rigid body 0 mass": 0, "joint 0 rotation limits": 1})
    text_at = b.at["model name length"]
    out += [
        # layout-selecting values out of range
        Case(f"{p}: magic 'Pmx ' (PMX 1.0)", b.set("magic", b"Pmx ", fmt="4s"), REJECT, "old magic"),
        Case(f"{p}: version 3.0", b.set("version", 3.0, fmt="f"), REJECT, "version"),
        Case(f"{p}: version NaN", b.set("version", 0x7FC00000), REJECT, "version"),
        Case(f"{p}: globals count 7", b.set("globals count", 7), REJECT, "globals"),
        Case(f"{p}: globals count 255", b.set("globals count", 255), ANY, "globals beyond the 8"),
        Case(f"{p}: encoding 2", b.set("encoding", 2), REJECT, "encoding"),
        Case(f"{p}: additional UV count 5", b.set("additional UV count", 5), REJECT, "add UV"),
        *[Case(f"{p}: {k} index size 3", b.set(f"{k} index size", 3), REJECT, "index size") for k in SIZES],
        *[Case(f"{p}: {k} index size 0", b.set(f"{k} index size", 0), REJECT, "index size") for k in SIZES],
        Case(f"{p}: deform type 5", b.set("vertex 1 deform type", 5), REJECT, "deform type"),
        Case(f"{p}: deform type 255", b.set("vertex 0 deform type", 255), REJECT, "deform type"),
        Case(f"{p}: shared toon flag 2", b.set("material 0 shared toon", 2), REJECT, "toon flag"),
        Case(f"{p}: IK limit flag 2", b.set("bone 2 IK link 0 has limit", 2), REJECT, "limit flag"),
        Case(f"{p}: morph type 11", b.set("morph 0 type", 11), REJECT, "morph type"),
        Case(f"{p}: display element type 2", b.set("display frame 0 element 0 type", 2), REJECT, "element type"),
        # strings
        Case(f"{p}: odd UTF-16 byte length", b.splice("model name length", 4, (3).to_bytes(4, "little")),
             REJECT, "half a UTF-16 unit"),
        Case(f"{p}: lone UTF-16 surrogate", b.set("model name", b"\x00\xd8", fmt="2s"), ANY, "unpaired surrogate"),
        Case(f"{p}: text longer than the file", b.set("comment length", len(b.buf)), REJECT, "string > file"),
        Case(f"{p}: text at the very end", b.bytes()[:text_at] + b"\x10\0\0\0abc", REJECT, "string > file"),
        # indices out of range, parents: kept by the codec, listed by the check
        Case(f"{p}: vertex bone index 99", b.set("vertex 0 bone 0", 99), SEMANTIC, "bone index"),
        Case(f"{p}: vertex bone index -5", b.set("vertex 1 bone 1", -5), SEMANTIC, "bone index"),
        Case(f"{p}: face index -> vertex 9", b.set("index 2", 9), SEMANTIC, "vertex index"),
        Case(f"{p}: face index -> vertex 65535", b.set("index 1", 0xFFFF), SEMANTIC, "vertex index"),
        Case(f"{p}: material texture 5 of 1", b.set("material 0 texture", 5), SEMANTIC, "texture index"),
        Case(f"{p}: material index count 99", b.set("material 0 index count", 99), SEMANTIC, "index range"),
        Case(f"{p}: material index count -3", b.set("material 0 index count", -3), SEMANTIC, "negative count"),
        Case(f"{p}: shared toon number 200", b.set("material 0 toon", 200), SEMANTIC, "toon number"),
        Case(f"{p}: bone parent 50 of 4", b.set("bone 1 parent", 50), SEMANTIC, "parent out of range"),
        Case(f"{p}: bone parent -7", b.set("bone 1 parent", -7), SEMANTIC, "negative parent"),
        Case(f"{p}: bone is its own parent", b.set("bone 1 parent", 1), SEMANTIC, "PMX has no self-parent root"),
        Case(f"{p}: parent cycle 0 -> 1 -> 0", _cycle(b), SEMANTIC, "parent cycle"),
        Case(f"{p}: tail bone 99", b.set("bone 0 tail bone", 99), SEMANTIC, "tail index"),
        Case(f"{p}: IK target 99", b.set("bone 2 IK target", 99), SEMANTIC, "IK target"),
        Case(f"{p}: IK link bone 99", b.set("bone 2 IK link 0 bone", 99), SEMANTIC, "IK link"),
        Case(f"{p}: IK limits reversed", b.set("bone 2 IK link 0 upper", -3.14, 0, 0), ANY, "lower > upper?"),
        Case(f"{p}: IK limits reversed (x)", _reversed_limits(b), SEMANTIC, "lower > upper"),
        Case(f"{p}: IK loop -1", b.set("bone 2 IK loop", -1), ANY, "negative loop"),
        Case(f"{p}: append parent 99", b.set("bone 3 append parent", 99), SEMANTIC, "append parent"),
        Case(f"{p}: append parent itself", b.set("bone 3 append parent", 3), ANY, "self append"),
        Case(f"{p}: morph vertex 99", b.set("morph 0 vertex", 99), SEMANTIC, "vertex index"),
        Case(f"{p}: bone morph bone 99", b.set("morph 1 bone", 99), SEMANTIC, "bone index"),
        Case(f"{p}: group morph -> morph 99", b.set("morph 2 morph", 99), SEMANTIC, "morph index"),
        Case(f"{p}: group morph -> itself", b.set("morph 2 morph", 2), SEMANTIC, "group cycle"),
        Case(f"{p}: material morph material 9", b.set("morph 3 material", 9), SEMANTIC, "material index"),
        Case(f"{p}: UV morph vertex 99", b.set("morph 4 vertex", 99), SEMANTIC, "vertex index"),
        Case(f"{p}: display element bone 99", b.set("display frame 0 element 0 index", 99), SEMANTIC, "index"),
        Case(f"{p}: display element morph 99", b.set("display frame 0 element 1 index", 99), SEMANTIC, "index"),
        Case(f"{p}: rigid body bone 99", b.set("rigid body 0 bone", 99), SEMANTIC, "bone index"),
        Case(f"{p}: joint rigid body 9", b.set("joint 0 rigid b", 9), SEMANTIC, "rigid body index"),
        Case(f"{p}: BDEF2 weight 2 (second weight -1)", b.set("vertex 1 weight", 2.0), ANY, "weight range"),
        Case(f"{p}: vertex morph with no offsets", b.set("morph 0 offset count", 0, fmt="i")[:b.at["morph 0 vertex"]]
             + b.bytes()[b.at["morph 1 name length"]:], VALID, "empty morph"),
    ]
    s = variants["PMX 2.1 UTF-8"]
    out += [
        Case("PMX 2.1: soft body material 9", s.set("soft body 0 material", 9), SEMANTIC, "material index"),
        Case("PMX 2.1: soft body anchor vertex 999", s.set("soft body 0 anchor 0 vertex", 999), SEMANTIC, "index"),
        Case("PMX 2.1: soft body pin vertex 999", s.set("soft body 0 pin 0", 999), SEMANTIC, "vertex index"),
        Case("PMX 2.1: soft body anchor rigid body 9", s.set("soft body 0 anchor 0 rigid body", 9), SEMANTIC,
             "rigid body index"),
        Case("PMX 2.1: QDEF vertex", _qdef(), ANY, "2.1 deform type"),
    ]
    return out


def _cycle(b: _Pmx) -> bytes:
    data = bytearray(b.set("bone 0 parent", 1))
    at = b.at["bone 1 parent"]
    data[at:at + 2] = (0).to_bytes(2, "little")
    return bytes(data)


def _reversed_limits(b: _Pmx) -> bytes:
    data = bytearray(b.set("bone 2 IK link 0 lower", 1.0, 0, 0))
    return bytes(data)


def _qdef() -> bytes:
    """A 2.1 file whose BDEF1 vertex becomes a QDEF one (4 bones, 4 weights: the record grows)."""
    b = build(2.1, 1)
    at = b.at["vertex 0 deform type"]
    qdef = bytes([4]) + (0).to_bytes(2, "little") * 4 + b"\0\0\x80\x3f" + b"\0" * 12
    return b.bytes()[:at] + qdef + b.bytes()[at + 1 + 2:]


def seeds() -> list[tuple[str, bytes]]:
    return [("generated PMX 2.0 UTF-16", build(2.0, 0).bytes()), ("generated PMX 2.1 UTF-8", build(2.1, 1).bytes())]


# Seeds above the fuzzing size cap are shrunk with the codec itself (fewer vertices, same structure).
def shrink(data: bytes, keep: int = 48) -> bytes:
    from skinbridge.io_pmx.model import pmx

    m = pmx.read(data)
    m.vertices = m.vertices[:keep]
    m.indices = (m.indices[:3 * keep] % keep).astype("<i4")
    for i, mat in enumerate(m.materials):
        mat.index_count = len(m.indices) if i == 0 else 0
    for morph in m.morphs:
        if "vertex" in (morph.offsets.dtype.names or ()):
            morph.offsets = morph.offsets[morph.offsets["vertex"] < keep]
    return pmx.write(m)
