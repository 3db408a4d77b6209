"""The skeletons of a Granny 2 file (docs/nwn2.md §5.3): bones with parents, local transforms and the inverse
world transforms the file stores, in the file's units (NWN2: centimetres, Z up).

Granny composes a bone's local transform as translation · rotation · scale/shear (column vectors) and its
world transform as parent world · local. It stores matrices for row vectors (translation in the last row);
`inverse_world` here is the transposed, column-vector form, so `world @ inverse_world` is the identity.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...core.errors import FormatError
from . import gr2

HAS_POSITION, HAS_ROTATION, HAS_SCALE_SHEAR = 0x1, 0x2, 0x4


@dataclass
class Gr2Bone:
    name: str
    parent: int                   # -1: a root
    flags: int                    # which of the three parts the transform has
    translation: np.ndarray       # (3,) float32
    rotation: np.ndarray          # (4,) float32, quaternion x, y, z, w
    scale_shear: np.ndarray       # (3, 3) float32
    inverse_world: np.ndarray     # (4, 4) float32, column vectors

    def local_matrix(self) -> np.ndarray:
        """The 4×4 (float64, column vectors) of the local transform; parts the flags leave out are identity."""
        out = np.eye(4)
        rotation = quaternion_matrix(self.rotation) if self.flags & HAS_ROTATION else np.eye(3)
        scale = self.scale_shear.astype(np.float64) if self.flags & HAS_SCALE_SHEAR else np.eye(3)
        out[:3, :3] = rotation @ scale
        if self.flags & HAS_POSITION:
            out[:3, 3] = self.translation
        return out


@dataclass
class Gr2Skeleton:
    name: str
    bones: list[Gr2Bone]
    units_per_metre: float        # the file's art tool info (NWN2: 100)

    @property
    def names(self) -> list[str]:
        return [b.name for b in self.bones]

    def world_matrices(self) -> np.ndarray:
        """(n, 4, 4) float64 world transforms composed from the local ones; a parent must come before its
        children (`problems` names a bone that breaks this)."""
        out = np.empty((len(self.bones), 4, 4))
        for i, b in enumerate(self.bones):
            local = b.local_matrix()
            if b.parent < 0:
                out[i] = local
            elif b.parent < i:
                out[i] = out[b.parent] @ local
            else:
                raise ValueError(f"bone {i} ({b.name}): parent {b.parent} does not come before it")
        return out

    def problems(self) -> list[tuple[int, str, str]]:
        """(bone, field, message) of what the layout allows but a skeleton cannot be: parents out of order or
        range, non-finite transforms."""
        out = []
        for i, b in enumerate(self.bones):
            if b.parent >= len(self.bones) or b.parent < -1:
                out.append((i, "ParentIndex", f"parent {b.parent} is not a bone of the {len(self.bones)}"))
            elif b.parent >= i:
                out.append((i, "ParentIndex", f"parent {b.parent} does not come before the bone"))
            parts = (b.translation, b.rotation, b.scale_shear)
            if not all(np.isfinite(p).all() for p in parts):
                out.append((i, "Transform", "not a finite number"))
            if not np.isfinite(b.inverse_world).all():
                out.append((i, "InverseWorldTransform", "not a finite number"))
        return out


def quaternion_matrix(q: np.ndarray) -> np.ndarray:
    """The rotation matrix (column vectors) of a quaternion x, y, z, w, normalised first."""
    x, y, z, w = np.asarray(q, np.float64) / max(float(np.linalg.norm(q)), 1e-30)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def _field(obj: gr2.Struct, name: str, kind: type, where: str):
    value = obj.get(name) if isinstance(obj, dict) else None
    if not isinstance(value, kind):
        at = obj.at if isinstance(obj, gr2.Struct) and obj.at else (None, None)
        raise FormatError(f"{where} has no {name} of the kind a skeleton needs", at[1],
                          f"section[{at[0]}] {where}.{name}")
    return value


def _bone(b: gr2.Struct, where: str) -> Gr2Bone:
    name = _field(b, "Name", str, where)
    parent = _field(b, "ParentIndex", int, where)
    t = _field(b, "Transform", np.void, where)
    iw = _field(b, "InverseWorldTransform", np.ndarray, where)
    if t.dtype != gr2.TRANSFORM_DTYPE or iw.shape != (16,):
        raise FormatError(f"{where}: Transform or InverseWorldTransform is not laid out as Granny's", b.at[1],
                          f"section[{b.at[0]}] {where}")
    return Gr2Bone(name, parent, int(t["flags"]), t["translation"].copy(), t["rotation"].copy(),
                   t["scale_shear"].copy(), iw.reshape(4, 4).T.copy())


def skeletons(f: gr2.Gr2File) -> list[Gr2Skeleton]:
    """Every skeleton the root lists (an animation file has none)."""
    root = f.root
    art = root.get("ArtToolInfo")
    units = art.get("UnitsPerMeter") if isinstance(art, dict) else None
    units = float(units) if isinstance(units, float) and np.isfinite(units) and units > 0 else 1.0
    out = []
    for k, s in enumerate(root.get("Skeletons") or []):
        if s is None:
            continue
        where = f"Skeletons[{k}]"
        bones = _field(s, "Bones", list, where)
        out.append(Gr2Skeleton(_field(s, "Name", str, where),
                               [_bone(b, f"{where}.Bones[{i}]") for i, b in enumerate(bones)], units))
    return out


def semantic(f: gr2.Gr2File) -> list[str]:
    """What reading a skeleton for an import does after the codec: the typed data decoded and the skeletons
    built; their problems as warnings."""
    out = list(f.warnings)
    for s in skeletons(f):
        out += [f"skeleton {s.name} bone {i} ({s.bones[i].name}): {field}: {message}"
                for i, field, message in s.problems()]
    return out
