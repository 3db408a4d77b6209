"""The three Rest comparisons are one (docs/rest_compare.md §1): `compare --rest`, `render --compare` and the
sidebar's Rest Compare on Fox.glb against its PMX export give the same verdict, the same counts and the same
marked bones. The PMX export shortens 10 of Fox's 24 bone names to the 15 bytes a VMD name holds (the full name
kept as English name): each is found by that name, not shown missing on one side and extra on the other
(issue 46 item 4: `render --compare` and the sidebar reported 48 differences and 33 marked bones where
`compare --rest` said "same").
"""
from __future__ import annotations

import shutil

import numpy as np
import pytest

from skinbridge import formats
from skinbridge.io_pmx.model import pmx

from conftest import run_cli

bpy = pytest.importorskip("bpy")

from skinbridge.app import rest_compare  # noqa: E402
from skinbridge.app.options import ConvertOptions  # noqa: E402

pytestmark = [pytest.mark.blender, pytest.mark.slow]

TOL = 1e-5  # render --compare's and the sidebar's default; compare --rest is given it
MOVED = "b_RightUpperArm_06"  # written to the PMX as b_RightUpperArm, its full name the English name
MOVED_IN_PMX = "b_RightUpperArm"


@pytest.fixture(scope="module")
def fox_pmx(tmp_path_factory, testdata):
    """Fox.glb converted to PMX once for this module, as a user would (`convert --to pmx`)."""
    out = tmp_path_factory.mktemp("fox") / "Fox_PMX"
    r = run_cli("convert", testdata / "gltf" / "Fox.glb", "--to", "pmx", "-o", out)
    assert r.returncode == 0, r.stderr
    return out / "Fox.pmx"


def _moved_copy(path, folder):
    """A copy of the PMX (beside its texture) whose shortened bone MOVED is 0.5 units higher."""
    folder.mkdir()
    for f in path.parent.iterdir():
        if f.suffix.lower() == ".png":
            shutil.copy(f, folder / f.name)
    model = pmx.read(path.read_bytes())
    [bone] = [b for b in model.bones if b.name_e == MOVED]
    assert bone.name == MOVED_IN_PMX
    bone.position = (bone.position + np.float32([0, 0.5, 0])).astype(np.float32)
    out = folder / path.name
    out.write_bytes(pmx.write(model))
    return out


def _summary(lines: str) -> str:
    [line] = [x for x in lines.splitlines() if x.startswith("rest position:")]
    return line


def _sidebar(glb, other):
    """The sidebar's Compare with a file: Fox.glb imported and active (A), `other` the file (B)."""
    bpy.ops.wm.read_factory_settings(use_empty=True)
    formats.get("gltf").get("blender_import")(bpy.context, str(glb), ConvertOptions())
    bpy.context.view_layer.update()
    arm = next(ob for ob in bpy.context.view_layer.objects if ob.type == "ARMATURE")
    bpy.context.view_layer.objects.active = arm
    assert bpy.ops.skinbridge.rest_compare(source="FILE", filepath=str(other), tolerance=TOL) == {"FINISHED"}
    overlay = rest_compare.shown
    coloured = []
    for names in overlay.names:
        ob = bpy.data.objects[names[0]]
        coloured.append({b.name for b in ob.data.bones if b.color.palette == rest_compare.MARK_PALETTE})
    summary = (overlay.findings.summary(), len(overlay.result.differences), sorted(overlay.marked))
    assert bpy.ops.skinbridge.rest_compare_clear() == {"FINISHED"}
    return summary, coloured


@pytest.mark.parametrize("planted", [False, True], ids=["as exported", "one shortened bone moved"])
def test_compare_render_and_sidebar_agree(addon, testdata, fox_pmx, tmp_path, planted):
    glb = testdata / "gltf" / "Fox.glb"
    other = _moved_copy(fox_pmx, tmp_path / "moved") if planted else fox_pmx
    r = run_cli("compare", "--rest", "--tol", str(TOL), glb, other)
    assert r.returncode == (1 if planted else 0), r.stdout + r.stderr
    by_compare = _summary(r.stdout)
    r = run_cli("render", glb, "--compare", other, "-o", tmp_path / "compare.png")
    assert r.returncode == 0, r.stderr
    by_render = _summary(r.stderr)
    (by_sidebar, count, marked), coloured = _sidebar(glb, other)
    assert by_compare == by_render == by_sidebar
    if planted:  # its rest head and default pose head; the bone coloured by its own name on each side
        assert count == 2 and marked == [MOVED], by_sidebar
        assert by_compare == f"rest position: 2 difference(s), 1 bone(s) marked: {MOVED}"
        assert coloured == [{MOVED}, {MOVED_IN_PMX}]
    else:
        assert by_compare == "rest position: same within the tolerances, 0 bone(s) marked"
        assert count == 0 and coloured == [set(), set()]
