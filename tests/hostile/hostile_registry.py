"""The registry of codecs attacked by the hostile suite and the fuzzer (issue 12).

A format joins with one `_register(...)` call below: its read and write functions, the semantic step that
an import runs after the read (the mapping, or the format's `check`), its seed files and its hostile cases.
A codec whose module does not exist yet (another developer is writing it) is left out with the reason in
`MISSING`, and the suite reports it as skipped.

Seeds are the real files of ../shared/testdata (read in place, never copied into the repository) plus small
files made by code for what the testdata lacks; seeds above a codec's fuzzing size cap are shrunk with the
codec itself (fewer vertices, same structure) so that the fuzzer mutates every section of them.
"""
from __future__ import annotations

import importlib
import pathlib
from typing import Callable

from hostile_cases import Case, Codec

ROOT = pathlib.Path(__file__).resolve().parents[2]
TESTDATA = ROOT.parent / "shared" / "testdata"

CODECS: dict[str, Codec] = {}
MISSING: dict[str, str] = {}  # format -> why it is not registered


def _testdata(*patterns: str) -> list[tuple[str, bytes]]:
    out = []
    for pattern in patterns:
        for p in sorted(TESTDATA.glob(pattern)):
            out.append((f"testdata/{p.relative_to(TESTDATA)}", p.read_bytes()))
    return out


def _register(name: str, modules: list[str], build: Callable[..., Codec]) -> None:
    """Register `name` if every module imports (the codec exists), else note why it is missing."""
    loaded = []
    for m in modules:
        try:
            loaded.append(importlib.import_module(m))
        except ImportError as e:
            MISSING[name] = f"{m} not importable yet ({e})"
            return
    codec = build(*loaded)
    codec.modules = tuple(modules) + (("skinbridge.core.binary",) if codec.binary else ())
    CODECS[name] = codec


# -- UMD2 / UMDL / UMD3 models ---------------------------------------------------------------------------

def _umd2(umd2, convert) -> Codec:
    import hostile_umd2

    def semantic(model) -> list[str]:
        _, warnings = convert.to_scene(model, "hostile", "auto", all_lods=True)
        return warnings

    def shrink(data: bytes, keep: int = 48) -> bytes:
        """The same model with at most `keep` vertices per buffer (indices folded into range)."""
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

    def seeds() -> list[tuple[str, bytes]]:
        out = []
        for name, data in _testdata("urho3d/*.mdl"):
            out.append((name, data) if len(data) <= 8192 else (f"{name} (shrunk)", shrink(data)))
        return out + hostile_umd2.seeds()

    return Codec("umd2", umd2.read, umd2.write, semantic, seeds, hostile_umd2.cases, max_len=1 << 14)


_register("umd2", ["skinbridge.io_urhox.umd2", "skinbridge.io_urhox.convert"], _umd2)


# -- UANI / UAN2 animations --------------------------------------------------------------------------------

def _uani(uani, ani_convert) -> Codec:
    import hostile_uani

    def semantic(anim) -> list[str]:
        roots = {anim.tracks[0].name} if anim.tracks else set()
        _, warnings = ani_convert.to_core(anim, "hostile", "urho3d", roots)
        return warnings

    def seeds() -> list[tuple[str, bytes]]:
        return _testdata("urho3d/*.ani") + hostile_uani.seeds()

    return Codec("uani", uani.read, uani.write, semantic, seeds, hostile_uani.cases, max_len=1 << 13)


_register("uani", ["skinbridge.io_urhox.uani", "skinbridge.io_urhox.ani_convert"], _uani)


# -- trigger sidecars (XML / JSON text) ---------------------------------------------------------------------

def _triggers(triggers) -> Codec:
    import hostile_triggers

    return Codec("triggers", lambda data: triggers.read_triggers(bytes(data), 2.0), None, None,
                 hostile_triggers.seeds, hostile_triggers.cases, binary=False, record_warnings=lambda rec: [],
                 max_len=1 << 12)


_register("triggers", ["skinbridge.io_urhox.triggers"], _triggers)


# -- PMX models ----------------------------------------------------------------------------------------------

def _pmx(pmx, validate) -> Codec:
    import hostile_pmx

    def semantic(model) -> list[str]:
        return [str(f) for f in validate.validate(model, for_export=False)]

    def shrink(data: bytes, keep: int = 48) -> bytes:
        m = pmx.read(data)
        m.vertices = m.vertices[:keep]
        m.indices = (m.indices[:3 * keep] % keep).astype("<i4")
        for i, mat in enumerate(m.materials):
            mat.index_count = len(m.indices) if i == 0 else 0
        for morph in m.morphs:
            if "vertex" in (morph.offsets.dtype.names or ()):
                morph.offsets = morph.offsets[morph.offsets["vertex"] < keep]
        return pmx.write(m)

    def seeds() -> list[tuple[str, bytes]]:
        out = []
        for name, data in _testdata("pmx/*.pmx"):
            out.append((name, data) if len(data) <= 8192 else (f"{name} (shrunk)", shrink(data)))
        return out + hostile_pmx.seeds()

    return Codec("pmx", pmx.read, pmx.write, semantic, seeds, hostile_pmx.cases, max_len=1 << 16)


_register("pmx", ["skinbridge.io_pmx.pmx", "skinbridge.io_pmx.validate"], _pmx)


# -- VMD motions ---------------------------------------------------------------------------------------------

def _vmd(vmd) -> Codec:
    import hostile_vmd

    def seeds() -> list[tuple[str, bytes]]:
        return _testdata("pmx/*.vmd") + hostile_vmd.seeds()

    # No VMD mapping or check exists yet: the semantic step is the read and the byte-exact write back.
    return Codec("vmd", vmd.read, vmd.write, None, seeds, hostile_vmd.cases, max_len=1 << 16)


_register("vmd", ["skinbridge.io_pmx.vmd"], _vmd)


def get(name: str) -> Codec:
    if name not in CODECS:
        why = MISSING.get(name, f"unknown format; known: {', '.join(CODECS)}")
        raise KeyError(f"{name}: {why}")
    return CODECS[name]


__all__ = ["CODECS", "MISSING", "Case", "Codec", "get"]
