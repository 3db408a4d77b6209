"""The bone order SKIN indices point into (docs/nwn2.md §3.2, nw2fbx's filtering).

A SKIN vertex's u8 bone indices do not index the GR2 skeleton directly but a filtered list of it: attachment
bones (`ap_*`) and face bones (`f_*`) are dropped and `Ribcage` moves to the end. A mesh whose material has
the cutscene-head flag (0x10) reads an index below the face bone count as a face bone (`f_*`, in skeleton order)
and any other index in the list above (nw2fbx's clusters; the sample head weights its scalp to `Head` at index
45 and its lips to face bones 7–15). COLS spheres index the unfiltered skeleton.
"""
from __future__ import annotations

from typing import Sequence

HEAD_FLAG = 0x10


def skin_bone_order(names: Sequence[str], head: bool = False) -> list[int]:
    """Indices into `names` (the skeleton's bones in order), listed in the order SKIN bone indices use."""
    kept = [i for i, n in enumerate(names) if not n.startswith(("ap_", "f_"))]
    ribcage = [i for i in kept if names[i] == "Ribcage"]
    body = [i for i in kept if names[i] != "Ribcage"] + ribcage
    if head:
        face = [i for i, n in enumerate(names) if n.startswith("f_")]
        return face + body[len(face):]
    return body


def skin_bone_names(names: Sequence[str], head: bool = False) -> list[str]:
    return [names[i] for i in skin_bone_order(names, head)]


def uses_head_bones(material_flags: int) -> bool:
    return bool(material_flags & HEAD_FLAG)
