"""The edited DMX export's patch (io_smd/dmx/patch.py, docs/source.md §6.6) without Blender: what the import makes
of a Blender Source Tools file, given back unchanged, writes the file's own bytes (binary, keyvalues2, gzip);
an edit changes the edited values only."""
from __future__ import annotations

import gzip
import pathlib

import numpy as np
import pytest

from skinbridge.io_smd.dmx import convert, dmx, patch
from skinbridge.io_smd.dmx.records import AttrType

BST = pathlib.Path(__file__).resolve().parents[2].parent / "shared" / "interop" / "bst_written"
FILES = ["Cube_Armature_binary5.dmx", "Cube_Armature_kv2.dmx", "AllTypes_binary9.dmx", "Dice_binary5.dmx"]


def _scene(data: bytes):
    """The import's core scene, with each mesh's polygons as the Blender export reads them (`dmx_polygons`): the
    file's own, corner for corner."""
    d = dmx.read(data)
    scene, _ = convert.to_scene(d, "model", with_animations=False)
    meshes = [e for e in d.elements if e.type == "DmeMesh"]
    by_name = {e.name: e for e in meshes}
    for m in scene.meshes:
        sizes, corners, slots = [], [], []
        sets = [s for s in convert.elements_of(by_name[m.name], "faceSets") if len(s.value("faces", []))]
        for k, face_set in enumerate(sets):
            faces = np.append(np.asarray(face_set.value("faces")), -1)
            ends = np.flatnonzero(faces == -1)
            for a, b in zip(np.concatenate([[0], ends[:-1] + 1]), ends):
                if b - a >= 3:
                    sizes.append(b - a)
                    corners += faces[a:b].tolist()
                    slots.append(k)
        m.extras["dmx_polygons"] = {"sizes": np.array(sizes), "corners": np.array(corners), "slots": np.array(slots)}
    return scene


@pytest.mark.parametrize("name", FILES)
def test_what_the_import_made_writes_the_files_own_bytes(name):
    data = (BST / name).read_bytes()
    assert patch.patched(data, _scene(data)) == data


def test_a_gzip_file_comes_back_as_it_was():
    data = gzip.compress((BST / "Cube_Armature_kv2.dmx").read_bytes(), mtime=0)
    assert patch.patched(data, _scene(data)) == data


@pytest.mark.parametrize("name", FILES[:2])
def test_a_renamed_bone_renames_its_elements_only(name):
    data = (BST / name).read_bytes()
    scene = _scene(data)
    old = scene.skeleton.bones[0].name
    scene.skeleton.bones[0].name = "renamed"
    a, b = dmx.read(data), dmx.read(patch.patched(data, scene))
    assert [e.id for e in a.elements] == [e.id for e in b.elements]
    changed = [(e.type, f.name) for e, f in zip(a.elements, b.elements) if e.name != f.name]
    assert changed and all(n == "renamed" for _, n in changed) and {t for t, _ in changed} <= {"DmeJoint",
                                                                                              "DmeTransform"}
    assert all(e.name == old for e, f in zip(a.elements, b.elements) if e.name != f.name)


@pytest.mark.parametrize("name", FILES[:2])
def test_a_moved_vertex_changes_its_position_value_only(name):
    data = (BST / name).read_bytes()
    scene = _scene(data)
    m = scene.meshes[0]
    d = dmx.read(data)
    data_el = next(e for e in d.elements if e.type == "DmeVertexData")
    index = np.asarray(data_el.value("positionsIndices"))
    m.positions = np.array(m.positions)
    m.positions[index == index[0]] += np.float32(0.25)  # every DMX vertex of position value index[0]
    a, b = d, dmx.read(patch.patched(data, scene))
    for e, f in zip(a.elements, b.elements):
        for x, y in zip(e.attributes, f.attributes):
            if x.type in dmx.FIXED and not np.array_equal(x.value, y.value):
                assert (e.type, x.name) == ("DmeVertexData", "positions")
                rows = np.flatnonzero((np.asarray(x.value) != np.asarray(y.value)).any(axis=1))
                assert rows.tolist() == [int(index[0])]
            elif x.type == AttrType.STRING:
                assert x.value == y.value
