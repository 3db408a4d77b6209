"""Quaternions, TRS ⇄ matrix and basis changes, vectorised over leading axes with numpy.

Quaternions are (w, x, y, z) unless a name says otherwise (`_xyzw`: x, y, z, w). Matrices are 4×4, column vectors
(p' = M @ p), float64.
"""
from __future__ import annotations

import numpy as np

# Basis changes into Blender's axes (right-handed, Z up). A change of basis is a signed permutation,
# so applying it to float32 data is exact.
GLTF_TO_BLENDER = np.array([[1, 0, 0, 0], [0, 0, -1, 0], [0, 1, 0, 0], [0, 0, 0, 1]], dtype=np.float64)
"""glTF / UrhoX (right-handed, Y up): (x, y, z) → (x, −z, y)."""
BLENDER_TO_GLTF = GLTF_TO_BLENDER.T.copy()


def quat_normalize(q) -> np.ndarray:
    q = np.asarray(q, dtype=np.float64)
    n = np.linalg.norm(q, axis=-1, keepdims=True)
    return np.where(n > 0, q / np.where(n > 0, n, 1), np.array([1.0, 0, 0, 0]))


def quat_multiply(a, b) -> np.ndarray:
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    aw, ax, ay, az = np.moveaxis(a, -1, 0)
    bw, bx, by, bz = np.moveaxis(b, -1, 0)
    return np.stack([
        aw * bw - ax * bx - ay * by - az * bz,
        aw * bx + ax * bw + ay * bz - az * by,
        aw * by - ax * bz + ay * bw + az * bx,
        aw * bz + ax * by - ay * bx + az * bw,
    ], axis=-1)


def quat_to_matrix3(q) -> np.ndarray:
    """Rotation matrices (…, 3, 3) of unit quaternions (normalised first)."""
    w, x, y, z = np.moveaxis(quat_normalize(q), -1, 0)
    m = np.empty(w.shape + (3, 3))
    m[..., 0, 0] = 1 - 2 * (y * y + z * z)
    m[..., 0, 1] = 2 * (x * y - w * z)
    m[..., 0, 2] = 2 * (x * z + w * y)
    m[..., 1, 0] = 2 * (x * y + w * z)
    m[..., 1, 1] = 1 - 2 * (x * x + z * z)
    m[..., 1, 2] = 2 * (y * z - w * x)
    m[..., 2, 0] = 2 * (x * z - w * y)
    m[..., 2, 1] = 2 * (y * z + w * x)
    m[..., 2, 2] = 1 - 2 * (x * x + y * y)
    return m


def matrix3_to_quat(m) -> np.ndarray:
    """Unit quaternions (w ≥ 0) of rotation matrices (…, 3, 3), by Shepperd's method."""
    m = np.asarray(m, dtype=np.float64)
    shape = m.shape[:-2]
    m = m.reshape(-1, 3, 3)
    q = np.empty((len(m), 4))
    tr = m[:, 0, 0] + m[:, 1, 1] + m[:, 2, 2]
    diag = np.stack([m[:, 0, 0], m[:, 1, 1], m[:, 2, 2]], axis=1)
    case = np.where(tr > diag.max(axis=1), 3, diag.argmax(axis=1))
    for c in range(4):
        s = case == c
        if not s.any():
            continue
        a = m[s]
        if c == 3:
            r = np.sqrt(1 + a[:, 0, 0] + a[:, 1, 1] + a[:, 2, 2]) * 2
            q[s] = np.stack([r / 4, (a[:, 2, 1] - a[:, 1, 2]) / r, (a[:, 0, 2] - a[:, 2, 0]) / r,
                             (a[:, 1, 0] - a[:, 0, 1]) / r], axis=1)
        else:
            i, j, k = c, (c + 1) % 3, (c + 2) % 3
            r = np.sqrt(np.maximum(1 + a[:, i, i] - a[:, j, j] - a[:, k, k], 0)) * 2
            v = np.empty((len(a), 4))
            v[:, 0] = (a[:, k, j] - a[:, j, k]) / r
            v[:, 1 + i] = r / 4
            v[:, 1 + j] = (a[:, j, i] + a[:, i, j]) / r
            v[:, 1 + k] = (a[:, k, i] + a[:, i, k]) / r
            q[s] = v
    q *= np.where(q[:, :1] < 0, -1.0, 1.0)
    return quat_normalize(q).reshape(shape + (4,))


def trs_to_matrix(t, q, s) -> np.ndarray:
    """4×4 matrices T·R·S from translations (…,3), quaternions w,x,y,z (…,4) and scales (…,3)."""
    t = np.asarray(t, dtype=np.float64)
    s = np.asarray(s, dtype=np.float64)
    r = quat_to_matrix3(q)
    m = np.zeros(r.shape[:-2] + (4, 4))
    m[..., :3, :3] = r * s[..., None, :]
    m[..., :3, 3] = t
    m[..., 3, 3] = 1
    return m


def matrix_to_trs(m) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Translation, rotation (w,x,y,z, w ≥ 0) and scale of affine matrices without shear.

    A negative determinant is given to the X scale.
    """
    m = np.asarray(m, dtype=np.float64)
    t = m[..., :3, 3].copy()
    a = m[..., :3, :3]
    s = np.linalg.norm(a, axis=-2)
    det = np.linalg.det(a)
    s[..., 0] *= np.where(det < 0, -1.0, 1.0)
    safe = np.where(s == 0, 1.0, s)
    r = a / safe[..., None, :]
    return t, matrix3_to_quat(r), s


def affine_inverse(m) -> np.ndarray:
    return np.linalg.inv(np.asarray(m, dtype=np.float64))


def slerp(q0, q1, t) -> np.ndarray:
    """Shortest-arc spherical interpolation of unit quaternions (…,4) at fractions t (…)."""
    q0 = quat_normalize(q0)
    q1 = quat_normalize(q1)
    t = np.asarray(t, dtype=np.float64)[..., None]
    d = np.sum(q0 * q1, axis=-1, keepdims=True)
    q1 = np.where(d < 0, -q1, q1)
    d = np.abs(d)
    theta = np.arccos(np.clip(d, -1.0, 1.0))
    sin = np.sin(theta)
    small = sin < 1e-6
    w0 = np.where(small, 1 - t, np.sin((1 - t) * theta) / np.where(small, 1, sin))
    w1 = np.where(small, t, np.sin(t * theta) / np.where(small, 1, sin))
    return quat_normalize(w0 * q0 + w1 * q1)


def quat_angle(a, b) -> np.ndarray:
    """Angle in radians between rotations a and b (sign-agnostic)."""
    d = np.abs(np.sum(quat_normalize(a) * quat_normalize(b), axis=-1))
    return 2 * np.arccos(np.clip(d, 0.0, 1.0))


# The same in x, y, z, w order (MMD's and Granny's files, glTF): the w-first functions above on reordered axes.

def quat_multiply_xyzw(a, b) -> np.ndarray:
    return quat_multiply(np.asarray(a)[..., [3, 0, 1, 2]], np.asarray(b)[..., [3, 0, 1, 2]])[..., [1, 2, 3, 0]]


def slerp_xyzw(q0, q1, s) -> np.ndarray:
    q0 = np.asarray(q0, np.float64)[..., [3, 0, 1, 2]]
    q1 = np.asarray(q1, np.float64)[..., [3, 0, 1, 2]]
    return slerp(q0, q1, s)[..., [1, 2, 3, 0]]


def quat_xyzw_to_matrix3(q) -> np.ndarray:
    return quat_to_matrix3(np.asarray(q, np.float64)[..., [3, 0, 1, 2]])
