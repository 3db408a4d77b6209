"""The Fox reference. `skinbridge convert Fox.glb --to urhox` writes a Fox.mdl of exactly
130698 bytes whose content matches an independent numpy conversion of the GLB (docs/urho.md §5.2)."""
from __future__ import annotations

import numpy as np
import pytest

from support.gltf_numpy import Glb
from support.umd2_numpy import parse
from support.urho_walker import columns

pytestmark = pytest.mark.blender

FOX_SIZE = 130698  # the UrhoX reference file (docs/urho.md §5.4)
SEM_POS, SEM_NORMAL, SEM_TANGENT, SEM_TEX, SEM_COLOR, SEM_W, SEM_I = 0, 1, 3, 4, 5, 6, 7


@pytest.fixture(scope="module")
def glb(testdata):
    return Glb(testdata / "gltf" / "Fox.glb")


@pytest.fixture(scope="module")
def mdl(fox_mdl):
    data = fox_mdl.read_bytes()
    return data, parse(data)


@pytest.fixture(scope="module")
def reference(glb):
    """glb2mdl's conversion (docs/urho.md §5.2) done here with numpy: bones from the inverse bind matrices."""
    skin = glb.json["skins"][0]
    joints = skin["joints"]
    ibm = glb.accessor(skin["inverseBindMatrices"]).reshape(-1, 4, 4).transpose(0, 2, 1).astype(np.float64)
    world = np.linalg.inv(ibm)
    node_parent = glb.parents()
    parents = []
    for k, node in enumerate(joints):
        p = node_parent.get(node)
        parents.append(joints.index(p) if p in joints else k)
    local = np.array([world[k] if parents[k] == k else np.linalg.inv(world[parents[k]]) @ world[k]
                      for k in range(len(joints))])
    prim = glb.json["meshes"][0]["primitives"][0]["attributes"]
    pos = glb.accessor(prim["POSITION"]).astype(np.float64)
    return {"names": [glb.json["nodes"][n]["name"] for n in joints], "parents": parents, "ibm": ibm,
            "local": local, "pos": pos, "uv": glb.accessor(prim["TEXCOORD_0"]),
            "joints": glb.accessor(prim["JOINTS_0"]), "weights": glb.accessor(prim["WEIGHTS_0"]),
            "diag": float(np.linalg.norm(pos.max(0) - pos.min(0)))}


def _trs(m):
    t = m[:3, 3]
    s = np.linalg.norm(m[:3, :3], axis=0)
    r = m[:3, :3] / s
    w = np.sqrt(max(0.0, 1 + r[0, 0] + r[1, 1] + r[2, 2])) / 2
    q = np.array([w, (r[2, 1] - r[1, 2]) / (4 * w), (r[0, 2] - r[2, 0]) / (4 * w), (r[1, 0] - r[0, 1]) / (4 * w)])
    return t, q, s


def test_size_is_the_reference_size(mdl):
    data, parsed = mdl
    assert len(data) == FOX_SIZE
    assert parsed["end"] == len(data)


def test_vertex_layout_and_values(mdl, reference):
    _, p = mdl
    assert len(p["vbs"]) == 1
    vb = p["vbs"][0]
    assert vb["descs"] == [0x003, 0x103, 0x506, 0x402, 0x304, 0x604, 0x705]
    assert vb["stride"] == 72
    assert vb["count"] == len(reference["pos"]) == 1728
    assert vb["morph"] == (0, 0)
    cols = columns(vb)
    np.testing.assert_allclose(cols[(SEM_POS, 0)], reference["pos"], atol=1e-4, rtol=0)
    np.testing.assert_allclose(cols[(SEM_TEX, 0)], reference["uv"], atol=1e-6, rtol=0)
    np.testing.assert_allclose(cols[(SEM_W, 0)], reference["weights"], atol=1e-6, rtol=0)
    live = reference["weights"] > 0
    np.testing.assert_array_equal(cols[(SEM_I, 0)][live], reference["joints"][live])
    n = cols[(SEM_NORMAL, 0)].astype(np.float64)
    np.testing.assert_allclose(np.linalg.norm(n, axis=1), 1.0, atol=1e-5)
    # The glTF has no normals, so they are the flat face normals (glTF's rule), counter-clockwise.
    tri = reference["pos"].reshape(-1, 3, 3)
    face_n = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
    face_n /= np.linalg.norm(face_n, axis=1, keepdims=True)
    np.testing.assert_allclose(n, np.repeat(face_n, 3, axis=0), atol=1e-3)
    t = cols[(SEM_TANGENT, 0)].astype(np.float64)
    assert np.all(np.isin(t[:, 3], [-1.0, 1.0]))
    assert np.abs(np.sum(t[:, :3] * n, axis=1)).max() < 1e-3  # tangents lie in the surface


def test_indices_geometry_and_bounds(mdl, reference):
    _, p = mdl
    assert len(p["ibs"]) == 1
    np.testing.assert_array_equal(p["ibs"][0], np.arange(1728))
    assert p["ibs"][0].dtype == np.uint16
    assert len(p["geoms"]) == 1
    g = p["geoms"][0]
    assert g["mapping"] == list(range(24))
    assert g["lods"] == [(0.0, 0, 0, 0, 0, 1728)]
    assert p["morphs"] == 0
    np.testing.assert_allclose(p["bbox"][:3], reference["pos"].min(0), atol=1e-4)
    np.testing.assert_allclose(p["bbox"][3:], reference["pos"].max(0), atol=1e-4)
    assert p["centers"].shape == (1, 3)


def test_bones_match_the_inverse_bind_matrices(mdl, reference):
    _, p = mdl
    bones = p["bones"]
    assert [b["name"] for b in bones] == reference["names"]
    assert [b["parent"] for b in bones] == reference["parents"]
    assert bones[0]["parent"] == 0
    tol_t = 2e-6 * reference["diag"]
    for k, b in enumerate(bones):
        ibm = reference["ibm"][k]
        np.testing.assert_allclose(b["offset"][:, :3], ibm[:3, :3], atol=1e-5, err_msg=b["name"])
        np.testing.assert_allclose(b["offset"][:, 3], ibm[:3, 3], atol=tol_t, err_msg=b["name"])
        t, q, s = _trs(reference["local"][k])
        np.testing.assert_allclose(b["position"], t, atol=tol_t, err_msg=b["name"])
        np.testing.assert_allclose(b["scale"], s, atol=1e-5, err_msg=b["name"])
        sign = 1.0 if np.dot(b["rotation"], q) >= 0 else -1.0
        np.testing.assert_allclose(sign * b["rotation"], q, atol=1e-5, err_msg=b["name"])
