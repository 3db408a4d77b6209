"""A skinned MDB's GR2 skeleton (docs/nwn2.md §5.4): found by the name its SKIN packets give, as a core Skeleton
in the MDB's units and axes (`convert.core_skeleton`).

A SKIN packet names the skeleton inside a GR2 file, not the file (the four public Genasi skeletons
`P_H?F_skel83.GR2` all hold `P_HHF_skel`), so the lookup reads the `.gr2` files beside the MDB first, then those
of the folders the user lists (`--skeleton-path DIR`; in Blender the import operator's Skeleton Path followed by
the folders of the add-on's preferences), and takes the first, in name order, whose skeleton has that name
(compared without case, as the game's resource names are). A listed "folder" may be an archive (the game's
`Data/*.zip`, a `.hak`, `.erf` or `.mod` pack: docs/nwn2.md §5.8), searched through its `.gr2` members; an MDB
read from a pack (`heads.hak:head.mdb`) searches its own pack first, as a loose one its folder.

Every candidate is read through the guarded reader of inputs (`core.fileio.read_bytes`: regular files only, at
most `MAX_SEARCHED_BYTES`) and decoded under the GR2 reading budget; one that is refused (too large, a
compression bomb, a bad header) is passed over with a warning naming it and why, and the search goes on, so a
hostile `.gr2` beside an MDB never stops the MDB's import.

Measured on the sample head, the skeleton's world positions scaled by 1 / UnitsPerMeter with no axis change put
the lips' face bones within 1 cm of the vertices they weigh most (docs/nwn2.md §5.4 has the figures). This part
knows no MDB record: the MDB part gives the names its SKIN packets hold.
"""
from __future__ import annotations

import os
from typing import Iterable, Sequence

import numpy as np

from ...core import model as cm
from ...core.errors import FormatError
from ...core.fileio import read_bytes
from ..archive import archive
from . import MAGIC, convert, gr2, skeleton

GR2_EXTENSION = ".gr2"
# the Blender object property holding the name of the GR2 skeleton a skinned object is bound to: the MDB import
# sets it; the MDB export writes it into the SKIN packets, the GR2 export names its skeleton after it
SKELETON_PROP = "nwn2_skeleton"
# the largest .gr2 the search reads (public skeletons are 41 KB, the largest public GR2 80 KB): the files beside
# an MDB are not what the user opened, so a bigger one is passed over with a warning, never read
MAX_SEARCHED_BYTES = 64 << 20


def search_folders(mdb_path: str, skeleton_path: str | Sequence[str] | None) -> list[str]:
    """The MDB's own folder (the archive, when it was read from one: `pack.hak:head.mdb`), then the user's (an
    `os.pathsep`-separated string or a list; a folder or an archive), without repeats."""
    given = skeleton_path.split(os.pathsep) if isinstance(skeleton_path, str) else list(skeleton_path or ())
    inside = archive.member_of(str(mdb_path))
    own = os.path.abspath(inside[0]) if inside else os.path.dirname(os.path.abspath(mdb_path))
    folders = [own] + [os.path.abspath(f) for f in given if f]
    return list(dict.fromkeys(folders))


def _gr2_files(folder: str) -> list[str]:
    if archive.is_archive(folder) and os.path.isfile(folder):
        return [folder]  # the archive itself: its members are listed by `_candidates`
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return []  # a listed folder that is gone: the next one may still hold the skeleton
    return [os.path.join(folder, n) for n in names
            if n.lower().endswith(GR2_EXTENSION) and os.path.isfile(os.path.join(folder, n))]


def _candidates(folder: str, warnings: list[str] | None):
    """(label, read) of every `.gr2` a search folder holds: the files of a folder, or the members of an archive
    (`pack.hak:name.gr2`; docs/nwn2.md §5.8), each read when the search reaches it."""
    for path in _gr2_files(folder):
        if path != folder:
            yield path, lambda p=path: read_bytes(p, MAX_SEARCHED_BYTES)
            continue
        try:
            pack = archive.Archive(path)
        except (FormatError, OSError) as e:
            if warnings is not None:
                warnings.append(f"{path}: archive not read while looking for a skeleton ({e})")
            return
        for name in pack.names():
            if name.lower().endswith(GR2_EXTENSION):
                yield f"{path}:{name}", lambda n=name: pack.read(n)


def _skeletons_of(read) -> tuple[bytes, gr2.Gr2File | None, list[skeleton.Gr2Skeleton]]:
    data = read()
    if not data.startswith(MAGIC):
        return data, None, []  # a file named .gr2 that is no Granny file holds no skeleton
    f = gr2.read(data)
    return data, f, skeleton.skeletons(f)


def find_skeleton(name: str, folders: Iterable[str], warnings: list[str] | None = None,
                  source: dict | None = None) -> tuple[str, skeleton.Gr2Skeleton] | None:
    """(file, skeleton) of the first `.gr2` in `folders` holding a skeleton called `name`; None when none does.
    A file that does not read is passed over (with a warning naming it): it may be an unrelated animation.
    `source`, when given, receives the found file's bytes (`data`) and reading (`file`), so that a caller that
    keeps the file (an MDB import) reads and decompresses it once."""
    wanted = name.lower()
    for folder in folders:
        for path, read in _candidates(folder, warnings):
            try:
                data, f, found = _skeletons_of(read)
            except (FormatError, OSError) as e:
                if warnings is not None:
                    warnings.append(f"{path}: not read while looking for skeleton {name} ({e})")
                continue
            for s in found:
                if s.name.lower() == wanted:
                    if source is not None:
                        source.update(data=data, file=f)
                    return path, s
    return None


def point_bone(point_name: str, names: Sequence[str], meshes: Iterable[cm.Mesh]) -> int | None:
    """The bone a HOOK, HAIR or HELM point of a bound part follows (docs/nwn2.md §5.4): the bone of its name
    (case ignored: a hook named after an attachment bone `ap_*`), else the bone that carries the most SKIN
    weight of the part (a head's or a helm's points follow `Head`); None when the part weighs no bone."""
    by_name = {n.lower(): i for i, n in enumerate(names)}
    if point_name.lower() in by_name:
        return by_name[point_name.lower()]
    total = np.zeros(len(names))
    for mesh in meshes:
        if mesh.joints is None or mesh.weights is None:
            continue
        joints = np.asarray(mesh.joints).reshape(-1)
        weights = np.asarray(mesh.weights, np.float64).reshape(-1)
        live = (joints >= 0) & (joints < len(names)) & (weights > 0)
        total += np.bincount(joints[live], weights[live], minlength=len(names))
    return int(np.argmax(total)) if total.any() else None


def bind(names: Sequence[str], mdb_path: str, skeleton_path: str | Sequence[str] | None = None,
         source: dict | None = None) -> tuple[cm.Skeleton | None, str | None, list[str]]:
    """(core skeleton, GR2 file, warnings) of the skeleton an MDB's SKIN packets name (`names`, in packet order);
    (None, None, warnings) when they name none or the skeleton is in none of the folders. `source`: as
    `find_skeleton`'s."""
    warnings: list[str] = []
    if not names:
        return None, None, warnings
    if len(names) > 1:
        warnings.append(f"SKIN packets name {len(names)} skeletons ({', '.join(names)}): bound to {names[0]}")
    folders = search_folders(mdb_path, skeleton_path)
    found = find_skeleton(names[0], folders, warnings, source)
    if found is None:  # the mapping's warning about SKIN packets without a skeleton says it once
        return None, None, warnings
    path, skel = found
    problems = skel.problems()
    if problems:
        i, field, message = problems[0]
        raise FormatError(f"{path}: skeleton {skel.name} bone {i} ({skel.bones[i].name}): {field}: {message}",
                          None, field)
    return convert.core_skeleton(skel), path, warnings
