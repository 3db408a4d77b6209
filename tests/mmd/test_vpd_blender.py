"""Through Blender: a VPD pose (written by hand here, MMD's layout) imported onto Luka (physics off) puts every
bone outside the IK chains where babylon-mmd's VpdLoader + MmdRuntime puts it (tests/js/mmd_vpd_pose.mjs), within
1e-4 of the model's height; the pose exported reads back with the same values (within `%f`'s six decimals) and
babylon-mmd reads our file with the same bones, values and morph weights."""
from __future__ import annotations

import json
import pathlib
import subprocess

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")
from mathutils import Matrix  # noqa: E402

from skinbridge.io_pmx.blender_side import blender_io  # noqa: E402
from skinbridge.io_pmx.blender_side import blender_vpd  # noqa: E402
from skinbridge.io_pmx.blender_side.blender_motion_model import bone_names  # noqa: E402
from skinbridge.io_pmx.model import pmx  # noqa: E402
from skinbridge.io_pmx.pose import vpd  # noqa: E402
from support.tools import NODE_MODULES, node_with_babylon  # noqa: E402

pytestmark = [pytest.mark.blender, pytest.mark.default_leg]

LUKA = "mmdtools_megurine_luka.pmx"
SCRIPT = pathlib.Path(__file__).resolve().parents[1] / "js" / "mmd_vpd_pose.mjs"
# MMD name, translation (MMD units and axes), rotation (x, y, z, w): unit quaternions to six decimals
POSE = [("センター", (0.5, -1.25, 0.75), (0.0, 0.0, 0.0, 1.0)),
        ("上半身", (0.0, 0.0, 0.0), (0.0, 0.258819, 0.0, 0.965926)),
        ("首", (0.0, 0.0, 0.0), (0.130526, 0.0, 0.0, 0.991445)),
        ("左腕", (0.0, 0.0, 0.0), (0.0, 0.0, 0.382683, 0.92388)),
        ("右ひじ", (0.0, 0.0, 0.0), (0.0, -0.5, 0.0, 0.866025)),
        ("左足ＩＫ", (0.0, 1.0, -0.5), (0.0, 0.0, 0.0, 1.0))]
MORPH = ("まばたき", 0.75)


def hand_written(path: pathlib.Path) -> None:
    lines = ["Vocaloid Pose Data file", "", "Luka.osm;\t\t// 親ファイル名",
             f"{len(POSE)};\t\t\t\t// 総ポーズボーン数", ""]
    for i, (name, t, q) in enumerate(POSE):
        lines += [f"Bone{i}{{{name}", "  " + ",".join("%f" % v for v in t) + ";\t\t\t\t// trans x,y,z",
                  "  " + ",".join("%f" % v for v in q) + ";\t\t// Quaternion x,y,z,w", "}", ""]
    lines += ["Morph0{" + MORPH[0], "  %f;\t\t\t\t// weight" % MORPH[1], "}", ""]
    path.write_bytes(("\r\n".join(lines) + "\r\n").encode("cp932"))


def babylon(model: pathlib.Path, pose: pathlib.Path, bones: list[str]) -> dict:
    node = node_with_babylon()
    done = subprocess.run([node, str(SCRIPT), str(NODE_MODULES), str(model), str(pose),
                           json.dumps(bones, ensure_ascii=False)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout[done.stdout.index("{"):])
    assert out["missing"] == []
    return out


def outside_ik(model: pmx.PmxModel) -> list[int]:
    """Bones no IK solve moves: not an IK link or target, no parent or append parent that is."""
    moved = set()
    for b in model.bones:
        if b.ik is not None:
            moved.add(b.ik.target)
            moved.update(link.bone for link in b.ik.links)
    changed = True
    while changed:
        changed = False
        for i, b in enumerate(model.bones):
            if i not in moved and (b.parent in moved or b.append_parent in moved):
                moved.add(i)
                changed = True
    return [i for i in range(len(model.bones)) if i not in moved]


@pytest.fixture
def luka(clean_scene, testdata):
    return blender_io.import_pmx(bpy.context, str(testdata / "pmx" / LUKA), physics=False).armature


def test_pose_matches_babylon_mmd_and_exports_back(luka, testdata, tmp_path):
    model_path = testdata / "pmx" / LUKA
    model = pmx.read(model_path.read_bytes())
    pose_path = tmp_path / "pose.vpd"
    hand_written(pose_path)
    for pb in luka.pose.bones:  # the PMX import leaves a few bones (hair) up to 1e-6 m off their rest
        pb.matrix_basis = Matrix.Identity(4)
    act, warnings = blender_vpd.import_vpd(bpy.context, str(pose_path), luka)
    assert warnings == [] and luka.animation_data.action == act
    bpy.context.scene.frame_set(0)

    checked = outside_ik(model)
    names = [model.bones[i].name for i in checked]
    posed = {n for n, _, _ in POSE[:-1]}
    assert len(checked) > 50 and posed <= set(names) and "左足ＩＫ" in names  # the IK handle moves no checked bone
    by_mmd = bone_names(luka)
    ours = np.array([luka.matrix_world @ luka.pose.bones[by_mmd.get(n, n)].head for n in names])
    theirs = babylon(model_path, pose_path, names)
    scale = 0.08  # metres per MMD unit of the import
    their_blender = np.array(theirs["positions"])[:, [0, 2, 1]] * scale
    height = float(np.ptp(np.array([v.co for v in luka.children[0].data.vertices])[:, 2]))
    err = np.abs(ours - their_blender).max() / height
    assert err < 1e-4, err
    rest = np.array([luka.matrix_world @ luka.data.bones[by_mmd.get(n, n)].head_local for n in names])
    assert np.abs(ours - rest).max() > 0.1 * height  # the pose moved bones (the comparison is not of rests)

    out_path = tmp_path / "out.vpd"
    assert blender_vpd.export_vpd(bpy.context, str(out_path), luka) == []
    back = vpd.read(out_path.read_bytes())
    assert len(back.bones) == len(model.bones)  # MMD writes every bone of the model
    got = {b.name: (b.translation, b.rotation) for b in back.bones}
    for name, t, q in POSE:
        np.testing.assert_allclose(got[name][0], t, atol=2e-6)
        sign = np.sign(np.dot(got[name][1], q))
        np.testing.assert_allclose(np.multiply(got[name][1], sign), q, atol=2e-6)
    still = [b for b in back.bones if b.name not in posed | {"左足ＩＫ"}]
    moved = [(b.name, b.translation, b.rotation) for b in still if b.translation != (0, 0, 0)
             or b.rotation != (0, 0, 0, 1)]
    assert moved == []
    assert [(m.name, m.weight) for m in back.morphs] == [MORPH]

    read = babylon(model_path, out_path, names)["read"]  # babylon-mmd reads our file
    assert set(read["bones"]) == {b.name for b in back.bones}
    for b in back.bones:
        np.testing.assert_allclose(read["bones"][b.name][1], b.rotation, atol=1e-6)
        np.testing.assert_allclose(read["bones"][b.name][0], b.translation, atol=1e-6)
    assert read["morphs"] == {MORPH[0]: MORPH[1]}


def test_file_menu_operators(luka, tmp_path):
    """File › Import / Export › MikuMikuDance pose (.vpd), as a user runs them."""
    pose_path = tmp_path / "pose.vpd"
    hand_written(pose_path)
    bpy.context.view_layer.objects.active = luka
    assert bpy.ops.import_anim.skinbridge_vpd(filepath=str(pose_path)) == {"FINISHED"}
    assert luka.animation_data.action.name == "pose"
    out_path = tmp_path / "out.vpd"
    assert bpy.ops.export_anim.skinbridge_vpd(filepath=str(out_path)) == {"FINISHED"}
    back = {b.name: b for b in vpd.read(out_path.read_bytes()).bones}
    np.testing.assert_allclose(back["センター"].translation, POSE[0][1], atol=2e-6)
