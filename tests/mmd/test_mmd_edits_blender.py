"""Edits a user makes in Blender on an imported PMX or VMD, exported with File › Export's defaults: the file
changes only where it was edited (issue 46, docs/testing.md §6 "PMX / VMD", docs/mmd.md "Edits in Blender").
Each edit is made as `bench/edits` makes it (bench/edit_kinds.py), on the shared samples."""
from __future__ import annotations

import importlib.util
import pathlib
import subprocess
import sys

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from skinbridge import formats  # noqa: E402  (after the bpy check)
from skinbridge.core.diff import diff_files  # noqa: E402
from skinbridge.io_pmx.blender_side import blender_io  # noqa: E402
from skinbridge.io_pmx.model import pmx  # noqa: E402
from skinbridge.io_pmx.motion import vmd  # noqa: E402

pytestmark = [pytest.mark.blender, pytest.mark.slow]

ROOT = pathlib.Path(__file__).resolve().parents[2]
# the default leg runs every case; the 4.5 and 5.0 legs the rename only


def _edit_kinds():
    """bench/edit_kinds.py (a script folder, not a package): the campaign's edits."""
    if "edit_kinds" not in sys.modules:
        spec = importlib.util.spec_from_file_location("edit_kinds", ROOT / "bench" / "edit_kinds.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules["edit_kinds"] = module  # its dataclasses look their module up while being made
        spec.loader.exec_module(module)
    return sys.modules["edit_kinds"]


def _import(path: pathlib.Path) -> None:
    if path.suffix == ".vmd":
        assert bpy.ops.import_anim.skinbridge_vmd(filepath=str(path)) == {"FINISHED"}
    else:
        assert bpy.ops.import_scene.skinbridge_pmx(filepath=str(path)) == {"FINISHED"}


def _export_pmx(tmp_path, name: str = "out.pmx") -> pmx.PmxModel:
    out = tmp_path / name
    assert bpy.ops.export_scene.skinbridge_pmx(filepath=str(out)) == {"FINISHED"}
    return pmx.read(out.read_bytes())


def _differences(original: pathlib.Path, written: pathlib.Path) -> list[tuple[str, str]]:
    spec = formats.identify_file(str(original))
    result = diff_files(spec, original.read_bytes(), written.read_bytes(), None)
    return [(d.record, d.field) for d in result.differences]


def _select_only(ob) -> None:
    for o in bpy.context.view_layer.objects:
        o.select_set(False)
    ob.select_set(True)
    bpy.context.view_layer.objects.active = ob


def test_renamed_bone_gets_its_new_name_only(clean_scene, testdata, tmp_path):
    """Renaming a bone in Blender writes the new name as its Japanese (MMD) name; its English name stays (it
    follows where it was the Japanese one); nothing else of the file changes. (A name in ASCII given to a
    Japanese one is its English name: test_pmx_blender.py's translated knee.)"""
    path = testdata / "pmx" / "babylonmmd_constraint_test.pmx"
    original = pmx.read(path.read_bytes())
    _import(path)
    arm = next(o for o in bpy.context.scene.objects if o.type == "ARMATURE")
    k = 1
    arm.data.bones[original.bones[k].name].name = "新腕"
    assert bpy.ops.export_scene.skinbridge_pmx(filepath=str(tmp_path / "out.pmx")) == {"FINISHED"}
    written = pmx.read((tmp_path / "out.pmx").read_bytes())
    expected_e = "新腕" if original.bones[k].name_e == original.bones[k].name else original.bones[k].name_e
    assert (written.bones[k].name, written.bones[k].name_e) == ("新腕", expected_e)
    assert {r for r, _ in _differences(path, tmp_path / "out.pmx")} == {f"bones[{k}] ({original.bones[k].name})"}


def _renamed_in_motion(model, motion, old: str, new: str, tmp_path):
    """The model and its motion imported, bone `old` renamed `new` in Blender, the motion exported: (the file's
    records, the written records, the written path)."""
    _import(model)
    _import(motion)
    arm = next(o for o in bpy.context.scene.objects if o.type == "ARMATURE")
    arm.data.bones[old].name = new
    out = tmp_path / "out.vmd"
    assert bpy.ops.export_anim.skinbridge_vmd(filepath=str(out)) == {"FINISHED"}
    return vmd.read(motion.read_bytes()), vmd.read(out.read_bytes()), out


@pytest.mark.default_leg
def test_renamed_bone_keys_are_written_under_its_new_name(clean_scene, testdata, tmp_path):
    """VMD: the renamed bone's keys carry its new name; every other byte is the file's."""
    motion = testdata / "pmx" / "mlibgo_shagamu.vmd"
    a, b, out = _renamed_in_motion(testdata / "pmx" / "mlibgo_sample_pmx21_utf8.pmx", motion, "センター", "中心",
                                   tmp_path)
    names_a = [vmd.decode_name(bytes(n)) for n in a.bone_keys["name"]]
    names_b = [vmd.decode_name(bytes(n)) for n in b.bone_keys["name"]]
    assert names_b == ["中心" if n == "センター" else n for n in names_a] and "センター" in names_a
    for column in ("frame", "position", "rotation", "interpolation"):
        assert np.array_equal(a.bone_keys[column], b.bone_keys[column])
    assert {r for r, _ in _differences(motion, out)} == {
        f"bone_keys[{i}] (センター)" for i, n in enumerate(names_a) if n == "センター"}


@pytest.mark.default_leg
def test_model_imported_twice_exports_its_own_rigid_bodies(clean_scene, testdata, tmp_path):
    """Two copies of one model in one scene: each has its own Physics collection, and each copy's export is
    the file as it was (its rigid bodies on its own bones)."""
    path = testdata / "pmx" / "babylonmmd_constraint_test.pmx"
    _import(path)
    _import(path)
    arms = [o for o in bpy.context.scene.objects if o.type == "ARMATURE"]
    assert len(arms) == 2
    for k, arm in enumerate(arms):
        _select_only(arm)
        out = tmp_path / f"copy{k}.pmx"
        assert bpy.ops.export_scene.skinbridge_pmx(filepath=str(out)) == {"FINISHED"}
        assert out.read_bytes() == path.read_bytes(), arm.name


@pytest.mark.default_leg
def test_deleted_rigid_body_is_left_out_with_its_joint(clean_scene, testdata, tmp_path):
    """Deleting an object (here a rigid body, as the campaign's last mesh object) writes the model without it;
    the joint that joined it joins nothing and is left out, said in a warning; nothing else changes."""
    path = testdata / "pmx" / "babylonmmd_constraint_test.pmx"
    original = pmx.read(path.read_bytes())
    _import(path)
    touched = _edit_kinds().apply("delete-object")
    assert touched.names == [original.rigid_bodies[-1].name]
    out = tmp_path / "out.pmx"
    warnings = blender_io.export_pmx(bpy.context, str(out))
    joint = original.joints[0].name
    assert f"joint {joint}: its rigid body B was deleted; the joint joins nothing and is left out" in warnings
    written = pmx.read(out.read_bytes())
    assert [r.name for r in written.rigid_bodies] == [r.name for r in original.rigid_bodies[:-1]]
    assert written.joints == []
    assert _differences(path, out) == [(f"rigid_bodies (removed: {original.rigid_bodies[-1].name})", "count"),
                                       (f"joints (removed: {joint})", "count")]


@pytest.mark.default_leg
def test_new_image_takes_the_old_ones_place(clean_scene, testdata, tmp_path):
    """A material's Image Texture node given a new image: the material writes that image, in the place of the
    one it replaced (no other material used it), and nothing else changes."""
    path = testdata / "pmx" / "mmdtools_megurine_luka.pmx"
    original = pmx.read(path.read_bytes())
    _import(path)
    touched = _edit_kinds().apply("material-image")
    old = touched.names[0]
    written = _export_pmx(tmp_path)
    slot = original.textures.index(old)
    users = [i for i, m in enumerate(original.materials) if m.texture == slot]
    assert len(users) == 1 and written.materials[users[0]].texture == slot
    assert written.textures == [("edited_image.png" if t == old else t) for t in original.textures]
    assert _differences(path, tmp_path / "out.pmx") == [(f"textures[{slot}]", "")]


@pytest.mark.default_leg
def test_moved_rest_leaves_the_rigid_bodies_in_place(clean_scene, testdata, tmp_path):
    """A bone's rest moved in Edit Mode: its position changes in the file, the rigid body on it stays where it
    is in the model (as PMX editors keep it)."""
    path = testdata / "pmx" / "mmdtools_megurine_luka.pmx"
    original = pmx.read(path.read_bytes())
    _import(path)
    name = _edit_kinds().apply("move-bone-rest").names[0]
    k = next(i for i, b in enumerate(original.bones) if b.name == name)
    assert any(r.bone == k and r.mode == 0 for r in original.rigid_bodies)  # a body that follows the bone
    _export_pmx(tmp_path)
    assert _differences(path, tmp_path / "out.pmx") == [(f"bones[{k}] ({name})", "position[0]")]


@pytest.mark.default_leg
def test_motion_key_after_the_end_and_rest_moved(clean_scene, testdata, tmp_path):
    """VMD: a key after the last frame is written (the motion gets longer), the others as they were; a bone's
    rest moved leaves the motion as it was (its keys are offsets from the rest, which the PMX holds)."""
    motion = testdata / "pmx" / "mlibgo_shagamu.vmd"
    model = testdata / "pmx" / "mlibgo_sample_pmx21_utf8.pmx"
    ek = _edit_kinds()
    _import(model)
    _import(motion)
    touched = ek.apply("key-after-end")
    frame = int(touched.what.split()[2])
    out = tmp_path / "after_end.vmd"
    assert bpy.ops.export_anim.skinbridge_vmd(filepath=str(out)) == {"FINISHED"}
    a, b = vmd.read(motion.read_bytes()), vmd.read(out.read_bytes())
    assert len(b.bone_keys) == len(a.bone_keys) + 1 and b.bone_keys[:-1].tobytes() == a.bone_keys.tobytes()
    added = b.bone_keys[-1]
    assert (vmd.decode_name(bytes(added["name"])), int(added["frame"])) == (touched.names[0], frame)
    assert frame > int(a.bone_keys["frame"].max())

    bpy.ops.wm.read_factory_settings(use_empty=True)
    _import(model)
    _import(motion)
    ek.apply("move-bone-rest")
    out = tmp_path / "rest.vmd"
    assert bpy.ops.export_anim.skinbridge_vmd(filepath=str(out)) == {"FINISHED"}
    assert out.read_bytes() == motion.read_bytes()


@pytest.mark.default_leg
def test_renamed_ik_bone_keys_and_states_take_its_new_name(clean_scene, testdata, tmp_path):
    """VMD: an IK bone renamed in Blender has its keys and its on/off states written under its new name; the
    frames, values and the other bones' names are the file's."""
    motion = testdata / "pmx" / "babylonmmd_physics_toggle_test_yyb10th.vmd"
    a, b, _ = _renamed_in_motion(testdata / "pmx" / "mmdtools_megurine_luka.pmx", motion, "左足ＩＫ", "左足ＩＫ改",
                                 tmp_path)

    def renamed(raw: bytes) -> str:
        name = vmd.decode_name(raw)
        return "左足ＩＫ改" if name == "左足ＩＫ" else name

    assert [vmd.decode_name(bytes(n)) for n in b.bone_keys["name"]] == [renamed(bytes(n)) for n in a.bone_keys["name"]]
    for column in ("frame", "position", "rotation", "interpolation"):
        assert np.array_equal(a.bone_keys[column], b.bone_keys[column])
    assert [(k.frame, k.visible) for k in b.property_keys] == [(k.frame, k.visible) for k in a.property_keys]
    states = [[(vmd.decode_name(bytes(s["name"])), int(s["enabled"])) for s in k.ik] for k in b.property_keys]
    assert states == [[(renamed(bytes(s["name"])), int(s["enabled"])) for s in k.ik] for k in a.property_keys]
    assert any(name == "左足ＩＫ改" for key in states for name, _ in key)



@pytest.mark.default_leg
def test_texture_paths_keep_the_files_spelling(clean_scene, testdata, tmp_path):
    """A texture table written "./a2.spa" or with forward slashes (babylon-mmd's matcap sample has "./ref.jpg") comes
    back as the file spells it, from `convert` and through Blender; an edit elsewhere leaves it alone (it was
    normalised to "a2.spa" and "tex\\a3.spa": `textures[N]` changed on every export)."""
    model = pmx.read((testdata / "pmx" / "mmdtools_megurine_luka.pmx").read_bytes())
    spelled = ["./" + model.textures[0], "tex/" + model.textures[1]] + model.textures[2:]
    model.textures = spelled
    src = tmp_path / "spelled.pmx"
    src.write_bytes(pmx.write(model))
    done = subprocess.run([sys.executable, str(ROOT / "cli.py"), "convert", str(src), "--to", "pmx", "-o",
                           str(tmp_path / "converted")], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert (tmp_path / "converted" / "spelled.pmx").read_bytes() == src.read_bytes()
    _import(src)
    _export_pmx(tmp_path)
    assert (tmp_path / "out.pmx").read_bytes() == src.read_bytes()
    ob = next(o for o in bpy.data.objects if o.type == "MESH")
    ob.data.vertices[0].co.x += 0.01
    assert _export_pmx(tmp_path, "moved.pmx").textures == spelled
    assert not [r for r, _ in _differences(src, tmp_path / "moved.pmx") if r.startswith("textures")]
