"""Rest Compare (app/rest_compare.py, the sidebar operators): the overlay of two models in Rest Position.

The expected figures come from Blender's own data, not from the overlay's code: the diagonal from the mesh's
positions, the displaced vertices from the positions before and after a pose was applied to the mesh, and what
Clear must restore from `scene_fingerprint` taken before the overlay.
"""
from __future__ import annotations

import types

import numpy as np
import pytest

from skinbridge import cli, formats

from conftest import run_cli
from support.png_decode import decode_png

bpy = pytest.importorskip("bpy")

from mathutils import Matrix  # noqa: E402

from skinbridge.app import ops_rest_compare, rest_compare  # noqa: E402
from skinbridge.app.options import ConvertOptions  # noqa: E402
from skinbridge.core import rest_overlay  # noqa: E402
from support.fingerprint import diff_fingerprints, scene_fingerprint  # noqa: E402
from support.contact_sheet import header_has_text, panel_boxes  # noqa: E402

pytestmark = pytest.mark.blender

TOL = 1e-5  # of the diagonal (issue 34)
BONE = "b_Tail02_013"  # posed by 1 cm: its region is the tail's end (b_Tail02, b_Tail03)


def _import_fox(testdata):
    before = set(bpy.data.objects)
    formats.get("gltf").get("blender_import")(bpy.context, str(testdata / "gltf" / "Fox.glb"), ConvertOptions())
    bpy.context.view_layer.update()
    new = [ob for ob in bpy.data.objects if ob not in before and ob.name in bpy.context.view_layer.objects]
    arm = next(ob for ob in new if ob.type == "ARMATURE")
    mesh = next(ob for ob in new if ob.type == "MESH" and ob.parent == arm)
    return arm, mesh


def _positions(ob) -> np.ndarray:
    n = len(ob.data.vertices)
    co = np.empty(n * 3, np.float32)
    ob.data.attributes["position"].data.foreach_get("vector", co)
    m = np.array(ob.matrix_world, np.float64)
    return co.reshape(n, 3).astype(np.float64) @ m[:3, :3].T + m[:3, 3]


def _diagonal(ob) -> float:
    p = _positions(ob)
    return float(np.linalg.norm(p.max(axis=0) - p.min(axis=0)))


def _values(ob) -> np.ndarray:
    attr = ob.data.attributes[rest_compare.VALUE_ATTRIBUTE]
    out = np.empty(len(ob.data.vertices), np.float32)
    attr.data.foreach_get("value", out)
    return out.astype(np.float64)


def _coloured(ob) -> np.ndarray:
    """Vertices whose overlay colour is not the 'within the limit' one."""
    attr = ob.data.color_attributes[rest_compare.COLOR_ATTRIBUTE]
    rgba = np.empty(len(ob.data.vertices) * 4, np.float32)
    attr.data.foreach_get("color", rgba)
    same = rest_overlay.srgb_to_linear(np.array(rest_overlay.SAME_COLOR))
    return ~np.isclose(rgba.reshape(-1, 4)[:, :3], same, atol=1e-6).all(axis=1)


def _marked(arm) -> set[str]:
    return {b.name for b in arm.data.bones if b.color.palette == rest_compare.MARK_PALETTE}


def test_fox_against_its_own_umd2_export(clean_scene, testdata, fox_mdl):
    arm, mesh = _import_fox(testdata)
    bpy.context.view_layer.objects.active = arm
    before = scene_fingerprint()
    assert bpy.ops.skinbridge.rest_compare(source="FILE", filepath=str(fox_mdl), tolerance=TOL) == {"FINISHED"}
    overlay = rest_compare.shown
    other = bpy.data.objects[overlay.names[1][1]]
    limit = TOL * _diagonal(mesh)
    assert overlay.limit == pytest.approx(limit, rel=1e-6)  # gathered positions are float32
    for ob in (mesh, other):
        values = _values(ob)
        assert len(values) == 1728 and values.max() <= limit, (ob.name, values.max())
        assert not _coloured(ob).any()
    assert _marked(arm) == set() and _marked(bpy.data.objects[overlay.names[1][0]]) == set()
    assert overlay.result.same, overlay.result.lines()
    assert arm.data.pose_position == "REST"
    assert bpy.ops.skinbridge.rest_compare_clear() == {"FINISHED"}
    assert rest_compare.shown is None
    assert diff_fingerprints(before, scene_fingerprint()) == []
    motion = fox_mdl.parent / "Animations" / "Walk.ani"  # written by convert beside the model
    with pytest.raises(RuntimeError, match="cannot be imported as a model"):
        bpy.ops.skinbridge.rest_compare(source="FILE", filepath=str(motion))
    smd_motion = testdata / "smd" / "bst_ActionFilter_X_Axis_anim.smd"  # imports, but onto the active armature
    with pytest.raises(RuntimeError, match="of kind motion, not a model to compare"):
        bpy.ops.skinbridge.rest_compare(source="FILE", filepath=str(smd_motion))
    assert diff_fingerprints(before, scene_fingerprint()) == []


def _pose_and_apply(arm, mesh, bone: str, shift) -> None:
    """Pose `bone` moved by `shift` (armature space), bake the deformed positions into the mesh, reset the pose.
    The import assigned an action: without it every other bone stays at rest."""
    if arm.animation_data is not None:
        arm.animation_data.action = None
    for other in arm.pose.bones:
        other.matrix_basis = Matrix.Identity(4)
    bpy.context.view_layer.update()
    pb = arm.pose.bones[bone]
    pb.matrix = Matrix.Translation(shift) @ pb.matrix
    bpy.context.view_layer.update()
    dg = bpy.context.evaluated_depsgraph_get()
    baked = bpy.data.meshes.new_from_object(mesh.evaluated_get(dg), depsgraph=dg)
    co = np.empty(len(baked.vertices) * 3, np.float32)
    baked.attributes["position"].data.foreach_get("vector", co)
    bpy.data.meshes.remove(baked)
    mesh.data.attributes["position"].data.foreach_set("vector", co)
    mesh.data.update()
    pb.matrix_basis = Matrix.Identity(4)
    bpy.context.view_layer.update()


def _region(arm, mesh, bone: str) -> np.ndarray:
    """Vertices weighted (> 0) by `bone` or a bone below it."""
    names = {b.name for b in arm.data.bones[bone].children_recursive} | {bone}
    groups = {g.index for g in mesh.vertex_groups if g.name in names}
    return np.array([any(g.group in groups and g.weight > 0 for g in v.groups) for v in mesh.data.vertices])


def test_a_rest_mesh_deformed_by_one_bone_is_coloured_where_it_moved(clean_scene, testdata):
    arm_a, mesh_a = _import_fox(testdata)
    arm_b, mesh_b = _import_fox(testdata)
    original = _positions(mesh_b)
    _pose_and_apply(arm_b, mesh_b, BONE, (0.01, 0.0, 0.0))
    displaced = np.linalg.norm(_positions(mesh_b) - original, axis=1)
    limit = TOL * _diagonal(mesh_a)
    expected = displaced > limit
    assert 20 < expected.sum() < 400 and displaced.max() == pytest.approx(0.01, rel=1e-3)
    for ob in bpy.context.view_layer.objects:
        ob.select_set(ob in (arm_a, arm_b))
    bpy.context.view_layer.objects.active = arm_a
    mesh_b.data.update()
    before = scene_fingerprint()
    assert bpy.ops.skinbridge.rest_compare(source="SELECTED", layout="SIDE_BY_SIDE", tolerance=TOL) == {"FINISHED"}
    overlay = rest_compare.shown
    assert overlay.mode == "same vertex order"
    for ob in (mesh_a, mesh_b):
        np.testing.assert_array_equal(_coloured(ob), expected)
        # within 4 float32 ulps of the Fox's largest coordinate (88): the gathered positions are float32
        np.testing.assert_allclose(_values(ob), displaced, rtol=0, atol=4 * np.spacing(np.float32(88.0)))
    assert not (expected & ~_region(arm_b, mesh_b, BONE)).any()  # the colour lies in the bone's region
    assert _marked(arm_a) == set() and _marked(arm_b) == set()
    gap = _positions(mesh_b)[:, 0].min() - _positions(mesh_a)[:, 0].max()
    assert gap == pytest.approx(0.1 * _diagonal(mesh_a), rel=1e-5)  # B beside A, a tenth of the diagonal apart
    assert any(BONE in name or "b_Tail03_014" in name for name, _ in overlay.largest), overlay.largest
    assert bpy.ops.skinbridge.rest_compare_clear() == {"FINISHED"}
    assert diff_fingerprints(before, scene_fingerprint()) == []


class _Layout:
    """Records what a panel draws (UILayout cannot be made headless)."""

    def __init__(self, labels: list[str]):
        self.labels = labels

    def prop(self, *args, **kwargs) -> None:
        pass

    def operator(self, *args, **kwargs):
        return types.SimpleNamespace()

    def row(self, align: bool = False):
        return self

    def box(self):
        return self

    def label(self, text: str = "") -> None:
        self.labels.append(text)


def _panel_labels() -> list[str]:
    labels: list[str] = []
    ops_rest_compare.SKINBRIDGE_PT_rest_compare.draw(types.SimpleNamespace(layout=_Layout(labels)), bpy.context)
    return labels


def test_a_moved_bone_is_marked(clean_scene, testdata):
    arm_a, _ = _import_fox(testdata)
    arm_b, _ = _import_fox(testdata)
    bpy.context.view_layer.objects.active = arm_b
    bpy.ops.object.mode_set(mode="EDIT")
    eb = arm_b.data.edit_bones["b_Head_05"]
    eb.use_connect = False
    eb.head.z += 1.0
    eb.tail.z += 1.0
    bpy.ops.object.mode_set(mode="POSE")  # a mode the Clear must give back
    a, b = rest_compare.model_of(bpy.context, arm_a, "A"), rest_compare.model_of(bpy.context, arm_b, "B")
    before = scene_fingerprint()
    overlay = rest_compare.show(bpy.context, a, b, tol=TOL)
    assert _marked(arm_a) == _marked(arm_b) == {"b_Head_05"} == overlay.marked
    labels = _panel_labels()
    assert [t for t in labels if t.startswith("difference: skeleton: bone b_Head_05: rest head: moved by 1 ")]
    legend = [text for _, text in rest_overlay.legend(TOL, _diagonal(bpy.data.objects[overlay.names[0][1]]))]
    assert [t for t in labels if t in legend] == legend
    assert legend[0] == "<= 1e-05 of diag (0.00176)" and legend[1] == "1e-05 - 1e-04 (0.0176)"
    assert labels[0] == "Distance to the other model (same vertex order)"
    assert rest_compare.clear(bpy.context)
    assert diff_fingerprints(before, scene_fingerprint()) == []
    assert arm_b.mode == "POSE"


# -- the picture -------------------------------------------------------------------------------------------------

def _mesh_classes(px: np.ndarray, box) -> dict[tuple[int, int, int], int]:
    """Pixel count per overlay band colour inside one panel (bones and background left out)."""
    x0, y0, x1, y1 = box
    p = px[y0:y1, x0:x1, :3].reshape(-1, 3)
    return {tuple(int(v) for v in c): int((p == c).all(axis=1).sum()) for c in rest_overlay.band_colors_srgb()}


@pytest.mark.slow
def test_render_fox_against_its_umd2_export(testdata, fox_mdl, tmp_path):
    out = tmp_path / "compare.png"
    r = run_cli("render", testdata / "gltf" / "Fox.glb", "--compare", fox_mdl, "-o", out)
    assert r.returncode == 0, r.stderr
    px = decode_png(out.read_bytes())
    assert header_has_text(px, 8, 6, "Fox.glb against Fox.mdl", 2)
    assert header_has_text(px, 8, 28, "rest position | same within the tolerances, 0 bones marked", 1)
    boxes = panel_boxes(3, 2)
    for box in boxes:
        counts = _mesh_classes(px, box)
        assert counts[rest_overlay.SAME_COLOR] > 3000, counts  # the fox, all of it within the limit
        assert sum(counts.values()) == counts[rest_overlay.SAME_COLOR], counts
    legend_top = boxes[-1][3] + 8
    assert (px[legend_top + 2, 10:20] == rest_overlay.SAME_COLOR).all()  # the legend's first swatch


@pytest.mark.slow
def test_render_of_a_deformed_tail_colours_it_and_changes_nothing(clean_scene, testdata):
    arm_a, mesh_a = _import_fox(testdata)
    arm_b, mesh_b = _import_fox(testdata)
    _pose_and_apply(arm_b, mesh_b, BONE, (0.01, 0.0, 0.0))
    a, b = rest_compare.model_of(bpy.context, arm_a, "A"), rest_compare.model_of(bpy.context, arm_b, "B")
    before = scene_fingerprint()
    sheet = rest_compare.render_compare(bpy.context, a, b, title="deformed", tol=TOL)
    assert diff_fingerprints(before, scene_fingerprint()) == []
    for panel in sheet.panels:
        counts = _mesh_classes(sheet.pixels, panel.box)
        coloured = sum(counts.values()) - counts[rest_overlay.SAME_COLOR]
        assert 0 < coloured < 0.5 * counts[rest_overlay.SAME_COLOR], (panel.view, counts)  # the tail, not the body
    side = sheet.panels[1]  # the side view looks along +X: the tail is on the right of the body
    x0, y0, x1, y1 = side.box
    p = sheet.pixels[y0:y1, x0:x1, :3]
    body = (p == rest_overlay.SAME_COLOR).all(axis=2)
    tail = (p[..., None, :] == rest_overlay.band_colors_srgb()[1:]).all(axis=-1).any(axis=-1)
    assert np.nonzero(tail)[1].min() > np.nonzero(body)[1].mean()


def test_render_compare_usage_errors_exit_before_blender(testdata, tmp_path, capsys):
    fox = str(testdata / "gltf" / "Fox.glb")
    assert cli.main(["render", fox, "--compare", fox, "--frame", "3", "-o", str(tmp_path / "x.png")]) == 2
    assert "--compare draws the Rest Position" in capsys.readouterr().err
    assert cli.main(["render", fox, "--compare", str(tmp_path / "none.mdl"), "-o", str(tmp_path / "x.png")]) == 1
    assert f"{tmp_path / 'none.mdl'}: no such file" in capsys.readouterr().err
    assert not (tmp_path / "x.png").exists()
