"""`--mmd-rig` on a model that already has its MMD rig (issue 48): it adds what is missing (全ての親, 足IK親) and
moves nothing the model has. Every bone of Luka and of the hair test model (tests/support/mmd_hair.py) keeps
its layer, its transform order (the after-physics flag), its flags and its parent (a bone without a parent may
hang on a control bone the rig added); with Blender, through the export with MMD Rig on."""
from __future__ import annotations

import copy

import numpy as np
import pytest

from skinbridge.io_pmx.model import pmx
from skinbridge.io_pmx.model.pmx import BoneFlag
from skinbridge.io_pmx.model.validate import validate
from skinbridge.io_pmx.rig import rig
from support import mmd_extras, mmd_hair

LUKA = "mmdtools_megurine_luka.pmx"


def moved_bones(src: pmx.PmxModel, out: pmx.PmxModel) -> list[tuple]:
    """The bones of `src` whose layer, after-physics flag, flags or parent `out` changed (by name)."""
    by_name = {b.name: b for b in out.bones}
    added = {b.name for b in out.bones} - {b.name for b in src.bones}
    bad = []
    for b in src.bones:
        o = by_name.get(b.name)
        if o is None:
            bad.append((b.name, "missing"))
            continue
        was = src.bones[b.parent].name if b.parent >= 0 else None
        now = out.bones[o.parent].name if o.parent >= 0 else None
        if was != now and not (was is None and now in added):
            bad.append((b.name, "parent", was, now))
        if int(o.layer) != int(b.layer) or (o.flags ^ b.flags) & BoneFlag.AFTER_PHYSICS:
            bad.append((b.name, "layer", b.layer, o.layer))
        if o.flags != b.flags:
            bad.append((b.name, "flags", hex(b.flags), hex(o.flags)))
    return bad


def _models(testdata) -> dict:
    luka = pmx.read_file(testdata / "pmx" / LUKA)
    return {"Luka": luka, "Luka with hair and necktie IK": pmx.read(mmd_extras.luka_with_ik_chains(
        testdata / "pmx" / LUKA)), "hair test model": mmd_hair.hair_model()}


def test_rig_on_a_rigged_model_moves_no_bone(testdata):
    for label, m in _models(testdata).items():
        src = copy.deepcopy(m)
        warnings = rig.apply(m)
        assert moved_bones(src, m) == [], label
        names = [b.name for b in m.bones]
        assert names.count("全ての親") == 1 and names[0] == "全ての親", label
        if label.startswith("Luka"):  # what Luka lacks: added, the IK bones hang on them
            assert {"左足IK親", "右足IK親"} <= set(names) and "added" in warnings[0], label
            k = {b.name: i for i, b in enumerate(m.bones)}
            assert m.bones[k["左足ＩＫ"]].parent == k["左足IK親"]
            assert m.bones[k["左足ＩＫ"]].ik.target == k["左足首"]
        for i, b in enumerate(m.bones):  # parents first, as MMD deforms them
            assert b.parent < i, (label, b.name)
        assert [f for f in validate(m, for_export=True) if f.severity == "error"] == [], label
        # the rest of the model points at the same bones as before
        np.testing.assert_array_equal([m.bones[x].name for x in m.vertices["bones"][:50, 0]],
                                      [src.bones[x].name for x in src.vertices["bones"][:50, 0]])
        assert [m.bones[r.bone].name if r.bone >= 0 else None for r in m.rigid_bodies] == \
            [src.bones[r.bone].name if r.bone >= 0 else None for r in src.rigid_bodies]


@pytest.mark.blender
@pytest.mark.slow
def test_export_with_the_rig_moves_no_bone_of_luka(clean_scene, testdata, tmp_path):
    bpy = pytest.importorskip("bpy")
    from skinbridge.io_pmx.blender_side import blender_io  # imports bpy: this test only

    src = pmx.read_file(testdata / "pmx" / LUKA)
    blender_io.import_pmx(bpy.context, str(testdata / "pmx" / LUKA), physics=False)
    out = tmp_path / "rigged.pmx"
    blender_io.export_pmx(bpy.context, str(out), mmd_rig=True)
    got = pmx.read(out.read_bytes())
    assert moved_bones(src, got) == []
    assert len(got.bones) == len(src.bones) + 3
