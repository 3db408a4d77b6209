"""An edited Urho3D model changes only where it was edited (issue 46, item 1): through File › Import and
File › Export, one vertex moved in Blender's mesh data; the files before and after read with our codec
(tests/support/urho_edits.py decides "only the edit").

Before: 27 of 30 bone-less models came out mirrored in z once a vertex moved (the axes were kept only while the
mesh was unchanged), the skinned Bezier line primitives got normal (0, 0, 0) and UV (0, 1) on every line vertex,
and Axes.mdl (three NaN normals) could not be exported after any edit."""
from __future__ import annotations

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from support import urho_edits  # noqa: E402

from skinbridge.blender.ops_common import LAST_OUTCOME  # noqa: E402
from skinbridge.io_urhox.model import convert, umd2  # noqa: E402
from skinbridge.io_urhox.model.umd2 import SEM, TYPE, VertexElement  # noqa: E402

pytestmark = pytest.mark.blender

MOVE = np.array([0.01, 0.02, 0.03])  # Blender axes


def _import(path) -> None:
    assert bpy.ops.import_scene.skinbridge_urhox(filepath=str(path)) == {"FINISHED"}


def _export(path, **options) -> None:
    assert bpy.ops.export_scene.skinbridge_urhox(filepath=str(path), **options) == {"FINISHED"}


def _move(vertex: int, by=MOVE) -> None:
    """As the UI would: the mesh data's vertex moved (Edit Mode's G writes the same position attribute)."""
    me = next(o for o in bpy.data.objects if o.type == "MESH").data
    me.vertices[vertex].co = np.asarray(me.vertices[vertex].co) + by


def _file_move(before: umd2.Model) -> np.ndarray:
    """MOVE in the axes the file was read with."""
    return convert.basis(convert.detect_profile(before))[1][:3, :3] @ MOVE


@pytest.mark.parametrize("name, profile", [("Box.mdl", "urhox"), ("MaterialPreview.mdl", "urho3d")])
def test_a_moved_vertex_is_the_only_change(clean_scene, testdata, tmp_path, name, profile):
    """Box (UMDL: Urho3D axes) under the urhox profile, MaterialPreview (UMD2: UrhoX axes) under urho3d: the
    profile whose axes are not the file's, which mirrored both in z."""
    src = testdata / "urho3d" / name
    before = umd2.read(src.read_bytes())
    _import(src)
    vertex = urho_edits.first_primitive_vertex(before)
    _move(vertex)
    out = tmp_path / name
    _export(out, profile=profile)
    after = umd2.read(out.read_bytes())
    assert urho_edits.classify(before, after, [vertex]) == (urho_edits.ONLY_THE_EDIT, "")
    was = before.vertex_buffers[0].vertices["POSITION0"][vertex].astype(np.float64)
    np.testing.assert_allclose(after.vertex_buffers[0].vertices["POSITION0"][vertex], was + _file_move(before),
                               atol=1e-6)


# -- lines ------------------------------------------------------------------------------------------------

LINE = [VertexElement(TYPE["VECTOR3"], SEM["POSITION"], 0), VertexElement(TYPE["VECTOR3"], SEM["NORMAL"], 0),
        VertexElement(TYPE["UBYTE4_NORM"], SEM["COLOR"], 0), VertexElement(TYPE["VECTOR2"], SEM["TEXCOORD"], 0),
        VertexElement(TYPE["VECTOR4"], SEM["BLENDWEIGHTS"], 0), VertexElement(TYPE["UBYTE4"], SEM["BLENDINDICES"], 0)]


def _bezier(n: int = 17) -> umd2.Model:
    """A cubic Bezier line as Urho3D's LinePrimitives/CubicBezier.mdl is made: a UMDL line list of n vertices
    weighted to the four control bones A-D under Root (Bernstein weights), normal (0, 0, 1), UV (t, t), white;
    here the vertices lie on the curve of the control points rather than all at the origin."""
    control = np.array([[0, 0, 0], [1, 2, 0], [2, -1, 0], [3, 1, 0]], np.float64)
    t = np.linspace(0.0, 1.0, n)
    weights = np.stack([(1 - t) ** 3, 3 * t * (1 - t) ** 2, 3 * t * t * (1 - t), t ** 3], axis=1)
    v = np.zeros(n, umd2.vertex_dtype(LINE))
    v["POSITION0"] = weights @ control
    v["NORMAL0"] = [0, 0, 1]
    v["COLOR0"] = 255
    v["TEXCOORD0"] = np.stack([t, t], axis=1)
    v["BLENDWEIGHTS0"] = weights
    v["BLENDINDICES0"] = [1, 2, 3, 4]
    m = umd2.Model(magic="UMDL")
    m.vertex_buffers = [umd2.VertexBuffer(LINE, v, legacy_mask=umd2.legacy_mask_of(LINE))]
    idx = np.stack([np.arange(n - 1), np.arange(1, n)], axis=1).reshape(-1).astype(np.uint16)
    m.index_buffers = [umd2.IndexBuffer(2, idx)]
    m.geometries = [umd2.Geometry(np.zeros(0, np.uint32), [umd2.LodLevel(0.0, 1, 0, 0, 0, len(idx))])]
    identity = np.array([1, 0, 0, 0], np.float32)  # w x y z
    for i, name in enumerate(["Root", "A", "B", "C", "D"]):
        at = np.zeros(3) if i == 0 else control[i - 1]
        offset = np.eye(4)[:3].copy()
        offset[:, 3] = -at
        m.bones.append(umd2.BoneRecord(name, 0, at.astype(np.float32), identity.copy(),
                                       np.ones(3, np.float32), offset.reshape(-1).astype(np.float32)))
    m.bbox_min, m.bbox_max = v["POSITION0"].min(0), v["POSITION0"].max(0)
    return m


@pytest.fixture
def bezier(tmp_path):
    path = tmp_path / "in" / "CubicBezier.mdl"
    path.parent.mkdir()
    path.write_bytes(umd2.write(_bezier()))
    return path


def test_line_vertices_keep_the_files_normals_and_uvs(clean_scene, bezier, tmp_path):
    """Blender holds no normal or UV on a vertex no face uses: the file's are written, in the axes written,
    by the default export and under the other profile, edited or not (they were (0, 0, 0) and (0, 1))."""
    before = umd2.read(bezier.read_bytes())
    _import(bezier)
    file_rows = before.vertex_buffers[0].vertices
    for profile in (None, "urhox"):
        out = tmp_path / f"{profile}.mdl"
        _export(out, **({} if profile is None else {"profile": profile}))
        rows = umd2.read(out.read_bytes()).vertex_buffers[0].vertices
        axes = profile or "urho3d"
        to = convert.basis(axes)[1][:3, :3] @ convert.basis("urho3d")[0][:3, :3]
        np.testing.assert_array_equal(rows["NORMAL0"], file_rows["NORMAL0"] @ to.T.astype(np.float32))
        np.testing.assert_array_equal(rows["TEXCOORD0"], file_rows["TEXCOORD0"])
        np.testing.assert_array_equal(rows["COLOR0"], file_rows["COLOR0"])
    assert bezier.read_bytes() == (tmp_path / "None.mdl").read_bytes()  # the default export: the file's bytes
    _move(5)
    out = tmp_path / "moved.mdl"
    _export(out)
    assert urho_edits.classify(before, umd2.read(out.read_bytes()), [5]) == (urho_edits.ONLY_THE_EDIT, "")


# -- non-finite normals -------------------------------------------------------------------------------------

def test_a_file_with_nan_normals_warns_and_exports_after_an_edit(clean_scene, testdata, tmp_path):
    """Box with NaN normals on three vertices of its last face (as Urho3D's Editor/Axes.mdl has three): import
    names them, and a vertex moved elsewhere exports with them kept; moving one of those vertices keeps its NaN
    normal (the file's, which Blender still holds) and writes its triangles' tangents from Blender where they
    are finite."""
    m = umd2.read((testdata / "urho3d" / "Box.mdl").read_bytes())
    bad = [20, 21, 23]
    m.vertex_buffers[0].vertices["NORMAL0"][bad] = np.nan
    src = tmp_path / "in" / "NaNBox.mdl"
    src.parent.mkdir()
    src.write_bytes(umd2.write(m))
    _import(src)
    assert any("non-finite normal (NORMAL0) at vertices 20, 21, 23" in w for w in LAST_OUTCOME.warnings), \
        LAST_OUTCOME.warnings
    before = umd2.read(src.read_bytes())
    _move(0)
    out = tmp_path / "moved.mdl"
    _export(out)
    after = umd2.read(out.read_bytes())
    assert urho_edits.classify(before, after, [0]) == (urho_edits.ONLY_THE_EDIT, "")
    assert np.isnan(after.vertex_buffers[0].vertices["NORMAL0"][bad]).all()
    _move(20)
    _export(out)
    after = umd2.read(out.read_bytes())
    assert urho_edits.classify(before, after, [0, 20]) == (urho_edits.ONLY_THE_EDIT, "")
    assert np.isnan(after.vertex_buffers[0].vertices["NORMAL0"][bad]).all()


def test_a_small_move_of_a_line_bones_rest_is_written(clean_scene, bezier, tmp_path):
    """Control bone A's rest moved in Edit Mode by 0.05 mm (the edit campaign moves a bone by a tenth of its
    length: 0.05 mm on Urho3D's Bezier primitives, whose bones all sit at the origin), inside the tolerance that
    tells Blender's float rounding from the file's values: the move is written (it was lost, the file came back
    unchanged): A's initial position and offset follow it, its initial rotation and every other bone and vertex
    stay the file's; and a larger move (a tenth of its length) is written once, not twice."""
    before = umd2.read(bezier.read_bytes())
    _import(bezier)
    arm = next(o for o in bpy.data.objects if o.type == "ARMATURE")
    bpy.context.view_layer.objects.active = arm
    for d in (5e-5, 0.1 * arm.data.bones["A"].length):
        _moved_rest_of_a(arm, d, before, tmp_path)


def _moved_rest_of_a(arm, d: float, before: umd2.Model, tmp_path) -> None:
    bpy.ops.object.mode_set(mode="EDIT")
    head = arm.data.edit_bones["A"].head.x
    arm.data.edit_bones["A"].head.x += d
    arm.data.edit_bones["A"].tail.x += d
    d = arm.data.edit_bones["A"].head.x - head  # as float32 holds it
    bpy.ops.object.mode_set(mode="OBJECT")
    out = tmp_path / "moved.mdl"
    _export(out)
    after = umd2.read(out.read_bytes())
    for b, a in zip(before.bones, after.bones):
        if b.name != "A":
            assert umd2.write(umd2.Model(bones=[b])) == umd2.write(umd2.Model(bones=[a])), b.name
    a, b = after.bones[1], before.bones[1]
    assert a.rotation.tobytes() == b.rotation.tobytes() and a.scale.tobytes() == b.scale.tobytes()
    # Blender x is the file's x in Urho3D's axes; the offset is the inverse bind: its translation goes the other way
    np.testing.assert_allclose(a.position - b.position, [d, 0, 0], atol=1e-7, rtol=1e-4)
    np.testing.assert_allclose(a.offset.reshape(3, 4)[:, 3] - b.offset.reshape(3, 4)[:, 3], [-d, 0, 0], atol=1e-7,
                               rtol=1e-4)
    assert np.ascontiguousarray(after.vertex_buffers[0].vertices).tobytes() == \
        np.ascontiguousarray(before.vertex_buffers[0].vertices).tobytes()
    bpy.ops.object.mode_set(mode="EDIT")  # back where the file has it
    arm.data.edit_bones["A"].head.x -= d
    arm.data.edit_bones["A"].tail.x -= d
