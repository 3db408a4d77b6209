"""DMX model → core Scene: bones (names, parents, bind matrices), vertices, normals, UVs, weights and shape keys
equal what srctools (an independent reader, test-only) reads from the same files, within 1e-6. The expected
values are worked out here from srctools' tree alone: joints in `children` order with their base-state
transforms, vertex fields through their `Indices`, weights per position value, delta states added to the
position values they name."""
from __future__ import annotations

import io
import pathlib

import numpy as np
import pytest

from skinbridge.core.errors import FormatError
from skinbridge.io_smd.dmx import dmx
from skinbridge.io_smd.dmx import convert as dmx_convert

try:
    import srctools.dmx as srctools_dmx
except ImportError:  # the independent reader is test-only: only the test that uses it skips without it
    srctools_dmx = None

DMX_DIR = pathlib.Path(__file__).resolve().parents[2].parent / "shared" / "testdata" / "dmx"
MODELS = ["bst_Cube_NoArmature.dmx", "bst_Curve_Armature_BezierCurve.dmx", "bst_cloth_test_simple.dmx",
          "bst_walkn.dmx.gz"]
TOL = 1e-6


def _srctools_root(name: str):
    """srctools reads keyvalues2 and binary 1-5: a binary 9 sample goes to it as our binary 5 write of it (the
    codec tests show that file holds the same elements and values)."""
    d = dmx.read((DMX_DIR / name).read_bytes())
    if d.binary:
        d.encoding_version, d.strings, d.header, d.prefix, d.gzip = 5, None, None, [], None
    root, _, _ = srctools_dmx.Element.parse(io.BytesIO(dmx.write(d)))
    return root


def _matrix(t) -> np.ndarray:
    """Translation then rotation of a DmeTransform; the quaternion is (x, y, z, w), made unit length as the
    engine uses it (cloth's are 1.2e-7 off, which moves a child 17 units away by 3e-6)."""
    q = np.array([float(c) for c in t["orientation"].val_quat])
    x, y, z, w = q / np.linalg.norm(q)
    m = np.eye(4)
    m[:3, :3] = [[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                 [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                 [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]]
    m[:3, 3] = [float(c) for c in t["position"].val_vec3]
    return m


def _expected_bones(model) -> tuple[list[str], list[int], list[np.ndarray], dict]:
    states = list(model["baseStates"].iter_elem()) if "baseStates" in model else []
    base = {t.name: t for t in states[0]["transforms"].iter_elem()} if states else {}
    names, parents, binds, by_uuid = [], [], [], {}
    meshes = []

    def walk(e, parent: int) -> None:
        for c in (e["children"].iter_elem() if "children" in e else []):
            if c.type == "DmeDag" and "shape" in c and c["shape"].val_elem.type == "DmeMesh":
                meshes.append((c["shape"].val_elem, parent))
            elif c.type in ("DmeJoint", "DmeDag"):
                local = _matrix(base.get(c.name) or c["transform"].val_elem)
                by_uuid[c.uuid] = len(names)
                binds.append(local if parent < 0 else binds[parent] @ local)
                names.append(c.name)
                parents.append(parent)
                walk(c, len(names) - 1)
            elif c.type == "DmeModel":
                walk(c, parent)

    walk(model, -1)
    return names, parents, binds, {"by_uuid": by_uuid, "meshes": meshes}


_UP = {1: [[0, 0, 1], [0, 1, 0], [-1, 0, 0]], 2: [[1, 0, 0], [0, 0, -1], [0, 1, 0]], 3: np.eye(3)}


def _vec(attr, k: int) -> np.ndarray:
    return np.array([[float(c) for c in v] for v in attr.iter_vec3()] if k == 3 else
                    [[float(c) for c in v] for v in attr.iter_vec2()], np.float64).reshape(-1, k)


def _ints(attr) -> np.ndarray:
    return np.array(list(attr.iter_int()), np.int64)


@pytest.mark.skipif(srctools_dmx is None, reason="srctools (tools/requirements*.txt) missing")
@pytest.mark.parametrize("name", MODELS)
def test_model_equals_what_srctools_reads(name):
    root = _srctools_root(name)
    model = next(root[k].val_elem for k in ("model", "skeleton") if k in root and not root[k].val_elem.is_null)
    up = np.eye(4)
    if "axisSystem" in model:  # Y up turns +90° about X into Blender's Z up, X up +90° about Y (walkn is Y up)
        up[:3, :3] = _UP[model["axisSystem"].val_elem["upAxis"].val_int]
    names, parents, binds, found = _expected_bones(model)
    binds = [up @ b for b in binds]
    scene, warnings = dmx_convert.load(name, (DMX_DIR / name).read_bytes())
    assert warnings == []
    skel = scene.skeleton
    assert (skel.names if skel else []) == names and (list(skel.parents) if skel else []) == parents
    if skel:
        assert np.abs(skel.binds() - np.array(binds)).max() <= TOL
    assert len(scene.meshes) == len(found["meshes"])
    joint_list = [e.uuid for e in model["jointList"].iter_elem()] if "jointList" in model else []
    for m, (mesh, parent) in zip(scene.meshes, found["meshes"]):
        data = mesh["currentState"].val_elem
        pos_idx = _ints(data["position$0Indices"])
        assert np.array_equal(up, np.eye(4))  # the samples with meshes are Z up
        assert np.abs(m.positions - _vec(data["position$0"], 3)[pos_idx]).max() <= TOL
        assert np.abs(m.normals - _vec(data["normal$0"], 3)[_ints(data["normal$0Indices"])]).max() <= TOL
        uv = _vec(data["texcoord$0"], 2)[_ints(data["texcoord$0Indices"])]
        assert data["flipVCoordinates"].val_bool and np.abs(m.uvs[0][1] - uv).max() <= TOL
        faces = [f for fs in mesh["faceSets"].iter_elem() for f in fs["faces"].iter_int()]
        assert len(m.triangles) == sum(n - 2 for n in np.diff(np.flatnonzero(np.array([-1] + faces) == -1)) - 1)
        if "blendweights$0" in data:
            count = data["jointCount"].val_int
            w = np.array(list(data["blendweights$0"].iter_float())).reshape(-1, count)[pos_idx]
            j = _ints(data["blendindices$0"]).reshape(-1, count)[pos_idx]
            # a weight on a joint-list entry that is no bone (the DmeModel itself) keeps the vertex still
            bone = np.array([found["by_uuid"].get(joint_list[k], -1) for k in j.reshape(-1)]).reshape(j.shape)
            w = np.where(bone < 0, 0, w)
            assert np.abs(m.weights - w).max() <= TOL
            used = w > 0
            assert list(m.joints[used]) == list(bone[used])
        else:
            assert m.weights is None or (parent >= 0 and (m.joints == parent).all())
        deltas = list(mesh["deltaStates"].iter_elem()) if "deltaStates" in mesh else []
        assert [k.name for k in m.shape_keys] == [d.name for d in deltas]
        for key, delta in zip(m.shape_keys, deltas):
            moved = _vec(data["position$0"], 3)
            np.add.at(moved, _ints(delta["position$0Indices"]), _vec(delta["position$0"], 3))
            assert np.abs(key.positions - moved[pos_idx]).max() <= TOL
            assert np.abs(key.positions - m.positions).max() > 0.1  # the sample's key moves something


def test_y_up_file_turns_to_z_up():
    d = dmx.read((DMX_DIR / "bst_cloth_test_simple.dmx").read_bytes())
    z_up, _ = dmx_convert.to_scene(d, "z")
    axis = next(e for e in d.elements if e.type == "DmeAxisSystem")
    axis.get("upAxis").value = np.array(2, np.int32)
    y_up, _ = dmx_convert.to_scene(d, "y")
    p, q = z_up.meshes[0].positions, y_up.meshes[0].positions
    assert np.allclose(q, np.stack([p[:, 0], -p[:, 2], p[:, 1]], 1), atol=1e-6)  # +90° about X
    z_head = z_up.skeleton.binds()[0][:3, 3]
    assert np.allclose(y_up.skeleton.binds()[0][:3, 3], [z_head[0], -z_head[2], z_head[1]], atol=1e-6)


def test_an_index_outside_its_values_is_a_format_error():
    d = dmx.read((DMX_DIR / "bst_Cube_NoArmature.dmx").read_bytes())
    data = next(e for e in d.elements if e.type == "DmeVertexData")
    data.get("texcoord$0Indices").value[3] = 99
    with pytest.raises(FormatError, match="texcoord\\$0Indices"):
        dmx_convert.to_scene(d, "bad")
