"""The neutral model every format maps to.

Axes are Blender's (right-handed, Z up); lengths in metres where the format has a unit. Arrays are
numpy. Per-vertex data is "split": a vertex carries one normal, one UV per set and one colour, as game
formats store it; the Blender bridge turns that into corner attributes and back.

`extras` dictionaries hold what only one format has, under a key naming the format (e.g.
`extras["urho"]`), with plain JSON-compatible values, so that they survive a trip through Blender custom
properties and come back on export.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .transforms import affine_inverse, matrix_to_trs, trs_to_matrix


@dataclass
class Bone:
    name: str
    parent: int  # index into Skeleton.bones, -1 for a root
    bind: np.ndarray  # 4×4: bone space → model space at bind time (the inverse of the inverse-bind matrix)
    rest_translation: np.ndarray  # the bone's default (initial) pose, relative to its parent
    rest_rotation: np.ndarray  # w, x, y, z
    rest_scale: np.ndarray
    deform: bool = True
    extras: dict = field(default_factory=dict)

    @property
    def rest_local(self) -> np.ndarray:
        return trs_to_matrix(self.rest_translation, self.rest_rotation, self.rest_scale)


@dataclass
class Skeleton:
    name: str = "Armature"
    bones: list[Bone] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.bones)

    @property
    def names(self) -> list[str]:
        return [b.name for b in self.bones]

    @property
    def parents(self) -> np.ndarray:
        return np.array([b.parent for b in self.bones], dtype=np.int64)

    def binds(self) -> np.ndarray:
        return np.array([b.bind for b in self.bones], dtype=np.float64).reshape(-1, 4, 4)

    def index(self, name: str) -> int:
        for i, b in enumerate(self.bones):
            if b.name == name:
                return i
        raise KeyError(name)

    def topological_order(self) -> list[int]:
        """Bone indices parents-first; raises ValueError on a parent cycle or an index out of range."""
        n = len(self.bones)
        order: list[int] = []
        state = [0] * n  # 0 new, 1 visiting, 2 done
        for start in range(n):
            path = []
            i = start
            while i >= 0 and state[i] == 0:
                state[i] = 1
                path.append(i)
                p = self.bones[i].parent
                if p >= n or p < -1:
                    raise ValueError(f"bone {i} ({self.bones[i].name}) has parent {p} outside 0..{n - 1}")
                if p >= 0 and state[p] == 1:
                    raise ValueError(f"bone {p} ({self.bones[p].name}) is in a parent cycle")
                i = p
            order.extend(reversed(path))
            for j in path:
                state[j] = 2
        return order

    def set_rest_from_binds(self) -> None:
        """Default pose = bind pose: each bone's local transform derived from the bind matrices."""
        binds = self.binds()
        for i, b in enumerate(self.bones):
            local = binds[i] if b.parent < 0 else affine_inverse(binds[b.parent]) @ binds[i]
            t, r, s = matrix_to_trs(local)
            b.rest_translation, b.rest_rotation, b.rest_scale = t, r, s


@dataclass
class ShapeKey:
    name: str
    positions: np.ndarray  # (V, 3) absolute positions
    normals: np.ndarray | None = None  # (V, 3) absolute, or None
    default_weight: float = 0.0


@dataclass
class Mesh:
    name: str
    positions: np.ndarray  # (V, 3) float32
    triangles: np.ndarray  # (T, 3) int32, counter-clockwise front faces
    normals: np.ndarray | None = None  # (V, 3)
    tangents: np.ndarray | None = None  # (V, 4), w = bitangent sign
    uvs: list[tuple[str, np.ndarray]] = field(default_factory=list)  # (V, 2), Blender convention (origin bottom-left)
    colors: list[tuple[str, np.ndarray]] = field(default_factory=list)  # (V, 4) float 0..1
    joints: np.ndarray | None = None  # (V, K) int32 skeleton bone indices
    weights: np.ndarray | None = None  # (V, K) float32; weight 0 = unused slot
    material_indices: np.ndarray | None = None  # (T,) index into `materials`
    materials: list[int] = field(default_factory=list)  # slot → index into Scene.materials
    shape_keys: list[ShapeKey] = field(default_factory=list)
    edges: np.ndarray | None = None  # (E, 2) loose edges (line primitives)
    lod_level: int | None = None  # where a format keeps levels of detail as meshes: this mesh's level (0: full)
    lod_distance: float = 0.0  # the view distance from which that level is shown
    extras: dict = field(default_factory=dict)

    @property
    def vertex_count(self) -> int:
        return len(self.positions)


@dataclass
class Texture:
    name: str
    path: str | None = None  # file path as referenced
    data: bytes | None = None  # embedded image bytes
    mime: str = "image/png"


@dataclass
class Material:
    name: str
    base_color: tuple = (1.0, 1.0, 1.0, 1.0)
    metallic: float = 0.0
    roughness: float = 0.5
    emissive: tuple = (0.0, 0.0, 0.0)
    base_color_texture: Texture | None = None
    normal_texture: Texture | None = None
    metallic_roughness_texture: Texture | None = None
    emissive_texture: Texture | None = None
    alpha_mode: str = "OPAQUE"  # OPAQUE | BLEND | CLIP
    alpha_cutoff: float = 0.5
    double_sided: bool = False
    extras: dict = field(default_factory=dict)


@dataclass
class Track:
    """Keys of one bone, relative to its parent; each channel keeps its own key times."""

    bone: str
    translation_times: np.ndarray | None = None
    translations: np.ndarray | None = None  # (K, 3)
    rotation_times: np.ndarray | None = None
    rotations: np.ndarray | None = None  # (K, 4) w, x, y, z
    scale_times: np.ndarray | None = None
    scales: np.ndarray | None = None  # (K, 3)
    interpolation: str = "LINEAR"  # LINEAR (slerp for rotations) | STEP
    extras: dict = field(default_factory=dict)


@dataclass
class MorphTrack:
    shape_key: str
    times: np.ndarray
    weights: np.ndarray


@dataclass
class Animation:
    """`extras[CLIP_KEY]` holds what a format that has clips says of one, format-neutrally: `mode` ("loop",
    "mirror" — forward then backward —, "single"); a target whose FormatSpec has no `clip_modes` plays every clip
    as a loop."""
    name: str
    length: float  # seconds
    tracks: list[Track] = field(default_factory=list)
    morph_tracks: list[MorphTrack] = field(default_factory=list)
    markers: list[tuple[float, str]] = field(default_factory=list)  # (time in seconds, text)
    extras: dict = field(default_factory=dict)


CLIP_KEY = "clip"
LOOP = "loop"

# Keys of `extras` that the core defines for every format; every other key belongs to the format package that
# writes it and is read only there (tests/core/test_code_rules.py).
FILE_UNIT_KEY = "file_unit"  # Animation.extras: scene units per file unit (compare's position tolerance)
COMPARE_KEY = "compare"  # Scene.extras: how `compare` matches this file's bones (core/compare.py `bone_names`)
TIMING_KEY = "timing_curves"  # Track.extras: (K, 4, 4) uint8 per key and channel (x, y, z, rotation): the
#                               Bézier timing curve (x1, y1, x2, y2 in 0..127) the key is reached by (MMD's form)


@dataclass
class Scene:
    name: str = "Scene"
    skeleton: Skeleton | None = None
    meshes: list[Mesh] = field(default_factory=list)
    materials: list[Material] = field(default_factory=list)
    animations: list[Animation] = field(default_factory=list)
    extras: dict = field(default_factory=dict)

    @property
    def vertex_count(self) -> int:
        return sum(m.vertex_count for m in self.meshes)

    @property
    def triangle_count(self) -> int:
        return sum(len(m.triangles) for m in self.meshes)
