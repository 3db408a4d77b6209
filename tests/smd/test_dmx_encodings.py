"""DMX export per engine branch (issue 51): each `--dmx-version` writes the binary encoding and model format that
branch's loader takes, or keyvalues2 text with `--keyvalues2`, and the file read back holds the scene.

Binary 2, 4, 5 and keyvalues2 are read back by srctools (an independent reader, test-only); binary 9, which
srctools does not read, by `_Binary9`, a parser written here from the layout alone (docs/source.md §6.6). The
expected values are worked out here from the trees those readers give (`_content`): joints in `children`
order with their base-state transforms, vertex fields through their `Indices`, weights per position value named
through the joint list of the model format, faces fanned into triangles, delta states added to the positions
they name; they are compared with the scene written, and for binary 9 with the tree Blender Source Tools wrote of
the same scene."""
from __future__ import annotations

import io
import pathlib
import struct
import uuid

import numpy as np
import pytest

from skinbridge.core import model as cm
from skinbridge.core.errors import ExportError
from skinbridge.io_smd import DMX_OPTIONS
from skinbridge.io_smd.dmx import convert as dmx_convert
from skinbridge.io_smd.dmx import dmx
from skinbridge.io_smd.dmx import write as dmx_write
from skinbridge.io_smd.dmx.records import Attribute, AttrType, Element

from conftest import run_cli

try:
    import srctools.dmx as srctools_dmx
except ImportError:  # the independent reader is test-only
    srctools_dmx = None

BST_DIR = pathlib.Path(__file__).resolve().parents[2].parent / "shared" / "interop" / "bst_written"
TOL = 1e-6
# what the issue asks of each branch: (binary encoding version, model format version)
BRANCHES = {"SOURCE2": (9, 22), "SFM": (5, 18), "L4D2": (4, 15), "TF2": (2, 1)}
RATE = 24.0


# -- a tree both readers give ----------------------------------------------------------------------------------

class Node:
    """An element: type, name and its attributes by name as (type name, array, value)."""

    def __init__(self, etype: str, name: str):
        self.type, self.name, self.attrs = etype, name, {}

    def __getitem__(self, key):
        return self.attrs[key][2]

    def __contains__(self, key) -> bool:
        return key in self.attrs

    def kind(self, key) -> str:
        return self.attrs[key][0]


_SRCTOOLS_ITER = {"int": "iter_int", "float": "iter_float", "bool": "iter_bool", "string": "iter_str",
                  "time": "iter_time", "vector2": "iter_vec2", "vector3": "iter_vec3", "quaternion": "iter_quat",
                  "element": "iter_elem"}


def _from_srctools(e, memo: dict) -> Node | None:
    if e is None or getattr(e, "is_null", False):
        return None
    if id(e) in memo:
        return memo[id(e)]
    node = memo[id(e)] = Node(e.type, e.name)
    for a in e.values():
        kind = a.type.value
        items = list(getattr(a, _SRCTOOLS_ITER[kind])())
        if kind == "element":
            items = [_from_srctools(x, memo) for x in items]
        elif kind in ("vector2", "vector3", "quaternion"):
            items = [[float(c) for c in v] for v in items]
        elif kind == "time":
            items = [float(t) for t in items]
        value = items if a.is_array else items[0]
        if kind not in ("element", "string"):
            value = np.array(value, np.float64)
        node.attrs[a.name] = (kind, a.is_array, value)
    return node


def _srctools_tree(data: bytes) -> tuple[Node, str, int]:
    root, fmt, version = srctools_dmx.Element.parse(io.BytesIO(data))
    return _from_srctools(root, {}), fmt, version


class _Binary9:
    """DMX binary 9 as laid out: the header comment, a newline and a NUL; i32 prefix element count, each an i32
    attribute count and attributes with inline names; the string table (i32 count, NUL-ended strings); i32
    element count, each element's type and name as i32 table indices and a 16-byte id; then each element's
    attributes: i32 count, name (i32 table index), u8 type code, value. Codes 1 element (i32 index, -1 null),
    2 int, 3 float, 4 bool, 5 string (a single one an i32 table index, in arrays inline), 6 binary, 7 time (i32
    ticks of 1/10000 s), 8 color, 9-11 vector2-4, 12 qangle, 13 quaternion, 14 matrix, 15 uint64, 16 uint8; an
    array is its item's code + 32, an i32 count first."""

    FIXED = {2: ("<i", 1, "int"), 3: ("<f", 1, "float"), 4: ("<B", 1, "bool"), 7: ("<i", 1, "time"),
             8: ("<B", 4, "color"), 9: ("<f", 2, "vector2"), 10: ("<f", 3, "vector3"), 11: ("<f", 4, "vector4"),
             12: ("<f", 3, "qangle"), 13: ("<f", 4, "quaternion"), 14: ("<f", 16, "matrix"),
             15: ("<Q", 1, "uint64"), 16: ("<B", 1, "uint8")}

    def __init__(self, data: bytes):
        self.data = data
        end = data.index(b"-->") + 3
        self.header = data[:end].decode()
        assert data[end:end + 2] == b"\n\0"
        self.pos = end + 2

    def take(self, fmt: str, n: int = 1):
        size = struct.calcsize(fmt[0] + fmt[1:] * n)
        out = struct.unpack_from("<" + fmt[1:] * n, self.data, self.pos)
        self.pos += size
        return out if n != 1 else out[0]

    def cstring(self) -> str:
        end = self.data.index(b"\0", self.pos)
        text = self.data[self.pos:end].decode()
        self.pos = end + 1
        return text

    def parse(self) -> Node:
        for _ in range(self.take("<i")):  # prefix elements: attributes with inline names (skipped here)
            for _ in range(self.take("<i")):
                self.cstring()
                self.value(self.take("<B"), inline=True)
        self.strings = [self.cstring() for _ in range(self.take("<i"))]
        nodes = []
        for _ in range(self.take("<i")):
            etype, name = self.strings[self.take("<i")], self.strings[self.take("<i")]
            self.pos += 16
            nodes.append(Node(etype, name))
        self.refs = []
        for node in nodes:
            for _ in range(self.take("<i")):
                name = self.strings[self.take("<i")]
                code = self.take("<B")
                node.attrs[name] = self.value(code, inline=False)
        assert self.pos == len(self.data), "bytes after the last element"
        for node in nodes:
            for name, (kind, array, value) in node.attrs.items():
                if kind == "element":
                    picked = [None if i < 0 else nodes[i] for i in value]
                    node.attrs[name] = (kind, array, picked if array else picked[0])
        return nodes[0]

    def value(self, code: int, inline: bool) -> tuple[str, bool, object]:
        array = code > 32
        item = code - 32 if array else code
        n = self.take("<i") if array else 1
        if item == 1:
            return "element", array, [self.take("<i") for _ in range(n)]
        if item == 5:
            if array or inline:
                texts = [self.cstring() for _ in range(n)]
            else:
                texts = [self.strings[self.take("<i")]]
            return "string", array, texts if array else texts[0]
        if item == 6:
            blobs = []
            for _ in range(n):
                size = self.take("<i")
                blobs.append(self.data[self.pos:self.pos + size])
                self.pos += size
            return "binary", array, blobs if array else blobs[0]
        fmt, count, kind = self.FIXED[item]
        flat = np.array(self.take(fmt, n * count) if n * count != 1 else [self.take(fmt)], np.float64)
        if kind == "time":
            flat = flat / 10000
        values = flat.reshape(n, count) if count > 1 else flat
        return kind, array, values if array else values[0]


# -- what a model tree holds -----------------------------------------------------------------------------------

def _matrix(t: Node) -> np.ndarray:
    """A DmeTransform: translation then (x, y, z, w) rotation."""
    x, y, z, w = t["orientation"] / np.linalg.norm(t["orientation"])
    m = np.eye(4)
    m[:3, :3] = [[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                 [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                 [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]]
    m[:3, 3] = t["position"]
    return m


def _fans(faces: np.ndarray) -> list[tuple[int, int, int]]:
    """Each polygon of a face set's -1-closed list as the fan from its first corner."""
    out, poly = [], []
    for i in faces.astype(int):
        if i >= 0:
            poly.append(i)
            continue
        out += [(poly[0], poly[k], poly[k + 1]) for k in range(1, len(poly) - 1)]
        poly = []
    return out


def _content(root: Node, fmt: int) -> dict:
    """Bones (name, parent, bind), and per mesh the corner values in model space, weights by bone (a mesh node
    under a joint without weights: all on that joint), fanned triangles by material and shape keys, as the model
    format `fmt` names them."""
    old = fmt < 22
    kw = ({"pos": "positions", "norm": "normals", "uv": "textureCoordinates", "w": "jointWeights",
           "j": "jointIndices"} if old else {"pos": "position$0", "norm": "normal$0", "uv": "texcoord$0",
                                               "w": "blendweights$0", "j": "blendindices$0"})
    model = root["model"] if "model" in root else root["skeleton"]
    base = {t.name: t for t in model["baseStates"][0]["transforms"]}
    bones, meshes = [], []

    def walk(node: Node, parent: int, above: np.ndarray) -> None:
        for c in node["children"] if "children" in node else []:
            local = _matrix(base[c.name] if c.name in base and c.type == "DmeJoint" else c["transform"])
            if c.type == "DmeDag" and "shape" in c:
                meshes.append((c["shape"], above @ local, parent))
            else:
                bones.append((c.name, parent, above @ local, c))
                walk(c, len(bones) - 1, above @ local)

    walk(model, -1, np.eye(4))
    names = [b[0] for b in bones]
    if fmt >= 11:  # blend indices name jointList entries (the DmeModel first in 22)
        slots = [e.name if e.type == "DmeJoint" else None for e in model["jointList"]]
    else:  # before 11: jointTransforms entries, a joint's own transform
        owner = {id(b[3]["transform"]): b[0] for b in bones}
        slots = [owner.get(id(t)) for t in model["jointTransforms"]]
    out = {"bones": names, "parents": [b[1] for b in bones], "binds": np.array([b[2] for b in bones]),
           "meshes": {}}
    for mesh, place, parent in meshes:
        data = mesh["currentState"]
        p_idx = data[kw["pos"] + "Indices"].astype(int)
        positions = data[kw["pos"]] @ place[:3, :3].T + place[:3, 3]
        got = {"positions": positions[p_idx],
               "normals": (data[kw["norm"]] @ place[:3, :3].T)[data[kw["norm"] + "Indices"].astype(int)],
               "uv": data[kw["uv"]][data[kw["uv"] + "Indices"].astype(int)],
               "fields": list(data["vertexFormat"])}
        weights = np.zeros((len(p_idx), len(names)))
        if kw["w"] in data:
            count = int(data["jointCount"])
            w = data[kw["w"]].reshape(-1, count)[p_idx]
            j = data[kw["j"]].astype(int).reshape(-1, count)[p_idx]
            for c in range(count):
                bone = np.array([names.index(slots[k]) if slots[k] in names else -1 for k in j[:, c]])
                keep = (bone >= 0) & (w[:, c] > 0)
                np.add.at(weights, (np.flatnonzero(keep), bone[keep]), w[keep, c])
        elif parent >= 0:  # a mesh node under a joint, without weights, moves with that joint
            weights[:, parent] = 1
        got["weights"] = weights
        got["triangles"] = {fs["material"]["mtlName"]: _fans(fs["faces"]) for fs in mesh["faceSets"]}
        got["shapes"] = {}
        for delta in mesh["deltaStates"] if "deltaStates" in mesh else []:
            moved = data[kw["pos"]].copy()
            np.add.at(moved, delta[kw["pos"] + "Indices"].astype(int), delta[kw["pos"]].reshape(-1, 3))
            got["shapes"][delta.name] = (moved @ place[:3, :3].T + place[:3, 3])[p_idx]
        out["meshes"][mesh.name] = got
    return out


def _assert_holds_scene(found: dict, scene: cm.Scene) -> None:
    skel = scene.skeleton
    assert found["bones"] == skel.names and found["parents"] == list(skel.parents)
    assert np.abs(found["binds"] - skel.binds()).max() <= TOL
    assert list(found["meshes"]) == [m.name for m in scene.meshes]
    for m in scene.meshes:
        got = found["meshes"][m.name]
        assert np.abs(got["positions"] - m.positions).max() <= TOL
        assert np.abs(got["normals"] - m.normals).max() <= TOL
        assert np.abs(got["uv"] - m.uvs[0][1]).max() <= TOL
        dense = np.zeros((len(m.positions), len(skel.bones)))
        np.add.at(dense, (np.repeat(np.arange(len(m.positions)), m.joints.shape[1]), m.joints.reshape(-1)),
                  m.weights.reshape(-1))
        assert np.abs(got["weights"] - dense).max() <= TOL
        by_material = {}
        for tri, slot in zip(m.triangles.tolist(), m.material_indices):
            by_material.setdefault(scene.materials[m.materials[slot]].name, []).append(tuple(tri))
        assert got["triangles"] == by_material
        assert list(got["shapes"]) == [k.name for k in m.shape_keys]
        for k in m.shape_keys:
            assert np.abs(got["shapes"][k.name] - k.positions).max() <= TOL


# -- the scene written -----------------------------------------------------------------------------------------

def _scene() -> cm.Scene:
    """Two bones (the tip 1 up the root, turned 90° about Z), a quad and a triangle of two materials weighted
    to both, a shape key moving one vertex, and an animation moving the tip over three frames at 24 fps."""
    root = cm.Bone("root", -1, np.eye(4), np.zeros(3), np.array([1.0, 0, 0, 0]), np.ones(3))
    h = np.sqrt(0.5)
    tip_bind = np.array([[0, -1, 0, 0], [1, 0, 0, 0], [0, 0, 1, 1], [0, 0, 0, 1]], float)
    tip = cm.Bone("tip", 0, tip_bind, np.array([0, 0, 1.0]), np.array([h, 0, 0, h]), np.ones(3))
    positions = np.array([[0, 0, 0], [1, 0, 0], [1, 0, 1], [0, 0, 1], [0.5, 0, 1.5]], np.float32)
    mesh = cm.Mesh("body", positions, np.array([[0, 1, 2], [0, 2, 3], [3, 2, 4]], np.int32))
    mesh.normals = np.tile(np.array([0, -1, 0], np.float32), (5, 1))
    mesh.uvs = [("UVMap", np.array([[0, 0], [1, 0], [1, 0.5], [0, 0.5], [0.5, 1]], np.float32))]
    mesh.joints = np.array([[0, 1], [0, 1], [1, 0], [1, 0], [1, 0]], np.int32)
    mesh.weights = np.array([[1, 0], [0.75, 0.25], [0.5, 0.5], [1, 0], [1, 0]], np.float32)
    mesh.material_indices = np.array([0, 0, 1])
    mesh.materials = [0, 1]
    smile = positions.copy()
    smile[4] += [0, 0.25, 0.5]
    mesh.shape_keys = [cm.ShapeKey("Smile", smile)]
    track = cm.Track("tip", np.array([0, 1, 2]) / RATE, np.array([[0, 0, 1], [0, 0.5, 1], [0, 1, 1.25]]),
                     np.array([0.0]), np.array([[h, 0, 0, h]]))
    wave = cm.Animation("wave", 2 / RATE, [track])
    return cm.Scene(name="enc", skeleton=cm.Skeleton("rig", [root, tip]), meshes=[mesh],
                    materials=[cm.Material("skin"), cm.Material("metal")], animations=[wave])


def _write(tmp_path, scene: cm.Scene, branch: str, text: bool = False) -> tuple[bytes, bytes, list[str]]:
    paths, warnings = dmx_write.write_files(scene, str(tmp_path), "enc", RATE, True, branch, text)
    assert [pathlib.Path(p).name for p in paths] == ["enc.dmx", "wave.dmx", "enc.qc"]
    return pathlib.Path(paths[0]).read_bytes(), pathlib.Path(paths[1]).read_bytes(), warnings


def _assert_layout(model: Node, fmt: int) -> None:
    """Blender Source Tools' model-format rules: axisSystem in 22 only, jointList from 11 (the DmeModel first in
    22), jointTransforms before 21."""
    assert ("axisSystem" in model) == (fmt >= 22)
    assert ("jointList" in model) == (fmt >= 11)
    assert ("jointTransforms" in model) == (fmt < 21)
    if fmt >= 11:
        assert (model["jointList"][0] is model) == (fmt >= 22)


def _assert_motion(root: Node, fmt: int) -> None:
    """The clip: key times as `time` values from model 12 (int ticks before), the frame rate a float in 22 (an
    int before), the duration as `duration` from 11 (`durationTime` ticks before); the tip's keys at frames
    0, 1, 2 of 24 fps with the animation's values."""
    clip = root["animationList"]["animations"][0]
    assert clip.kind("frameRate") == ("float" if fmt >= 22 else "int") and float(clip["frameRate"]) == RATE
    frame = clip["timeFrame"]
    if fmt >= 11:
        assert frame.kind("duration") == "time" and float(frame["duration"]) == pytest.approx(2 / RATE, abs=1e-4)
    else:
        assert "duration" not in frame and frame.kind("durationTime") == "int" and int(frame["durationTime"]) == 833
    (channel,) = [c for c in clip["channels"] if c.name == "tip_p"]
    layer = channel["log"]["layers"][0]
    assert layer.kind("times") == ("time" if fmt > 11 else "int")
    ticks = np.array([0, 417, 833])  # 1/24 s and 2/24 s in whole ticks of 1/10000 s
    assert np.array_equal(layer["times"], ticks / 10000 if fmt > 11 else ticks)
    assert np.abs(layer["values"] - [[0, 0, 1], [0, 0.5, 1], [0, 1, 1.25]]).max() <= TOL


# -- tests -----------------------------------------------------------------------------------------------------

def test_branches_are_the_option_choices_and_the_issue_values():
    values = [v for v, _, _ in next(o for o in DMX_OPTIONS if o.name == "dmx_version").choices]
    assert values == ["AUTO", *BRANCHES]
    assert dmx_write.BRANCHES == BRANCHES and dmx_write.DEFAULT_BRANCH == "SOURCE2"


@pytest.mark.skipif(srctools_dmx is None, reason="srctools (test-only reference) not installed")
@pytest.mark.parametrize("branch, text", [("SFM", False), ("L4D2", False), ("TF2", False), ("SOURCE2", True),
                                          ("SFM", True), ("L4D2", True), ("TF2", True)])
def test_srctools_reads_each_encoding_back_equal_to_the_scene(tmp_path, branch, text):
    binary, fmt = BRANCHES[branch]
    scene = _scene()
    model_bytes, motion_bytes, warnings = _write(tmp_path, scene, branch, text)
    assert warnings == []
    encoding = f"keyvalues2 {1}" if text else f"binary {binary}"
    head = f"<!-- dmx encoding {encoding} format model {fmt} -->\n".encode()
    assert model_bytes.startswith(head) and motion_bytes.startswith(head)
    root, name, version = _srctools_tree(model_bytes)
    assert (name, version) == ("model", fmt)
    _assert_layout(root["model"], fmt)
    _assert_holds_scene(_content(root, fmt), scene)
    motion, _, _ = _srctools_tree(motion_bytes)
    _assert_layout(motion["skeleton"], fmt)
    _assert_motion(motion, fmt)
    qc = (tmp_path / "enc.qc").read_text()
    assert f"DMX {encoding} (model {fmt})" in qc


def test_binary_9_reads_back_as_its_layout_says_and_as_bst_writes_the_same_scene(tmp_path):
    """BST's AllTypes (binary 9, model 22) read by `_Binary9`, and our binary 9 write of the scene imported from
    it: the same bones, corners, weights, triangles and shape keys within 1e-6, and the scene's values."""
    bst = (BST_DIR / "AllTypes_binary9.dmx").read_bytes()
    theirs = _content(_Binary9(bst).parse(), 22)
    scene, warnings = dmx_convert.load("AllTypes_binary9.dmx", bst)
    assert warnings == [] and len(scene.meshes) == 6
    model_bytes = dmx_write.write_files(scene, str(tmp_path), "AllTypes", RATE, False, "SOURCE2")[0][0]
    data = pathlib.Path(model_bytes).read_bytes()
    parser = _Binary9(data)
    root = parser.parse()
    assert parser.header == "<!-- dmx encoding binary 9 format model 22 -->"
    _assert_layout(root["model"], 22)
    ours = _content(root, 22)
    assert ours["bones"] == theirs["bones"] and ours["parents"] == theirs["parents"]
    assert np.abs(ours["binds"] - theirs["binds"]).max() <= TOL
    assert list(ours["meshes"]) == list(theirs["meshes"])
    for name, got in ours["meshes"].items():
        want = theirs["meshes"][name]
        for key in ("positions", "normals", "uv", "weights"):
            assert np.abs(got[key] - want[key]).max() <= TOL, (name, key)
        assert got["triangles"] == want["triangles"]
        # a mesh node under a joint is written weighted to it, in model space: its only fields BST's lacks
        assert [f for f in got["fields"] if f not in want["fields"]] in ([], ["blendweights$0", "blendindices$0"])
        assert list(got["shapes"]) == list(want["shapes"])
        for k in got["shapes"]:
            assert np.abs(got["shapes"][k] - want["shapes"][k]).max() <= TOL
    for m in scene.meshes:  # and the scene's values
        got = ours["meshes"][m.name]
        assert np.abs(got["positions"] - m.positions).max() <= TOL
        assert np.abs(got["uv"] - m.uvs[0][1]).max() <= TOL


def test_our_binary_9_of_the_test_scene_holds_it(tmp_path):
    scene = _scene()
    model_bytes, motion_bytes, warnings = _write(tmp_path, scene, "AUTO")
    assert warnings == []
    root = _Binary9(model_bytes).parse()
    _assert_holds_scene(_content(root, 22), scene)
    _assert_motion(_Binary9(motion_bytes).parse(), 22)


@pytest.mark.skipif(srctools_dmx is None, reason="srctools (test-only reference) not installed")
def test_binary_5_model_18_is_laid_out_as_bst_writes_it(tmp_path):
    """BST's Cube_Armature (binary 5, model 18) and our SFM write of it, read by srctools: the same element
    types, each with every attribute BST writes (ours adds empty `deltaStates` and a mesh node's `children`)."""
    bst = (BST_DIR / "Cube_Armature_binary5.dmx").read_bytes()
    scene, _ = dmx_convert.load("Cube_Armature_binary5.dmx", bst)
    path = dmx_write.write_files(scene, str(tmp_path), "Cube", RATE, False, "SFM")[0][0]
    theirs, _, _ = _srctools_tree(bst)
    ours, _, version = _srctools_tree(pathlib.Path(path).read_bytes())
    assert version == 18

    def shape(node: Node, seen: dict) -> None:
        if node is None or id(node) in seen:
            return
        seen[id(node)] = (node.type, tuple(sorted(node.attrs)))
        for kind, array, value in node.attrs.values():
            if kind == "element":
                for child in value if array else [value]:
                    shape(child, seen)

    found = []
    for tree in (theirs, ours):
        seen = {}
        shape(tree, seen)
        types = {}
        for t, names in seen.values():
            types.setdefault(t, set()).update(names)
        found.append(types)
    assert found[0].keys() == found[1].keys()
    for t, names in found[0].items():
        assert names <= found[1][t], t
    bones = _content(ours, 18)
    assert bones["bones"] == scene.skeleton.names


def test_an_imported_file_keeps_its_encoding_unless_a_branch_or_text_is_chosen(tmp_path):
    """As Read writes the imported bytes; keyvalues2 re-encodes the same elements in the file's model version;
    a branch of another model version writes the scene anew, saying so."""
    bst = (BST_DIR / "Cube_Armature_binary5.dmx").read_bytes()
    scene, _ = dmx_convert.load("Cube_Armature_binary5.dmx", bst)
    scene.extras["dmx_source"] = bst
    write = dmx_write.write_files
    path = write(scene, str(tmp_path / "a"), "Cube", RATE, False, "AUTO")[0][0]
    assert pathlib.Path(path).read_bytes() == bst
    path = write(scene, str(tmp_path / "b"), "Cube", RATE, False, "SFM")[0][0]
    assert pathlib.Path(path).read_bytes() == bst  # already binary 5, model 18
    path, warnings = write(scene, str(tmp_path / "c"), "Cube", RATE, False, "AUTO", True)
    text = pathlib.Path(path[0]).read_bytes()
    assert warnings == [] and text.startswith(b"<!-- dmx encoding keyvalues2 1 format model 18 -->")
    a, b = dmx.read(bst), dmx.read(text)
    assert sorted((e.id, e.type, e.name, [(x.name, x.type, x.array) for x in e.attributes]) for e in a.elements) \
        == sorted((e.id, e.type, e.name, [(x.name, x.type, x.array) for x in e.attributes]) for e in b.elements)
    path, warnings = write(scene, str(tmp_path / "d"), "Cube", RATE, False, "TF2")
    assert pathlib.Path(path[0]).read_bytes().startswith(b"<!-- dmx encoding binary 2 format model 1 -->")
    assert warnings == ["Cube.dmx: written anew as binary 2 (model 1) from the scene (the imported file is "
                        "binary 5 (model 18)): what SkinBridge does not map is not kept"]


def test_source_1_models_say_what_they_cannot_hold(tmp_path):
    """A second UV map has no field before model 22: it is left out with a warning; a rate that is no whole
    number of frames per second is rounded (a Source 1 clip's frameRate is an int)."""
    scene = _scene()
    m = scene.meshes[0]
    m.uvs.append(("Detail", m.uvs[0][1] * 2))
    track = scene.animations[0].tracks[0]
    track.translation_times = np.arange(3) / 29.97  # on the frames of 29.97 fps only
    scene.animations[0].length = 2 / 29.97
    path, warnings = dmx_write.write_files(scene, str(tmp_path), "enc", 29.97, False, "L4D2")
    assert warnings[0] == "mesh 'body': model 15 holds one UV map and no Source 2 vertex maps: Detail not written"
    assert "animation 'wave': sampled at 30 fps, not 29.97: model 15 holds a whole frame rate" in warnings


@pytest.mark.blender
@pytest.mark.slow
@pytest.mark.default_leg
@pytest.mark.parametrize("flags, head", [(["--dmx-version", "TF2"], b"binary 2 format model 1"),
                                         (["--dmx-version", "L4D2", "--keyvalues2"], b"keyvalues2 1 format model 15")])
def test_convert_fox_for_a_source_1_branch_and_compare(testdata, tmp_path, flags, head):
    """`convert --to dmx` with a branch: every file in its encoding, and `compare` finds the folder equal to
    Fox (binds, skinned vertices, every animation sample) within the tolerances."""
    out = tmp_path / "fox"
    r = run_cli("convert", testdata / "gltf" / "Fox.glb", "--to", "dmx", "-o", out, *flags)
    assert r.returncode == 0, r.stdout + r.stderr
    for name in ("Fox.dmx", "Run.dmx", "Survey.dmx", "Walk.dmx"):
        assert (out / name).read_bytes().startswith(b"<!-- dmx encoding " + head + b" -->\n"), name
    r = run_cli("compare", testdata / "gltf" / "Fox.glb", out)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "result: same within the tolerances" in r.stdout


@pytest.mark.skipif(srctools_dmx is None, reason="srctools (test-only reference) not installed")
def test_a_source_1_model_holds_three_weights_a_vertex(tmp_path):
    """Source 1's studiomdl refuses a jointCount above 3: a vertex of four influences keeps its three largest,
    scaled to its total; the others are written as they are."""
    scene = _scene()
    m = scene.meshes[0]
    m.joints = np.hstack([m.joints, m.joints])
    m.weights = np.hstack([m.weights, np.zeros_like(m.weights)])
    m.weights[0] = [0.4, 0.3, 0.2, 0.1]  # bones 0, 1, 0, 1
    model_bytes, _, warnings = _write(tmp_path, scene, "TF2")
    assert warnings == ["mesh 'body': 1 vertices have more than 3 weights: the 3 largest written, scaled to the "
                        "vertex's total (Source 1's studiomdl takes no more)"]
    root, _, _ = _srctools_tree(model_bytes)
    assert int(root["model"]["children"][-1]["shape"]["currentState"]["jointCount"]) == 3
    got = _content(root, 1)["meshes"]["body"]["weights"]
    want = np.array([[0.6 / 0.9, 0.3 / 0.9], [0.75, 0.25], [0.5, 0.5], [0, 1], [0, 1]])
    assert np.abs(got - want).max() <= TOL
    assert m.weights.shape == (5, 4)  # the scene is not changed


def test_more_names_than_a_16_bit_table_holds_is_refused(tmp_path, monkeypatch):
    """Binary 2-4 index their string table with 16 bits: a file needing 32,768 names is refused (by the codec,
    then by the export naming the file), binary 5 writes it."""
    root = Element("DmElement", "root", uuid.UUID(int=1))
    root.attributes = [Attribute(f"a{i}", AttrType.INT, False, np.array(i, np.int32)) for i in range(32766)]
    big = dmx.DmxFile("binary", 4, "model", 15, [root], after_header=b"\n\0")
    with pytest.raises(ValueError, match=r"^32768 distinct names: binary 4's string table holds at most 32767"):
        dmx.write(big)  # the table: the type, the name and 32,766 attribute names
    root.attributes.pop()
    assert len(dmx.read(dmx.write(big)).strings) == 32767
    root.attributes.append(Attribute("a32765", AttrType.INT, False, np.array(0, np.int32)))
    monkeypatch.setattr(dmx_write, "model_dmx", lambda *args: big)
    with pytest.raises(ExportError, match=r"^enc\.dmx: 32768 distinct names: binary 4's string table holds at "
                                          r"most 32767 \(16-bit indices\): choose a branch of a later binary "
                                          r"encoding, or keyvalues2$"):
        dmx_write.write_files(_scene(), str(tmp_path), "enc", RATE, False, "L4D2")
    big.encoding_version = 5
    assert len(dmx.read(dmx.write(big)).strings) == 32768
