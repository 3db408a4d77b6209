"""VPD (MikuMikuDance pose) codec: bytes ⇄ `VpdPose`. Layout: docs/mmd.md, "VPD poses".

A Shift-JIS (cp932) text file:

    Vocaloid Pose Data file
    <blank line>
    <model>.osm;            // comments after the values
    <bone count>;
    Bone<i>{<bone name>
      x,y,z;                // translation, MMD units and axes
      qx,qy,qz,qw;          // rotation quaternion
    }
    Morph<i>{<morph name>   // newer files (MikuMikuMoving) also hold morph weights
      weight;
    }

Nothing is interpreted here (MMD ⇄ Blender conversions belong to the mapping). Reading keeps the file's bytes
and where each value sits in them (`VpdPose.source`, `VpdPose.slots`), so writing a pose read unchanged gives
back the same bytes, whatever its number formatting, comments and line endings; a value changed is written as
MMD writes it (`%f`, six decimals), and a pose whose bones or morphs were added or removed is written whole in
MMD's layout (CRLF line endings, MMD's comments).
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from ...core.errors import ExportError, FormatError

SIGNATURE = b"Vocaloid Pose Data file"
ENCODING = "cp932"
MAX_BYTES = 64 << 20   # a pose of every bone of a big model is well under a megabyte
MAX_ITEMS = 1 << 16    # bones + morphs

_NUM = rb"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?"
_SPACE = rb"[ \t]*"
_TAIL = rb"[ \t]*(?://[^\r\n]*)?"  # spaces and a comment up to the end of the line
_BLANK = re.compile(_TAIL + rb"$")
_MODEL = re.compile(_SPACE + rb"([^;\r\n]*?)" + _SPACE + rb";" + _TAIL + rb"$")
_COUNT = re.compile(_SPACE + rb"(\d+)" + _SPACE + rb";" + _TAIL + rb"$")
_OPEN = re.compile(rb"(Bone|Morph)(\d+)\{([^\r\n]*)$")
_CLOSE = re.compile(_SPACE + rb"\}" + _TAIL + rb"$")


def _values(n: int) -> re.Pattern:
    nums = rb"(" + _NUM + rb")" + (_SPACE + rb"," + _SPACE + rb"(" + _NUM + rb")") * (n - 1)
    return re.compile(_SPACE + nums + _SPACE + rb";" + _TAIL + rb"$")


_VALUES = {n: _values(n) for n in (1, 3, 4)}
_FIELDS = {1: "morph weight", 3: "bone translation", 4: "bone rotation"}


@dataclass
class VpdBone:
    name: str
    translation: tuple[float, float, float] = (0.0, 0.0, 0.0)
    rotation: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 1.0)  # x, y, z, w


@dataclass
class VpdMorph:
    name: str
    weight: float = 0.0


@dataclass
class VpdPose:
    model_name: str = ""  # the text before the first ';' ("<model>.osm")
    bones: list[VpdBone] = field(default_factory=list)
    morphs: list[VpdMorph] = field(default_factory=list)
    # the bytes read and where each value sits in them: ((start, end), key) with key ("model",), ("count",),
    # ("bone", i), ("morph", j), ("t", i, c), ("r", i, c), ("w", j); None for a pose made in code
    source: bytes | None = None
    slots: tuple[tuple[tuple[int, int], tuple], ...] = ()


def _decode(raw: bytes, line: int, offset: int, what: str) -> str:
    try:
        return raw.decode(ENCODING)
    except UnicodeDecodeError as e:
        raise FormatError(f"line {line}: {what} is not Shift-JIS (byte 0x{raw[e.start]:02x})",
                          offset + e.start, what) from None


def _number(raw: bytes, line: int, offset: int, what: str) -> float:
    value = float(raw)
    if value != value or abs(value) == float("inf"):
        raise FormatError(f"line {line}: {what} {raw.decode('ascii')} is not a finite number", offset, what)
    return value


def read(data: bytes | bytearray | memoryview) -> VpdPose:
    data = bytes(data)
    if len(data) > MAX_BYTES:
        raise FormatError(f"file is {len(data)} bytes, over the {MAX_BYTES}-byte budget of a pose", 0, "file size")
    if not data.startswith(SIGNATURE):
        raise FormatError(f"file does not start with {SIGNATURE.decode()!r}", 0, "signature")
    pose = VpdPose(source=data)
    slots: list = []
    lines = data.splitlines(keepends=True)
    if _BLANK.match(lines[0].rstrip(b"\r\n"), len(SIGNATURE)) is None:
        raise FormatError("line 1: text after the signature", len(SIGNATURE), "signature")
    state = "model"  # model, count, item, then per block: open values close
    count = count_at = 0
    block = None  # (kind, index, line number) of the open block
    offset = len(lines[0])
    for number, full in enumerate(lines[1:], start=2):
        text = full.rstrip(b"\r\n")
        at = offset
        offset += len(full)
        if state != "values" and _BLANK.match(text):
            continue
        if state == "model":
            m = _MODEL.match(text)
            if m is None:
                raise FormatError(f"line {number}: expected '<model>.osm;'", at, "model name")
            pose.model_name = _decode(m.group(1), number, at + m.start(1), "model name")
            slots.append(((at + m.start(1), at + m.end(1)), ("model",)))
            state = "count"
        elif state == "count":
            m = _COUNT.match(text)
            if m is None:
                raise FormatError(f"line {number}: expected the bone count '<n>;'", at, "bone count")
            count, count_at = int(m.group(1)), at
            if count > MAX_ITEMS:
                raise FormatError(f"line {number}: {count} bones, over the budget of {MAX_ITEMS}", at, "bone count")
            slots.append(((at + m.start(1), at + m.end(1)), ("count",)))
            state = "item"
        elif state == "item":
            m = _OPEN.match(text)
            if m is None:
                raise FormatError(f"line {number}: expected 'Bone<i>{{<name>' or 'Morph<i>{{<name>'", at, "block")
            if len(pose.bones) + len(pose.morphs) >= MAX_ITEMS:
                raise FormatError(f"line {number}: over {MAX_ITEMS} bones and morphs", at, "block")
            name = _decode(m.group(3), number, at + m.start(3), f"{m.group(1).decode().lower()} name")
            if m.group(1) == b"Bone":
                block = ["bone", len(pose.bones), []]
                pose.bones.append(VpdBone(name))
            else:
                block = ["morph", len(pose.morphs), []]
                pose.morphs.append(VpdMorph(name))
            slots.append(((at + m.start(3), at + m.end(3)), (block[0], block[1])))
            state = "values"
        elif state == "values":
            kind, index, got = block
            want = (3, 4) if kind == "bone" else (1,)
            if len(got) == len(want):
                if _BLANK.match(text):
                    continue
                if _CLOSE.match(text) is None:
                    raise FormatError(f"line {number}: expected '}}' closing the {kind} block", at, f"{kind} block")
                if kind == "bone":
                    pose.bones[index].translation, pose.bones[index].rotation = got
                else:
                    pose.morphs[index].weight = got[0][0]
                state = "item"
                continue
            n = want[len(got)]
            what = _FIELDS[n]
            m = _VALUES[n].match(text)
            if m is None:
                raise FormatError(f"line {number}: expected {n} number{'s' if n > 1 else ''} and ';' ({what})",
                                  at, what)
            values = []
            for c in range(n):
                values.append(_number(m.group(c + 1), number, at + m.start(c + 1), what))
                key = ("w", index) if n == 1 else ("t" if n == 3 else "r", index, c)
                slots.append(((at + m.start(c + 1), at + m.end(c + 1)), key))
            got.append(tuple(values))
    if state in ("model", "count"):
        raise FormatError(f"file ends before the {'model name' if state == 'model' else 'bone count'}",
                          len(data), state)
    if state == "values":
        raise FormatError(f"file ends inside the {block[0]} block {block[1]}", len(data), f"{block[0]} block")
    if count != len(pose.bones):
        raise FormatError(f"the bone count says {count}, the file holds {len(pose.bones)} bones", count_at,
                          "bone count")
    pose.slots = tuple(slots)
    return pose


def _f(value: float) -> str:
    return "%f" % value


def _current(pose: VpdPose, key: tuple):
    kind = key[0]
    if kind == "model":
        return pose.model_name
    if kind == "count":
        return len(pose.bones)
    if kind == "bone":
        return pose.bones[key[1]].name
    if kind == "morph":
        return pose.morphs[key[1]].name
    if kind == "t":
        return float(pose.bones[key[1]].translation[key[2]])
    if kind == "r":
        return float(pose.bones[key[1]].rotation[key[2]])
    return float(pose.morphs[key[1]].weight)


def _encode(text: str, what: str) -> bytes:
    if any(c in text for c in ("\r\n;" if what == "model name" else "\r\n")):
        raise ExportError(f"{what} {text!r} holds a character a VPD line cannot hold")
    try:
        return text.encode(ENCODING)
    except UnicodeEncodeError as e:
        raise ExportError(f"{what} {text!r}: {text[e.start]!r} has no Shift-JIS code") from None


def _same_layout(pose: VpdPose) -> bool:
    if pose.source is None:
        return False
    bones = sum(1 for _, key in pose.slots if key[0] == "bone")
    morphs = sum(1 for _, key in pose.slots if key[0] == "morph")
    return (bones, morphs) == (len(pose.bones), len(pose.morphs))


def write(pose: VpdPose) -> bytes:
    for b in pose.bones:
        if not all(math.isfinite(v) for v in (*b.translation, *b.rotation)):
            raise ExportError(f"bone {b.name}: a translation or rotation that is not a finite number")
    for m in pose.morphs:
        if not math.isfinite(m.weight):
            raise ExportError(f"morph {m.name}: a weight that is not a finite number")
    if _same_layout(pose):
        return _write_over(pose)
    if len(pose.bones) + len(pose.morphs) > MAX_ITEMS:
        raise ExportError(f"{len(pose.bones)} bones and {len(pose.morphs)} morphs: over the {MAX_ITEMS} a pose holds")
    out = [SIGNATURE + b"\r\n\r\n", _encode(pose.model_name, "model name"),
           ";\t\t// 親ファイル名\r\n".encode(ENCODING), b"%d;\t\t\t\t// " % len(pose.bones),
           "総ポーズボーン数\r\n\r\n".encode(ENCODING)]
    for i, b in enumerate(pose.bones):
        x, y, z = (_f(v) for v in b.translation)
        qx, qy, qz, qw = (_f(v) for v in b.rotation)
        out += [b"Bone%d{" % i, _encode(b.name, "bone name"),
                f"\r\n  {x},{y},{z};\t\t\t\t// trans x,y,z\r\n"
                f"  {qx},{qy},{qz},{qw};\t\t// Quaternion x,y,z,w\r\n}}\r\n\r\n".encode("ascii")]
    for i, m in enumerate(pose.morphs):
        out += [b"Morph%d{" % i, _encode(m.name, "morph name"),
                f"\r\n  {_f(m.weight)};\t\t\t\t// weight\r\n}}\r\n\r\n".encode("ascii")]
    return b"".join(out)


def _write_over(pose: VpdPose) -> bytes:
    """The bytes read, each value that changed written in its place."""
    src = pose.source
    out, last = [], 0
    for (start, end), key in pose.slots:
        raw = src[start:end]
        value = _current(pose, key)
        if key[0] in ("model", "bone", "morph"):
            if raw.decode(ENCODING) != value:
                raw = _encode(value, {"model": "model name", "bone": "bone name", "morph": "morph name"}[key[0]])
        elif key[0] == "count":
            pass  # the layout is the same: so is the count
        elif float(raw) != value:
            raw = _f(value).encode("ascii")
        out += [src[last:start], raw]
        last = end
    out.append(src[last:])
    return b"".join(out)
