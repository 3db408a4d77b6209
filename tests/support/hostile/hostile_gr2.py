"""Hostile GR2 files: small uncompressed files our writer makes (so the generic cuts and smashed words reach the
type tree, the curves and the animation fields rather than the Oodle1 stream), and animations whose curves or
duration an import cannot sample.

Fuzzing seeds that decompress: the real files of ../shared/testdata made small (`shrink`: a few bones and
tracks kept, written again by our writer and compressed again by our own Oodle1 encoder through
hostile_gr2_forge.py, so the decompressor is fuzzed on streams that decode), and the same small files with
stored sections (`seeds`), so the fuzzer mutates the decompressed bytes and most mutants read past the section
table. `stage` tells how far an input got (the fuzzer tallies it).
"""
from __future__ import annotations

import functools
import random
import struct
import zlib
from dataclasses import replace

import numpy as np
from . import hostile_gr2_forge as forge
from .hostile_cases import MAP_ERROR, REJECT, VALID, Case

from skinbridge.core import model as cm
from skinbridge.core.errors import FormatError
from skinbridge.io_mdb.gr2 import export as gr2_export, gr2, write as gr2_write

# the registry's write is `write.rewrite`: the typed data again, sections stored where the game's files compress
# them, so a file comes back with the same typed data, not the same bytes
BYTE_EXACT = False


def _animation(length: float = 1.0) -> cm.Animation:
    times = np.array([0.0, 0.5, 1.0])
    moving = cm.Track("Hip", times, np.array([[0, 0, 0.9], [0, 0.1, 0.92], [0, 0.2, 0.9]]), times,
                      np.array([[1.0, 0, 0, 0], [0.98, 0.2, 0, 0], [1.0, 0, 0, 0]]))
    still = cm.Track("Knee", np.array([0.0]), np.array([[0, 0, -0.4]]), np.array([0.0]),
                     np.array([[1.0, 0, 0, 0]]), times, np.array([[1.0, 1, 1], [1.2, 1.2, 1.2], [1.0, 1, 1]]))
    return cm.Animation("walk", length, [moving, still])


def _skeleton() -> cm.Skeleton:
    skel = cm.Skeleton("S")
    for name, parent, z in (("Hip", -1, 0.9), ("Knee", 0, 0.5), ("Foot", 1, 0.1)):
        bind = np.eye(4)
        bind[2, 3] = z
        skel.bones.append(cm.Bone(name, parent, bind, np.zeros(3), np.array([1.0, 0, 0, 0]), np.ones(3)))
    skel.set_rest_from_binds()
    return skel


def seeds() -> list[tuple[str, bytes]]:
    ours = [("ours: animation", gr2_export.animation_file(_animation(), "S")),
            ("ours: skeleton", gr2_export.skeleton_file(_skeleton()))]
    return ours + [(f"testdata/gr2/{path.name} (small, stored)", shrink(path.read_bytes(), stored=True))
                   for path in sorted((forge.TESTDATA / "gr2").glob("*.GR2"))]


@functools.lru_cache(maxsize=None)
def shrink(data: bytes, bones: int = 12, tracks: int = 4, stored: bool = False) -> bytes:
    """A real file made small: its first `bones` bones and, per track group, `tracks` transform tracks and two
    vector tracks, written again by our writer, its sections compressed again by our encoder when the file's
    were (unless `stored`)."""
    f = gr2.read(data)
    root = f.root
    for skel in root.get("Skeletons") or []:
        skel["Bones"] = skel["Bones"][:bones]
    for group in root.get("TrackGroups") or []:
        group["TransformTracks"] = group["TransformTracks"][:tracks]
        if group.get("VectorTracks"):
            group["VectorTracks"] = group["VectorTracks"][:2]
    out = gr2_write.rewrite(f)
    compressed = not stored and any(s.compression for s in f.sections)
    return forge.repack(out, compressed=True) if compressed else out


def mutate(data: bytes, max_size: int, seed: int, mutate_bytes) -> bytes:
    """The fuzzer's mutation of a GR2 input (`mutate_bytes(data, max_size)` is libFuzzer's own): mostly one
    section's decompressed bytes (or its relocation table) mutated and the file packed again, that section
    stored, with sizes, offsets and CRC-32 right, so the mutant reaches the typed data. A tenth of the time the
    file's own bytes are mutated (header, tables, Oodle1 streams); an input that does not read is mutated as
    bytes a third of the time, else a seed is mutated in its place (so unreadable mutants, which the coverage
    keeps for their error paths, do not crowd out the readable ones)."""
    rng = random.Random(seed)
    if rng.random() < 0.1:
        return mutate_bytes(data, max_size)
    read = _sections(data)
    if read is None:
        if rng.random() < 1 / 3:
            return mutate_bytes(data, max_size)
        data = rng.choice(_readable_seeds())
        read = _sections(data)
    f, parts = read[0], list(read[1])
    i = rng.choice([i for i, p in enumerate(parts) if p.data])
    p = parts[i]
    if len(p.relocations) and rng.random() < 0.2:
        table = mutate_bytes(p.relocations.tobytes(), 12 * len(p.relocations) + 48)
        table = table[:len(table) // 12 * 12]
        parts[i] = replace(p, relocations=np.frombuffer(table, gr2.RELOCATION).copy())
    else:
        room = max(max_size - len(data), 0) + len(p.data)
        parts[i] = replace(p, data=mutate_bytes(p.data, room), compressed=False, stored=None, stops=None)
    out = forge.pack(parts, f.root_type_ref, f.root_ref, f.tag)
    return out if len(out) <= max_size else mutate_bytes(data, max_size)


@functools.lru_cache(maxsize=256)
def _sections(data: bytes):
    """(file, sections) of a readable input with a section that holds data, else None; kept for the next
    mutations of the same input (the fuzzer mutates one input several times in a row)."""
    try:
        f, parts = forge.sections_of(data)
    except FormatError:
        return None
    return (f, tuple(parts)) if any(p.data for p in parts) else None


@functools.lru_cache(maxsize=1)
def _readable_seeds() -> tuple[bytes, ...]:
    real = sorted((forge.TESTDATA / "gr2").glob("*.GR2"))
    made = [data for _, data in seeds()] + [shrink(path.read_bytes()) for path in real]
    return tuple(data for data in made if _sections(data) is not None)


_TABLE_FIELDS = {"magic", "header", "version", "file_size", "section_count"}


def stage(outcome) -> str:
    """How far an input got: refused at the header or section table, in decompression, at the pointers or
    root references, or read (then mapped, or refused by the mapping)."""
    e = outcome.rejected
    if e is None:
        return "read and mapped" if outcome.map_error is None else "read, mapping refused"
    name = e.field or ""
    if name in _TABLE_FIELDS or (name.startswith("section[") and "." in name
                                 and not name.endswith((".relocations", ".marshallings"))):
        return "header or section table refused"
    if name in ("section data", "first16bit/first8bit"):
        return "decompression refused"
    return "pointers or root refused"


def _with_curve(change) -> bytes:
    """The seed animation written with one curve's fields changed by `change(fields)`."""
    f = gr2.read(gr2_export.animation_file(_animation(), "S"))
    change(f.root["TrackGroups"][0]["TransformTracks"][0]["PositionCurve"]["CurveData"])
    return gr2_write.rewrite(f)


def cases() -> list[Case]:
    def degree(fields):
        fields["CurveDataHeader_DaK32fC32f"]["Degree"] = 200

    def controls(fields):
        fields["Controls"] = fields["Controls"][:-1]

    return [
        Case("seed animation", seeds()[0][1], VALID, "our own file reads and maps"),
        Case("curve degree 200", _with_curve(degree), MAP_ERROR, "a B-spline degree above Granny's 6"),
        Case("controls not a multiple of the knots", _with_curve(controls), MAP_ERROR,
             "8 position controls for 3 knots"),
        Case("duration NaN", _duration(float("nan")), MAP_ERROR, "a Duration that is no time span"),
        Case("duration of a week", _duration(7 * 86400.0), MAP_ERROR, "more frames than an import samples"),
        Case("inline array of 2^31 - 1 empty items",
             forge.empty_loop(base=gr2_export.animation_file(_animation(), "S")), MAP_ERROR,
             "a loop of two billion turns over no bytes (issue 45 item 2)"),
        Case("sections sharing one stream", _shared_stream(), REJECT, "one stream decoded by two sections"),
    ]


def _shared_stream() -> bytes:
    """Our skeleton file compressed, with section 1 claiming section 0's stream as its own."""
    f, parts = forge.sections_of(forge.repack(gr2_export.skeleton_file(_skeleton()), compressed=True))
    parts[1] = forge.Part(b"", claims=len(parts[0].data), shares=0)
    return forge.pack(parts, f.root_type_ref, f.root_ref, f.tag)


def _duration(seconds: float) -> bytes:
    """The seed animation with its Duration (the float before TimeStep 1/240) set to `seconds`."""
    data = bytearray(gr2_export.animation_file(_animation(), "S"))
    at = data.index(struct.pack("<ff", 1.0, 1.0 / 240))  # Duration, then TimeStep
    data[at:at + 4] = struct.pack("<f", seconds)
    data[40:44] = struct.pack("<I", zlib.crc32(bytes(data[88:])))
    return bytes(data)
