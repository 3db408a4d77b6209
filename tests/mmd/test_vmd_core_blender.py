"""A VMD through Blender and back, compared through the core model: `mlibgo_shagamu.vmd` imported onto Luka and
exported compares at 0 with the original; one key turned by 0.01 rad is named with its bone and frame, also
after it went through Blender."""
from __future__ import annotations

import math

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from skinbridge.core.compare import compare_motions  # noqa: E402
from skinbridge.core.transforms import quat_multiply  # noqa: E402
from skinbridge.io_pmx.blender_side import blender_io  # noqa: E402
from skinbridge.io_pmx.blender_side import blender_motion_export  # noqa: E402
from skinbridge.io_pmx.blender_side import blender_motion_import  # noqa: E402
from skinbridge.io_pmx.motion import vmd  # noqa: E402
from skinbridge.io_pmx.motion import convert as motion_convert  # noqa: E402

pytestmark = pytest.mark.blender

LUKA = "mmdtools_megurine_luka.pmx"
SHAGAMU = "mlibgo_shagamu.vmd"


@pytest.fixture
def luka(clean_scene, testdata):
    return blender_io.import_pmx(bpy.context, str(testdata / "pmx" / LUKA)).armature


def _through_blender(arm, src, out) -> None:
    acts, _ = blender_motion_import.import_vmd(bpy.context, [str(src)], arm)
    blender_motion_export.export_vmd(bpy.context, str(out), arm, acts[-1])


def _load(path):
    return motion_convert.load_vmd(str(path), path.read_bytes(), True)[0]


def _turned_copy(testdata, tmp_path, bones) -> tuple[str, int, object]:
    """The sample with one key of a bone Luka has turned by 0.01 rad about a slanted axis, written by the codec;
    returns (bone, frame, path)."""
    m = vmd.read((testdata / "pmx" / SHAGAMU).read_bytes())
    names = [vmd.decode_name(bytes(n)) for n in m.bone_keys["name"]]
    i = next(k for k, n in enumerate(names) if n in bones and names.count(n) == 1 and n != names[0] and
             np.any(m.bone_keys["rotation"][k] != 0))
    x, y, z, w = m.bone_keys["rotation"][i].astype(np.float64)
    axis = np.array([0.3, -0.5, 0.8]) / np.linalg.norm([0.3, -0.5, 0.8])
    q = quat_multiply(np.array([w, x, y, z]), np.concatenate([[math.cos(0.005)], axis * math.sin(0.005)]))
    m.bone_keys["rotation"][i] = (q[1], q[2], q[3], q[0])
    path = tmp_path / "turned.vmd"
    path.write_bytes(vmd.write(m))
    return names[i], int(m.bone_keys["frame"][i]), path


@pytest.mark.slow
def test_shagamu_through_blender_compares_at_zero(luka, testdata, tmp_path):
    src = testdata / "pmx" / SHAGAMU
    out = tmp_path / "exported.vmd"
    _through_blender(luka, src, out)
    result = compare_motions(_load(src), _load(out), pos_tol=0.0, rot_tol=0.0, scale_tol=0.0, weight_tol=0.0,
                             time_tol=0.0)
    assert result.same, result.lines()
    assert ("animation mlibgo_shagamu / exported: 70 bone tracks in A, 70 in B, 70 by name; 0 morph tracks in A, "
            "0 in B; largest translation difference 0 file units; largest rotation difference 0 rad") \
        in result.notes[-1]


def test_a_turned_key_is_named_with_bone_and_frame_also_through_blender(luka, testdata, tmp_path):
    bones = {b.name for b in luka.data.bones}
    bone, frame, turned = _turned_copy(testdata, tmp_path, bones)
    original = _load(testdata / "pmx" / SHAGAMU)
    for b in (_load(turned), None):
        if b is None:  # the turned file imported onto Luka and exported again
            out = tmp_path / "turned_exported.vmd"
            _through_blender(luka, turned, out)
            b = _load(out)
        result = compare_motions(original, b, pos_tol=0.0, rot_tol=1e-3)
        [d] = result.differences
        assert d.element.endswith(f"bone {bone}") and d.field == "rotation"
        assert f"at frame {frame} " in d.message
        assert d.value == pytest.approx(0.01, abs=1e-6)


@pytest.mark.slow
def test_compare_command_on_the_motions(luka, testdata, tmp_path):
    from conftest import run_cli

    src = testdata / "pmx" / SHAGAMU
    out = tmp_path / "exported.vmd"
    _through_blender(luka, src, out)
    same = run_cli("compare", src, out, "--pos-tol", "0", "--rot-tol", "1e-9")
    assert same.returncode == 0, same.stdout + same.stderr
    assert "result: same within the tolerances" in same.stdout
    bone, frame, turned = _turned_copy(testdata, tmp_path, {b.name for b in luka.data.bones})
    r = run_cli("compare", src, turned, "--pos-tol", "0", "--rot-tol", "1e-3")
    assert r.returncode == 1, r.stdout + r.stderr
    [line] = [x for x in r.stdout.splitlines() if x.startswith("difference:")]
    assert line.startswith(f"difference: animation: animation mlibgo_shagamu / turned bone {bone}: rotation: 0.01 rad "
                           f"apart at frame {frame} ")
