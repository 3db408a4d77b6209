"""Granny 2 files as core Scenes (docs/nwn2.md §5.5): the registry's `load` of a `.gr2`, for `compare` and
for the Blender import that `render` uses.

A NWN2 GR2 is a skeleton or an animation. A skeleton file becomes a scene holding that skeleton, in the MDB's
metres and axes (`gr2_bind.core_skeleton`: the same bones an MDB bound to it gets), and no mesh; its animations
are `gr2_anim`'s (the Blender import puts them on the armature).
"""
from __future__ import annotations

import os

from ..core import model as cm
from ..core.errors import FormatError
from . import gr2, gr2_bind, gr2_skeleton


def to_scene(f: gr2.Gr2File, name: str) -> tuple[cm.Scene, list[str]]:
    """The file's first skeleton as a scene (a skeleton that cannot be built is refused, naming its bone)."""
    warnings = list(f.warnings)
    found = gr2_skeleton.skeletons(f)
    skeleton = None
    if found:
        first = found[0]
        problems = first.problems()
        if problems:
            i, field, message = problems[0]
            raise FormatError(f"skeleton {first.name} bone {i} ({first.bones[i].name}): {message}", None, field)
        skeleton = gr2_bind.core_skeleton(first)
    if len(found) > 1:
        warnings.append(f"{len(found)} skeletons ({', '.join(s.name for s in found)}): only {found[0].name} read")
    return cm.Scene(name, skeleton=skeleton), warnings


def load(path: str, data: bytes, with_animations: bool = True, motions=(), skeleton_path=None
         ) -> tuple[cm.Scene, list[str]]:
    """The registry's `load`: the skeleton of the file (none for an animation file)."""
    return to_scene(gr2.read(data), os.path.splitext(os.path.basename(path))[0] or "gr2")
