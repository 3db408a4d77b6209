"""How near a skinned vertex's heaviest bone is to it, per reading of "near" (docs/nwn2.md §5.4, "Nearest bones"):
computed from the MDB and GR2 bytes through the codecs alone (no mapping, no armature). Used by
tests/mdb/test_gr2_nearest_bones.py on the sample head and by tools/nearest_bones.py on a whole folder."""
from __future__ import annotations

import numpy as np

from skinbridge.io_mdb.gr2 import skeleton as gr2_skeleton
from skinbridge.io_mdb.mdb import bones, mdb


class Rig:
    """The skeleton's rest origins in the MDB's metres, taken from the stored inverse world transforms."""

    def __init__(self, skel: gr2_skeleton.Gr2Skeleton):
        self.names = skel.names
        self.parents = np.array([b.parent for b in skel.bones])
        inverse = np.array([b.inverse_world for b in skel.bones], np.float64)
        self.origins = np.linalg.inv(inverse)[:, :3, 3] / skel.units_per_metre
        self.composed = skel.world_matrices()[:, :3, 3] / skel.units_per_metre


def segment_distances(points: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    ab = b - a
    length2 = float(ab @ ab)
    t = np.clip((points - a) @ ab / length2, 0.0, 1.0) if length2 > 0 else np.zeros(len(points))
    return np.linalg.norm(points - (a + t[:, None] * ab), axis=1)


def distances(points: np.ndarray, rig: Rig, reading: str) -> np.ndarray:
    """(vertices, bones): "origin" to each bone's origin; "segment" to the bone as the segments from its origin to
    each child's origin (every child, attachment points too), a leaf being its origin."""
    out = np.empty((len(points), len(rig.names)))
    for i, origin in enumerate(rig.origins):
        children = np.flatnonzero(rig.parents == i)
        if reading == "origin" or not len(children):
            out[:, i] = np.linalg.norm(points - origin, axis=1)
        else:
            out[:, i] = np.min([segment_distances(points, origin, rig.origins[c]) for c in children], axis=0)
    return out


def heaviest(p: mdb.MeshPacket, order: list[int]) -> np.ndarray:
    """Each vertex's heaviest bone as a skeleton index, through the SKIN index order `order`."""
    v = p.vertices
    return np.asarray(order)[v["bones"][np.arange(len(v)), v["weights"].argmax(1)]]


def hits(packets, rig: Rig, reading: str, candidates: str) -> dict[str, tuple[int, int]]:
    """{packet: (vertices whose heaviest bone is among their 3 nearest, vertices)}; the candidates are every
    bone ("all"), the bones the packet's SKIN index order can name ("reachable": no attachment bones, face bones
    only in a cutscene head) or the bones the packet's weights reach ("used")."""
    out = {}
    for p in packets:
        order = np.asarray(bones.skin_bone_order(rig.names, bones.uses_head_bones(p.material.flags)))
        top = heaviest(p, list(order))
        d = distances(p.vertices["position"].astype(np.float64), rig, reading)
        pool = {"all": np.arange(len(rig.names)), "reachable": np.unique(order),
                "used": np.unique(order[p.vertices["bones"][p.vertices["weights"] > 0]])}[candidates]
        nearest = pool[np.argsort(d[:, pool], axis=1)[:, :3]]
        out[p.name_text] = (int((nearest == top[:, None]).any(axis=1).sum()), len(p.vertices))
    return out
