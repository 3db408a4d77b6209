"""Issue 35: the sample head converted with the GR2 skeleton beside it keeps its bones and its weights in PMX,
UrhoX and SMD. Each output is read back through its own codec and mapping (the registry's `load`) and compared
with the MDB + GR2 scene: bones by name (parent and rest head), and every output vertex's weights by bone name
against the MDB vertex at its position."""
from __future__ import annotations

import pathlib

import numpy as np
import pytest

from skinbridge import formats
from skinbridge.core import model as cm
from skinbridge.core.fileio import read_bytes
from skinbridge.io_mdb.mdb import convert

pytestmark = pytest.mark.blender

GR2_DIR = pathlib.Path(__file__).resolve().parents[3] / "shared" / "testdata" / "gr2"
HEAD = GR2_DIR / "ovr_P_HEF_head83.MDB"
TOLERANCE = 1e-6
# SMD writes each bone's local translation and Euler angles with 6 decimals: 5e-7 m and 5e-7 rad per value,
# composed along chains up to 12 bones deep from the root (a 1 m lever), so a head may move by 12 · 1e-6
SMD_HEAD_TOLERANCE = 1.2e-5

TARGETS = {  # --to name, its options: all 88 bones in every target (UrhoX's 64-bone limit: the Urho3D profile)
    "pmx": {},
    "smd": {},
    "urhox": {"profile": "urho3d"},
}


def _bone_name(bone: cm.Bone) -> str:
    """PMX cuts names to 15 bytes (for VMD) and keeps the full name as the bone's English name."""
    return bone.extras.get("pmx", {}).get("name_e") or bone.name


def _weights(scene: cm.Scene, lod0: bool) -> tuple[np.ndarray, list[dict[str, float]]]:
    """Pooled positions and per-vertex {bone name: weight} of the scene's skinned meshes (the MDB's full-detail
    packets only: the LODs go to a hidden collection, which the exporters leave out)."""
    names = [_bone_name(b) for b in scene.skeleton.bones]
    positions, weights = [], []
    for m in scene.meshes:
        if lod0 and m.extras.get("mdb", {}).get("lod", 0):
            continue
        positions.append(np.asarray(m.positions, np.float64))
        for joints, ws in zip(m.joints, m.weights):
            d: dict[str, float] = {}
            for j, w in zip(joints, ws):
                if w > 0:
                    d[names[j]] = d.get(names[j], 0.0) + float(w)
            weights.append(d)
    return np.concatenate(positions), weights


def _load(path: str) -> cm.Scene:
    scene, _ = formats.identify_file(path).get("load")(path, read_bytes(path), False, ())
    return scene


@pytest.fixture(scope="module")
def source() -> cm.Scene:
    scene, warnings = convert.load(str(HEAD), read_bytes(str(HEAD)))
    assert scene.skeleton is not None and len(scene.skeleton) == 88, warnings
    return scene


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_head_converts_with_its_bones_and_weights(addon, tmp_path, source, target):
    from skinbridge.app import pipeline  # imports bpy: after the addon fixture set the user folder

    written, warnings = pipeline.convert_file(str(HEAD), str(tmp_path), "head",
                                              pipeline.ConvertOptions(target=target, **TARGETS[target]))
    assert not any("single root bone" in w or "without a skeleton" in w for w in warnings)
    extensions = formats.targets()[target].extensions
    [model] = [p for p in written if p.lower().endswith(extensions) and formats.file_kind(p) == "model"]
    out = _load(model)

    a, b = source.skeleton, out.skeleton
    names_b = [_bone_name(x) for x in b.bones]
    assert names_b and sorted(names_b) == sorted(a.names)
    limit = SMD_HEAD_TOLERANCE if target == "smd" else TOLERANCE
    for bone in b.bones:
        name = _bone_name(bone)
        mine = a.bones[a.index(name)]
        parent = names_b[bone.parent] if bone.parent >= 0 else None
        assert parent == (a.names[mine.parent] if mine.parent >= 0 else None), name
        assert np.abs(bone.bind[:3, 3] - mine.bind[:3, 3]).max() <= limit, name

    pa, wa = _weights(source, lod0=True)
    pb, wb = _weights(out, lod0=False)
    d = np.linalg.norm(pb[:, None] - pa[None], axis=2)
    assert d.min(axis=1).max() <= TOLERANCE  # every output vertex lies on an MDB vertex
    assert d.min(axis=0).max() <= TOLERANCE  # and every MDB vertex is written
    for i, row in enumerate(d):
        # vertices at one position (UV seams) carry the same weights in the MDB: any of them will do
        errors = [max(abs(wa[k].get(n, 0.0) - wb[i].get(n, 0.0)) for n in set(wa[k]) | set(wb[i]))
                  for k in np.flatnonzero(row <= row.min() + 1e-9)]
        assert min(errors) <= TOLERANCE, (target, i, wb[i])


def test_skeleton_file_imports_and_renders_as_an_armature(clean_scene, tmp_path):
    from skinbridge.app import render  # imports bpy: after the addon fixture set the user folder
    from skinbridge.core.errors import FormatError

    bpy = pytest.importorskip("bpy")
    path = GR2_DIR / "ovr_P_HEF_skel83.GR2"
    spec = formats.identify_file(path)
    assert spec.get("blender_import")(bpy.context, str(path), None) == []
    [rig] = [ob for ob in bpy.context.scene.objects if ob.type == "ARMATURE"]
    skel = _load(str(path)).skeleton
    heads = np.array([rig.data.bones[n].head_local for n in skel.names])
    assert np.abs(heads - skel.binds()[:, :3, 3]).max() < 1e-6
    assert [rig.data.bones[n].parent.name if rig.data.bones[n].parent else None for n in skel.names] == \
        [skel.names[b.parent] if b.parent >= 0 else None for b in skel.bones]
    sheet = render.render_sheet(bpy.context, views=("front",), panel=(200, 200))
    assert sheet.counts == {"vertices": 0, "triangles": 0, "bones": 88, "weighted_bones": 0}
    panel = sheet.pixels[-150:].astype(np.int32)  # below the title lines
    assert (np.abs(panel - panel[-1, -1]).max(axis=-1) > 30).sum() > 100  # the bones are drawn
    with pytest.raises(FormatError, match="holds no skeleton"):
        spec.get("blender_import")(bpy.context, str(GR2_DIR / "ovr_p_ddf_glaive01.GR2"), None)


def _with_points(tmp_path: pathlib.Path) -> pathlib.Path:
    """The head with a HOOK named after the skeleton's `ap_halo` bone and a HAIR point named as the public
    hair parts name theirs (no bone of that name), turned and placed off the origin."""
    from skinbridge.io_mdb.mdb import mdb

    m = mdb.read(HEAD.read_bytes())
    turn = np.array([[0, -1, 0], [1, 0, 0], [0, 0, 1]], np.float32)  # 90° about z: rows as stored
    m.packets += [mdb.PointPacket("HOOK", mdb.raw_name("AP_Halo"), 0, 0, np.float32([0.01, 0.02, 2.1]), turn),
                  mdb.PointPacket("HAIR", mdb.raw_name("HHF_Hair short Dummy01"), 1, 0,
                                  np.float32([0.0, -0.24, 1.519]), np.eye(3, dtype=np.float32))]
    path = tmp_path / "head_points.mdb"
    path.write_bytes(mdb.write(m))
    return path


def test_points_follow_their_bones_and_export_unchanged(clean_scene, tmp_path):
    from mathutils import Matrix

    from skinbridge.io_mdb.mdb import blender_io

    bpy = pytest.importorskip("bpy")
    path = _with_points(tmp_path)
    result = blender_io.import_mdb(bpy.context, str(path), skeleton_path=str(GR2_DIR))
    rig = result.armature
    hook, hair = bpy.data.objects["AP_Halo"], bpy.data.objects["HHF_Hair short Dummy01"]
    # the hook by its name (case ignored); the hair point by the bone the head's SKIN weights reach most: its
    # scalp weighs on Head (docs/nwn2.md §3.2)
    assert (hook.parent, hook.parent_type, hook.parent_bone) == (rig, "BONE", "ap_halo")
    assert (hair.parent, hair.parent_type, hair.parent_bone) == (rig, "BONE", "Head")
    bpy.context.view_layer.update()
    assert np.abs(np.array(hook.matrix_world)[:3, 3] - [0.01, 0.02, 2.1]).max() < 1e-6
    assert np.abs(np.array(hair.matrix_world)[:3, 3] - [0.0, -0.24, 1.519]).max() < 1e-6
    out = tmp_path / "out.mdb"
    blender_io.export_mdb(bpy.context, str(out))
    assert out.read_bytes() == path.read_bytes()  # the points' packets as the file had them
    before = np.array(hair.matrix_world)
    rig.pose.bones["Head"].matrix_basis = Matrix.Rotation(0.5, 4, "X")
    bpy.context.view_layer.update()
    assert np.abs(np.array(hair.matrix_world) - before).max() > 0.05  # the point moves with its bone
