"""A skinned MDB's GR2 skeleton (docs/nwn2.md §5.4): found by the name its SKIN packets give, as a core Skeleton
in the MDB's units and axes (`convert.core_skeleton`).

A SKIN packet names the skeleton inside a GR2 file, not the file (the four public Genasi skeletons
`P_H?F_skel83.GR2` all hold `P_HHF_skel`), so the lookup reads the `.gr2` files beside the MDB first, then those
of the folders the user lists (`--skeleton-path DIR`; in Blender the import operator's Skeleton Path followed by
the folders of the add-on's preferences) and takes, of the files of the first folder that holds a skeleton
of that name (compared without case, as the game's resource names are), the one whose rest the part's SKIN
vertices fit best (`pair`: the fewest bones away from where the vertices put them; the first by name among
equals). A listed "folder" may be an archive (the game's
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
from dataclasses import dataclass
from typing import Callable, Iterable, Sequence

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
    if not data.startswith(MAGIC) or not gr2.may_hold_skeletons(data):
        return data, None, []  # no Granny file, or an animation: no skeleton, and nothing decompressed
    f = gr2.read(data)
    return data, f, skeleton.skeletons(f)


def find_skeleton(name: str, folders: Iterable[str], warnings: list[str] | None = None,
                  source: dict | None = None) -> tuple[str, skeleton.Gr2Skeleton] | None:
    """(file, skeleton) of the first `.gr2` in `folders` holding a skeleton called `name`; None when none does.
    A file that does not read is passed over (with a warning naming it): it may be an unrelated animation.
    `source`, when given, receives the found file's bytes (`data`) and reading (`file`), so that a caller that
    keeps the file (an MDB import) reads and decompresses it once."""
    found = find_skeletons(name, folders, warnings, first_only=True)
    if not found:
        return None
    if source is not None:
        source.update(data=found[0].data, file=found[0].file)
    return found[0].path, found[0].skeleton


@dataclass
class Candidate:
    """A `.gr2` holding the skeleton a part names: its label (`folder/file.gr2` or `pack.hak:file.gr2`), the
    skeleton, and the file's bytes and reading (kept so that an import reads and decompresses it once)."""
    path: str
    skeleton: skeleton.Gr2Skeleton
    data: bytes
    file: gr2.Gr2File


def find_skeletons(name: str, folders: Iterable[str], warnings: list[str] | None = None,
                   first_only: bool = False) -> list[Candidate]:
    """Every `.gr2` of the first folder (or archive) in `folders` that holds a skeleton called `name` (case
    ignored), in name order, each with that skeleton; [] when no folder holds one. A file that does not read is
    passed over with a warning naming it. The folders after the first that holds the name are not read: the
    user's order (the MDB's own folder first) decides before the fit does."""
    wanted = name.lower()
    for folder in folders:
        found: list[Candidate] = []
        for path, read in _candidates(folder, warnings):
            try:
                data, f, held = _skeletons_of(read)
            except (FormatError, OSError) as e:
                if warnings is not None:
                    warnings.append(f"{path}: not read while looking for skeleton {name} ({e})")
                continue
            s = next((s for s in held if s.name.lower() == wanted), None)
            if s is not None:
                found.append(Candidate(path, s, data, f))
                if first_only:
                    return found
        if found:
            return found
    return []


# -- choosing among skeletons of one name by the part's fit (docs/nwn2.md §5.4, "Several skeletons") --------

FIT_TOLERANCE = 1e-4  # metres: `compare --rest`'s default, the distance under which a bone has not moved
PIVOT_VERTICES = 8  # vertices weighted wholly to a bone that may show it a pivot (an eyeball)
PIVOT_RESIDUAL = 0.15  # of the radius: how far from the fitted sphere those vertices may lie


def _sphere_centre(points: np.ndarray) -> np.ndarray | None:
    """The centre of the sphere the points lie on (least squares), or None when they lie on none (a residual
    over PIVOT_RESIDUAL of the radius, or a radius larger than the points' extent: a patch of skin, not a ball)."""
    a = np.c_[2 * points, np.ones(len(points))]
    c, *_ = np.linalg.lstsq(a, (points ** 2).sum(1), rcond=None)
    r2 = c[3] + c[:3] @ c[:3]
    if not np.isfinite(r2) or r2 <= 0:
        return None
    r = np.sqrt(r2)
    residual = np.abs(np.linalg.norm(points - c[:3], axis=1) - r).max()
    return c[:3] if residual <= PIVOT_RESIDUAL * r and r < np.ptp(points, axis=0).max() else None


def implied_positions(skins: Sequence[tuple[np.ndarray, np.ndarray, np.ndarray]], bone_count: int
                      ) -> np.ndarray:
    """(bone_count, 3) where the part's SKIN vertices put each bone (NaN for a bone they do not weigh).
    `skins`: per SKIN packet (positions, joints into the skeleton, weights). A bone that at least PIVOT_VERTICES
    vertices weigh wholly, lying on a sphere, is its pivot (an eye turns its eyeball about its centre): the
    sphere's centre; any other bone the centroid of its vertices, each by its weight."""
    sums = np.zeros((bone_count, 3))
    total = np.zeros(bone_count)
    whole: dict[int, list[np.ndarray]] = {}
    for positions, joints, weights in skins:
        p = np.asarray(positions, np.float64)
        j = np.asarray(joints).reshape(len(p), -1)
        w = np.asarray(weights, np.float64).reshape(len(p), -1)
        live = (w > 0) & (j >= 0) & (j < bone_count)
        rows, slots = np.nonzero(live)
        bones, ws = j[rows, slots], w[rows, slots]
        total += np.bincount(bones, ws, minlength=bone_count)
        for axis in range(3):
            sums[:, axis] += np.bincount(bones, ws * p[rows, axis], minlength=bone_count)
        sole = ws >= 0.999
        for b in np.unique(bones[sole]):
            whole.setdefault(int(b), []).append(p[rows[sole][bones[sole] == b]])
    with np.errstate(invalid="ignore", divide="ignore"):
        out = sums / total[:, None]
    out[total <= 0] = np.nan
    for b, parts in whole.items():
        points = np.concatenate(parts)
        if len(points) >= PIVOT_VERTICES:
            centre = _sphere_centre(points)
            if centre is not None:
                out[b] = centre
    return out


def bone_differences(candidates: Sequence[cm.Skeleton],
                     skins_of: Callable[[list[str]], Sequence[tuple[np.ndarray, np.ndarray, np.ndarray]]]
                     ) -> list[int | None]:
    """Per candidate skeleton, the bones whose rest head lies farther from where the part puts it
    (`implied_positions`) than another candidate's bone of that name, by more than FIT_TOLERANCE: the bones in
    which it differs from the best fitting one as `compare --rest` would count them; a bone the part weighs and
    the candidate lacks counts too. None for a candidate the part's indices do not fit (`skins_of` raised)."""
    distance: list[dict[str, float] | None] = []
    for skel in candidates:
        try:
            skins = skins_of(skel.names)
        except FormatError:
            distance.append(None)
            continue
        implied = implied_positions(skins, len(skel.bones))
        heads = skel.binds()[:, :3, 3]
        d = np.linalg.norm(heads - implied, axis=1)
        distance.append({n: float(x) for n, x in zip(skel.names, d) if np.isfinite(x)})
    weighed = sorted({n for d in distance if d is not None for n in d})
    best = {n: min(d[n] for d in distance if d is not None and n in d) for n in weighed}
    return [None if d is None else sum(n not in d or d[n] > best[n] + FIT_TOLERANCE for n in weighed)
            for d in distance]


@dataclass
class Pairing:
    """The skeleton files holding the name a part's SKIN packets give, how many bones each differs in from the
    part's fit (`bone_differences`) and the one chosen: the fewest, the first by name among equals."""
    name: str
    candidates: list[Candidate]
    differences: list[int | None]
    chosen: int

    def summary(self) -> dict:
        fitted = len(self.candidates) > 1  # one file is taken as it is: nothing to fit against
        return {"skeleton": self.name, "file": self.candidates[self.chosen].path,
                "candidates": [{"file": c.path} | ({"bone_differences": n} if fitted else {})
                               for c, n in zip(self.candidates, self.differences)]}

    def report(self) -> str | None:
        """The import report's line when several files hold the name; None for one."""
        if len(self.candidates) < 2:
            return None

        def told(n):
            return "not fitted: a broken skeleton or bone indices beyond it" if n is None else \
                f"{n} bone differences"
        others = "; ".join(f"{os.path.basename(c.path)} ({told(n)})"
                           for i, (c, n) in enumerate(zip(self.candidates, self.differences)) if i != self.chosen)
        chosen = self.differences[self.chosen]
        why = ("the part's SKIN vertices tell them apart at no bone, so the first by name" if
               all(n == chosen for n in self.differences) else
               f"its rest fits the SKIN vertices best: {told(chosen)} from the best fit per bone")
        return (f"{len(self.candidates)} skeleton files hold {self.name}: bound to "
                f"{self.candidates[self.chosen].path} ({why}); not chosen: {others}")


def pair(name: str, folders: Iterable[str],
         skins_of: Callable[[list[str]], Sequence[tuple[np.ndarray, np.ndarray, np.ndarray]]] | None,
         warnings: list[str] | None = None) -> Pairing | None:
    """The skeleton files holding `name` in the first folder that holds one (`find_skeletons`) and the one
    whose rest fits the part best; without `skins_of` (the part's SKIN vertices through a skeleton's names)
    the first by name. None when no folder holds the name."""
    found = find_skeletons(name, folders, warnings)
    if not found:
        return None
    if len(found) == 1 or skins_of is None:
        return Pairing(name, found, [0] * len(found), 0)
    sound = [i for i, c in enumerate(found) if not c.skeleton.problems()]  # a broken one is refused if chosen
    fitted = bone_differences([convert.core_skeleton(found[i].skeleton) for i in sound], skins_of)
    counts: list[int | None] = [None] * len(found)
    for i, n in zip(sound, fitted):
        counts[i] = n
    unfit = max(len(c.skeleton.bones) for c in found) + 1  # no count at all ranks after every count
    return Pairing(name, found, counts, min((unfit if n is None else n, i) for i, n in enumerate(counts))[1])


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
         source: dict | None = None, skins_of=None) -> tuple[cm.Skeleton | None, str | None, list[str]]:
    """(core skeleton, GR2 file, warnings) of the skeleton an MDB's SKIN packets name (`names`, in packet order);
    (None, None, warnings) when they name none or the skeleton is in none of the folders. `source`: as
    `find_skeleton`'s. `skins_of(bone names)`: the part's SKIN packets as (positions, joints, weights) through
    a skeleton of those bones, by which several files holding the name are told apart (`pair`); the report of
    that choice is among the warnings."""
    warnings: list[str] = []
    if not names:
        return None, None, warnings
    if len(names) > 1:
        warnings.append(f"SKIN packets name {len(names)} skeletons ({', '.join(names)}): bound to {names[0]}")
    folders = search_folders(mdb_path, skeleton_path)
    pairing = pair(names[0], folders, skins_of, warnings)
    if pairing is None:  # the mapping's warning about SKIN packets without a skeleton says it once
        return None, None, warnings
    if pairing.report():
        warnings.append(pairing.report())
    chosen = pairing.candidates[pairing.chosen]
    if source is not None:
        source.update(data=chosen.data, file=chosen.file)
    path, skel = chosen.path, chosen.skeleton
    problems = skel.problems()
    if problems:
        i, field, message = problems[0]
        raise FormatError(f"{path}: skeleton {skel.name} bone {i} ({skel.bones[i].name}): {field}: {message}",
                          None, field)
    return convert.core_skeleton(skel), path, warnings
