"""UMD2 files generated for the tests (records built directly, laid out as docs/urho.md §3.1 and §5.2)."""
from __future__ import annotations

import numpy as np

from skinbridge.core.transforms import matrix_to_trs, quat_multiply, trs_to_matrix
from skinbridge.io_urhox.model import umd2
from support.urho_models import SKINNED, one_mesh, skinned_vertices

# Stored child-before-parent, root at index 5 (parent = itself), as Kachujin-like files do.
BONES = [  # name, parent, bind head (file space: glTF axes, Y up)
    ("hand", 3, (1.5, 1.5, 0.0)),
    ("head", 2, (0.0, 2.2, 0.0)),
    ("neck", 4, (0.0, 1.8, 0.0)),
    ("forearm", 6, (1.0, 1.5, 0.0)),
    ("spine", 5, (0.0, 1.0, 0.0)),
    ("root", 5, (0.0, 0.0, 0.0)),
    ("upperarm", 4, (0.4, 1.5, 0.0)),
]
ROTATED = {"spine": (0, 0, 1), "upperarm": (0, 1, 0), "neck": (1, 0, 0)}  # 30° about these axes


def _axis_angle(axis, degrees):
    a = np.radians(degrees) / 2
    v = np.asarray(axis, dtype=np.float64)
    v = v / np.linalg.norm(v)
    return np.array([np.cos(a), *(np.sin(a) * v)])


def posed_umd2(seed: int = 3) -> umd2.Model:
    """7 bones whose initial pose differs from the bind pose (three bones rotated 30°); a skinned mesh of
    small tetrahedra around every bone, 2 weights per vertex."""
    rng = np.random.default_rng(seed)
    n = len(BONES)
    # Bind: every bone turned a little about Y so that bone axes are not the model axes.
    bind = []
    for i, (_, _, head) in enumerate(BONES):
        q = _axis_angle((0.2, 1, 0.1), 10 * i)
        bind.append(trs_to_matrix(head, q, np.ones(3)))
    bind = np.array(bind)
    bones = []
    for i, (name, parent, _) in enumerate(BONES):
        local = bind[i] if parent == i else np.linalg.inv(bind[parent]) @ bind[i]
        t = local[:3, 3]
        _, q, s = matrix_to_trs(local)
        if name in ROTATED:
            q = quat_multiply(q, _axis_angle(ROTATED[name], 30))
        offset = np.linalg.inv(bind[i])[:3, :].reshape(-1)
        bones.append(umd2.BoneRecord(name, parent, t.astype(np.float32), q.astype(np.float32),
                                     s.astype(np.float32), offset.astype(np.float32)))
    # Four vertices around each bone head, weighted to the bone and its parent.
    pos, weights, joints = [], [], []
    for i, (_, parent, head) in enumerate(BONES):
        for _ in range(4):
            pos.append(np.asarray(head) + rng.normal(0, 0.15, 3))
            w = rng.uniform(0.5, 1.0)
            weights.append((w, 1 - w, 0, 0))
            joints.append((i, parent, 0, 0))
    pos = np.array(pos)
    nrm = rng.normal(size=(len(pos), 3))
    v = skinned_vertices(pos, nrm / np.linalg.norm(nrm, axis=1, keepdims=True), rng.uniform(0, 1, (len(pos), 2)),
                         weights, joints)
    tris = []
    for i in range(n):  # a tetrahedron per bone
        a = 4 * i
        tris += [(a, a + 1, a + 2), (a, a + 3, a + 1), (a + 1, a + 3, a + 2), (a, a + 2, a + 3)]
    m = umd2.Model(magic="UMD2")
    m.bones = bones
    return one_mesh(m, umd2.VertexBuffer(SKINNED, v), pos, tris, np.arange(n, dtype=np.uint32))
