"""Operator ids renamed for one naming scheme (`<category>.skinbridge_<format>`) keep their old ids as aliases, so
users' `blender -b -P` scripts written for earlier versions still run (README "Installing the add-on")."""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.blender

RENAMED = {  # old id → new id
    "import_scene.urhox_mdl": "import_scene.skinbridge_urhox",
    "export_scene.urhox_mdl": "export_scene.skinbridge_urhox",
    "import_scene.urhox_ani": "import_anim.skinbridge_urhox_ani",
    "export_scene.urhox_ani": "export_anim.skinbridge_urhox_ani",
    "import_scene.nwn2_mdb": "import_scene.skinbridge_mdb",
    "export_scene.nwn2_mdb": "export_scene.skinbridge_mdb",
}


def _op(idname: str):
    import bpy

    category, name = idname.split(".")
    return getattr(getattr(bpy.ops, category), name)


def _properties(idname: str) -> dict:
    return {p.identifier: (p.type, getattr(p, "default", None)) for p in _op(idname).get_rna_type().properties
            if p.identifier != "rna_type"}


@pytest.mark.parametrize("old, new", sorted(RENAMED.items()))
def test_an_old_id_is_the_new_operator_under_its_old_name(addon, old, new):
    assert _properties(old) == _properties(new) and len(_properties(new)) > 1


@pytest.mark.parametrize("idname", ["import_scene.urhox_mdl", "import_scene.skinbridge_urhox"])
def test_the_old_and_the_new_id_import(clean_scene, testdata, idname):
    import bpy

    path = testdata / "urho3d" / "Box.mdl"
    assert _op(idname)(filepath=str(path)) == {"FINISHED"}
    assert [(o.name, o.type) for o in bpy.data.objects] == [("Box", "MESH")]


def test_the_menus_show_only_the_new_ids(addon):
    from skinbridge import formats

    ids = {s.import_operator for s in formats.all_specs()} | {s.export_operator for s in formats.all_specs()}
    assert not ids & set(RENAMED), "the registry names the new ids"
    assert set(RENAMED.values()) <= ids
