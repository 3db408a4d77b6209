"""Bone names a PMX and its VMDs share (no bpy).

A VMD key names its bone in 15 cp932 bytes (docs/mmd.md §3.2), a PMX in any length. MMD matches a key to
a bone by those 15 bytes, so a long name cut differently on the two sides, or two names that share their
first 15 bytes, lose keys. A model written together with its motions therefore gets, for each bone name that
does not fit, one short unique name used in both files; the full name stays as the bone's English name.
"""
from __future__ import annotations

import re

from ..model import pmx
from . import vmd


def _cut(text: str, size: int) -> str:
    """The longest prefix of `text` that fits `size` cp932 bytes (whole characters)."""
    out = ""
    for ch in text:
        if len((out + ch).encode("cp932", "replace")) > size:
            break
        out += ch
    return out


def short_names(names: list[str], taken: set[str] = frozenset(), size: int = vmd.NAME_SIZE) -> dict[str, str]:
    """Full name → short name for every name of `names` that `vmd.name_problem` finds too long: the longest
    prefix that fits of the name without its namespace (the text after the last ':' or '|'), or, where that is
    already used (by `taken`, by a name that fits or by an earlier short name), a shorter prefix with `~2`,
    `~3`, ... Names cp932 cannot encode are left to `name_problem`'s warning (they fit once MMD's replacement
    is applied)."""
    used = set(taken) | {n for n in names if vmd.name_problem(n, size) is None}
    out: dict[str, str] = {}
    for name in names:
        if name in out:
            continue
        try:
            if len(name.encode("cp932")) <= size:
                continue
        except UnicodeEncodeError:
            continue
        stem = re.split(r"[:|]", name)[-1] or name  # a namespace ("mixamorig:") says least
        short = _cut(stem, size)
        k = 2
        while short in used:
            suffix = f"~{k}"
            short = _cut(stem, size - len(suffix)) + suffix
            k += 1
        used.add(short)
        out[name] = short
    return out


def shorten_bone_names(model: pmx.PmxModel) -> tuple[dict[str, str], list[str]]:
    """Give each bone of `model` whose name is too long for a VMD (and whose English name is empty or the
    same name, i.e. a bone not named by a PMX file) its short name, keeping the full name as English name.
    Returns (full → short, one warning per name)."""
    long = [b.name for b in model.bones if b.name_e in ("", b.name)]
    renamed = short_names(long, {b.name for b in model.bones})
    warnings = []
    for b in model.bones:
        short = renamed.get(b.name) if b.name_e in ("", b.name) else None
        if short is None:
            continue
        warnings.append(f"bone name {b.name!r} is longer than the {vmd.NAME_SIZE} bytes a VMD name holds: PMX "
                        f"and VMD call it {short!r} (the full name is its English name)")
        b.name_e, b.name = b.name, short
    return renamed, warnings
