"""A bone morph edited from a pose in Blender (the MMD Morphs panel's "from pose") writes only the values the
user changed (issue 48): the others keep the file's bits (−0.625 stays −0.625, a quaternion's zeros stay
+0.0), checked with `skinbridge diff` (core/diff.py) and byte for byte."""
from __future__ import annotations

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from mathutils import Vector  # noqa: E402

from skinbridge import formats  # noqa: E402
from skinbridge.core.diff import diff_files  # noqa: E402
from skinbridge.io_pmx.blender_side import blender_io  # noqa: E402
from skinbridge.io_pmx.blender_side import blender_morphs  # noqa: E402
from skinbridge.io_pmx.model import pmx  # noqa: E402
from support import mmd_hair  # noqa: E402

pytestmark = [pytest.mark.blender]

LIFT = 0.25  # MMD units the user lifts 頭 by, on top of the morph's 0.5


def test_bone_morph_edit_changes_only_the_edited_value(clean_scene, tmp_path):
    m = mmd_hair.hair_model_with_bone_morph()
    src = tmp_path / "hair_morph.pmx"
    src.write_bytes(pmx.write(m))
    arm = blender_io.import_pmx(bpy.context, str(src), physics=False).armature
    name = mmd_hair.BONE_MORPH
    # the user lifts the head (MMD +Y is Blender +Z) by LIFT units and shows the morph: every other value of
    # the morph stays as it was
    lift = arm.matrix_world.to_3x3().inverted() @ Vector((0, 0, LIFT * 0.08))
    arm.pose.bones["頭"].location = arm.data.bones["頭"].matrix_local.to_3x3().inverted() @ lift
    arm[blender_morphs.SLIDER_PREFIX + name] = 1.0
    blender_morphs.apply(arm, force=True)
    bpy.context.view_layer.update()
    assert blender_morphs.store_pose(arm, name) == 2
    out = tmp_path / "edited.pmx"
    blender_io.export_pmx(bpy.context, str(out))
    a, b = src.read_bytes(), out.read_bytes()
    k = next(i for i, x in enumerate(m.morphs) if x.name == name)
    got = pmx.read(b).morphs[k].offsets
    assert got["translation"][0][1] == pytest.approx(0.5 + LIFT, abs=5e-5)
    # skinbridge diff: the one field of the one morph
    result = diff_files(formats.identify_file(str(src)), a, b, None)
    assert [(d.record, d.field) for d in result.differences] == [(f"morphs[{k}] ({name}).values[0]", "translation")], \
        result.lines()
    # byte for byte: only the 4 bytes of 頭's translation y differ
    assert len(a) == len(b)
    changed = np.flatnonzero(np.frombuffer(a, np.uint8) != np.frombuffer(b, np.uint8))
    want = m.morphs[k].offsets.copy()
    want["translation"][0][1] = got["translation"][0][1]
    assert got.tobytes() == want.tobytes()  # −0.625 and the quaternion's +0.0 kept bit for bit
    assert 1 <= len(changed) <= 4 and changed.max() - changed.min() < 4, changed
