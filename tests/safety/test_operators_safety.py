"""Operators act on what the user chose: the armature a motion goes onto, the model an export takes, the
collection a Collection Exporter names; import leaves its objects selected and active; the contact sheet
leaves the user's pose as it was."""
from __future__ import annotations

import os

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from support.blender_scenes import import_urhox  # noqa: E402
from skinbridge import formats  # noqa: E402

pytestmark = pytest.mark.blender

URHO = "urho3d"


_import = import_urhox


def _deselect_all():
    for ob in bpy.context.view_layer.objects:
        ob.select_set(False)
    bpy.context.view_layer.objects.active = None


def _arm(objects):
    return next(o for o in objects if o.type == "ARMATURE")


@pytest.fixture
def two_models(clean_scene, testdata):
    ninja = _import(testdata / URHO / "Ninja.mdl")
    kachujin = _import(testdata / URHO / "Kachujin.mdl")
    return ninja, kachujin


def _mdl_counts(tmp_path, name) -> tuple[int, int]:
    info = formats.get("umd2").get("info")
    path = tmp_path / name
    doc = info(path.read_bytes(), str(path))
    return doc["vertices"], doc["bones"]


@pytest.fixture(scope="module")
def alone_counts(tmp_path_factory, testdata, addon):
    """Each model exported from a scene holding only it: the counts an export of that model must give."""
    out = tmp_path_factory.mktemp("alone")
    counts = {}
    for name in ("Ninja", "Kachujin"):
        bpy.ops.wm.read_factory_settings(use_empty=True)
        _import(testdata / URHO / f"{name}.mdl")
        assert bpy.ops.export_scene.skinbridge_urhox(filepath=str(out / f"{name}.mdl")) == {"FINISHED"}
        counts[name] = _mdl_counts(out, f"{name}.mdl")
    bpy.ops.wm.read_factory_settings(use_empty=True)
    assert counts["Ninja"] != counts["Kachujin"]
    return counts


# -- export ----------------------------------------------------------------------------------------------------

def _export_operators():
    """(idname, kind) of every model and motion export operator the add-on registers, from the registry."""
    from skinbridge.app.operators import export_idname

    out = []
    for spec in formats.all_specs():
        if spec.foreign_operators or spec.kind == "texture":  # texture exporters write an image, not a model
            continue
        idname = export_idname(spec)
        if idname:
            out.append((idname, spec.extensions[0]))
    return sorted(set(out))


def _call(idname: str, path: str, **props):
    group, _, name = idname.partition(".")
    op = getattr(getattr(bpy.ops, group), name)
    rna = op.get_rna_type().properties
    kwargs = {k: v for k, v in props.items() if k in rna}
    if "filepath" in rna:
        kwargs["filepath"] = path
    if "directory" in rna:
        kwargs["directory"] = os.path.dirname(path)
    return op("EXEC_DEFAULT", **kwargs)


# NWN2 MDB gathers its objects itself (io_mdb/mdb/blender_io.py), not through scene.exportable_objects
@pytest.mark.parametrize("idname,ext", _export_operators())
def test_every_export_operator_refuses_two_models_with_nothing_selected(idname, ext, two_models, tmp_path):
    ninja, kachujin = two_models
    _deselect_all()
    with pytest.raises(RuntimeError) as e:
        _call(idname, str(tmp_path / f"out{ext}"))
    message = str(e.value)
    assert _arm(ninja).name in message and _arm(kachujin).name in message, (idname, message)
    assert list(tmp_path.iterdir()) == []


def test_the_registry_has_export_operators_to_check():
    assert len(_export_operators()) >= 4


def test_export_with_one_model_selected_takes_that_model_only(two_models, alone_counts, tmp_path):
    ninja, kachujin = two_models
    for name, objects in (("Ninja", ninja), ("Kachujin", kachujin)):
        _deselect_all()
        _arm(objects).select_set(True)  # the armature alone chosen: its whole model is exported
        assert bpy.ops.export_scene.skinbridge_urhox(filepath=str(tmp_path / f"{name}.mdl")) == {"FINISHED"}
        assert _mdl_counts(tmp_path, f"{name}.mdl") == alone_counts[name]
    _deselect_all()
    mesh = next(o for o in kachujin if o.type == "MESH")
    mesh.select_set(True)  # a mesh of the model chosen
    assert bpy.ops.export_scene.skinbridge_urhox(filepath=str(tmp_path / "k2.mdl")) == {"FINISHED"}
    assert _mdl_counts(tmp_path, "k2.mdl") == alone_counts["Kachujin"]


def test_collection_exporter_takes_exactly_its_collection(two_models, alone_counts, tmp_path):
    ninja, kachujin = two_models
    coll = bpy.data.collections.new("NinjaOnly")
    bpy.context.scene.collection.children.link(coll)
    for ob in ninja:
        coll.objects.link(ob)
    bpy.ops.mesh.primitive_cube_add()  # outside the collection: never exported with it
    _deselect_all()
    kachujin[0].select_set(True)  # a selection elsewhere does not matter either
    with_collection = [(i, e) for i, e in _export_operators()
                       if "collection" in _rna(i)]
    assert ("export_scene.skinbridge_urhox", ".mdl") in with_collection
    assert _call("export_scene.skinbridge_urhox", str(tmp_path / "c.mdl"), collection="NinjaOnly") == {"FINISHED"}
    assert _mdl_counts(tmp_path, "c.mdl") == alone_counts["Ninja"]
    for idname, ext in with_collection:  # every exporter with a collection: the other model's bones never appear
        if idname == "export_scene.skinbridge_urhox" or idname.startswith("export_anim."):
            continue  # motion exporters need an action: tests/safety/test_operators_scene.py
        _call(idname, str(tmp_path / f"c{ext}"), collection="NinjaOnly", skeleton="P_HHM_skel")
        # a Wallpaper Engine project is its folder's project.json, whatever file name was chosen
        assert (tmp_path / ("project.json" if idname.endswith("_weproject") else f"c{ext}")).exists(), idname


def _pmx_counts(path) -> tuple[int, int]:
    doc = formats.get("pmx").get("info")(path.read_bytes(), str(path))
    return doc["vertices"], doc["bones"]


def test_collection_exporter_through_blender(two_models, tmp_path):
    """Blender's own Collection Exporter (collection properties, Export All) calls our operator with the
    collection's name: the file holds that model, the same as exporting a scene holding only it."""
    ninja, kachujin = two_models
    coll = bpy.data.collections.new("NinjaOnly")
    bpy.context.scene.collection.children.link(coll)
    for ob in ninja:
        coll.objects.link(ob)
    bpy.ops.mesh.primitive_cube_add()
    cube = bpy.context.active_object
    handler = next(h for h in bpy.types.FileHandler.__subclasses__()
                   if getattr(h, "bl_export_operator", "") == "export_scene.skinbridge_pmx")
    with bpy.context.temp_override(collection=coll):
        bpy.ops.collection.exporter_add(name=handler.bl_idname)
        coll.exporters[-1].export_properties.filepath = str(tmp_path / "viaBlender.pmx")
        bpy.ops.collection.export_all()
    got = _pmx_counts(tmp_path / "viaBlender.pmx")
    bpy.data.batch_remove([*kachujin, cube])
    assert bpy.ops.export_scene.skinbridge_pmx(filepath=str(tmp_path / "alone.pmx")) == {"FINISHED"}
    assert got == _pmx_counts(tmp_path / "alone.pmx")


def _rna(idname):
    group, _, name = idname.partition(".")
    return getattr(getattr(bpy.ops, group), name).get_rna_type().properties


def test_two_models_are_never_welded_in_convert_style_export(two_models, tmp_path):
    """The gather of what is exported: with both models selected it refuses instead of taking the first
    armature and attaching the other model rigidly to one of its bones."""
    from skinbridge.blender.scene import exportable_objects
    from skinbridge.blender.selection import NoTarget

    for ob in bpy.context.view_layer.objects:
        ob.select_set(True)
    with pytest.raises(NoTarget, match="2 rigged models"):
        exportable_objects(bpy.context)


# -- motion import -------------------------------------------------------------------------------------------

def _action_state(arm):
    ad = arm.animation_data
    return (sorted(a.name for a in bpy.data.actions), ad.action.name if ad and ad.action else None)


def test_motion_import_with_an_unrelated_mesh_active_refuses_naming_the_armatures(two_models, testdata):
    ninja, kachujin = two_models
    bpy.ops.mesh.primitive_cube_add()  # active, selected, deformed by nothing
    state = [_action_state(_arm(m)) for m in (ninja, kachujin)]
    for call, path in ((bpy.ops.import_anim.skinbridge_urhox_ani, testdata / URHO / "Ninja_Walk.ani"),
                       (bpy.ops.import_anim.skinbridge_vmd, testdata / "pmx" / "mlibgo_shagamu.vmd")):
        with pytest.raises(RuntimeError) as e:
            call(filepath=str(path))
        assert _arm(ninja).name in str(e.value) and _arm(kachujin).name in str(e.value)
    assert [_action_state(_arm(m)) for m in (ninja, kachujin)] == state


def test_motion_matching_no_bone_is_an_error_that_changes_nothing(two_models, testdata):
    ninja, kachujin = two_models
    _deselect_all()
    arm = _arm(kachujin)
    arm.select_set(True)
    bpy.context.view_layer.objects.active = arm
    assert bpy.ops.import_anim.skinbridge_urhox_ani(filepath=str(testdata / URHO / "Kachujin_Walk.ani")) == {"FINISHED"}
    state = _action_state(arm)
    objects = set(bpy.data.objects)
    # Ninja's 24 tracks are named Joint1..; Kachujin has no such bone
    with pytest.raises(RuntimeError, match="Ninja_Walk.ani.*none of its"):
        bpy.ops.import_anim.skinbridge_urhox_ani(filepath=str(testdata / URHO / "Ninja_Walk.ani"))
    assert _action_state(arm) == state
    # a VMD onto a rig none of whose bones it names: the same, and no camera object left behind
    _deselect_all()
    nin = _arm(ninja)
    nin.select_set(True)
    bpy.context.view_layer.objects.active = nin
    before = _action_state(nin)
    with pytest.raises(RuntimeError, match="shagamu.vmd"):
        bpy.ops.import_anim.skinbridge_vmd(filepath=str(testdata / "pmx" / "mlibgo_shagamu.vmd"))
    assert _action_state(nin) == before and set(bpy.data.objects) == objects


def test_multi_file_motion_import_keeps_the_good_file_and_names_the_bad(two_models, testdata, tmp_path):
    ninja, _ = two_models
    _deselect_all()
    arm = _arm(ninja)
    bpy.context.view_layer.objects.active = arm
    bad = tmp_path / "broken.ani"
    bad.write_bytes(b"UANI\xff\xff")
    good = testdata / URHO / "Ninja_Walk.ani"
    import shutil

    shutil.copyfile(good, tmp_path / "Ninja_Walk.ani")
    with pytest.raises(RuntimeError, match="broken.ani: offset"):  # the error report names the file
        bpy.ops.import_anim.skinbridge_urhox_ani(directory=str(tmp_path),
                                       files=[{"name": "broken.ani"}, {"name": "Ninja_Walk.ani"}])
    assert arm.animation_data.action.name == "Ninja_Walk"
    assert "broken" not in [a.name for a in bpy.data.actions]


# -- import selection ----------------------------------------------------------------------------------------

def test_import_leaves_the_new_objects_selected_and_the_armature_active(clean_scene, testdata):
    bpy.ops.mesh.primitive_cube_add()
    cube = bpy.context.active_object
    new = _import(testdata / URHO / "Ninja.mdl")
    assert {o for o in bpy.context.view_layer.objects if o.select_get()} == set(new)
    assert bpy.context.view_layer.objects.active == _arm(new)
    assert not cube.select_get()
    new_box = _import(testdata / URHO / "Box.mdl")  # no armature: its mesh is active
    assert bpy.context.view_layer.objects.active == new_box[0] and new_box[0].type == "MESH"
    assert {o for o in bpy.context.view_layer.objects if o.select_get()} == set(new_box)


# -- contact sheet ----------------------------------------------------------------------------------------------

@pytest.mark.slow
def test_contact_sheet_keeps_unkeyed_pose_edits(clean_scene, testdata, tmp_path):
    objects = _import(testdata / URHO / "Ninja.mdl")
    arm = _arm(objects)
    bpy.context.view_layer.objects.active = arm
    assert bpy.ops.import_anim.skinbridge_urhox_ani(filepath=str(testdata / URHO / "Ninja_Walk.ani")) == {"FINISHED"}
    bpy.context.scene.frame_set(1)
    pb = arm.pose.bones[3]
    pb.location = (0.25, -0.5, 0.125)  # an edit the user has not keyed
    pb.rotation_mode = "QUATERNION"
    pb.rotation_quaternion = (0.0, 1.0, 0.0, 0.0)
    bpy.context.view_layer.update()
    want = (tuple(pb.location), tuple(pb.rotation_quaternion))
    out = tmp_path / "sheet.png"
    assert bpy.ops.skinbridge.render_sheet(filepath=str(out), pose="FRAMES", frame_start=5, frame_end=9,
                                           frame_step=4) == {"FINISHED"}
    assert out.read_bytes().startswith(b"\x89PNG")
    got = (tuple(pb.location), tuple(pb.rotation_quaternion))
    np.testing.assert_allclose(np.concatenate(got[0:1] + got[1:]), np.concatenate(want[0:1] + want[1:]),
                               atol=1e-6)


def test_export_never_overwrites_a_file_the_scene_uses(clean_scene, testdata, tmp_path):
    from skinbridge.core.png import encode_png

    _import(testdata / URHO / "Ninja.mdl")
    texture = tmp_path / "skin.mdl"  # a texture file the user named like the export target
    texture.write_bytes(encode_png(np.full((2, 2, 4), 90, np.uint8)))
    before = texture.read_bytes()
    img = bpy.data.images.load(str(texture))
    img.filepath = str(texture)
    with pytest.raises(RuntimeError, match="it is the input"):
        bpy.ops.export_scene.skinbridge_urhox(filepath=str(texture))
    assert texture.read_bytes() == before and sorted(os.listdir(tmp_path)) == ["skin.mdl"]
