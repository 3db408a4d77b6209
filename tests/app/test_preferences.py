"""The add-on's preferences (README "Preferences", docs/blender.md §11): a default for every export option of
every target, made from the format specs; an export operator invoked starts from them, a value its caller set
wins, and the command line is unaffected."""
from __future__ import annotations

import pytest

bpy = pytest.importorskip("bpy")

from skinbridge import cli, formats  # noqa: E402  (after the bpy check: these modules need Blender)
from skinbridge.app import operators  # noqa: E402
from skinbridge.app.options import ConvertOptions  # noqa: E402
from support.sidebar import import_file  # noqa: E402

pytestmark = pytest.mark.blender


def test_every_export_option_of_every_target_has_a_default(prefs):
    for target, spec in formats.targets().items():
        exported = [o for o in spec.options if not o.reading]
        group = getattr(prefs, f"defaults_{target}", None)
        if not exported:
            assert group is None, target
            continue
        assert set(group.bl_rna.properties.keys()) - {"rna_type", "name"} == {o.name for o in exported}
        for o in exported:
            default = o.default if o.default is not None else o.ui_default
            assert getattr(group, o.name) == (default if default is not None else type(getattr(group, o.name))()), \
                (target, o.name)


class InvokedExport:
    """What Blender hands an export operator's invoke: its properties, the caller's keywords marked as set, and
    `execute`, here the real operator run with the values invoke left. (bpy.ops calls an operator's invoke only
    with a window's event, and the bpy module has none to give.)"""

    def __init__(self, idname: str, **given):
        category, _, name = idname.partition(".")
        object.__setattr__(self, "op", getattr(getattr(bpy.ops, category), name))
        object.__setattr__(self, "bl_idname", idname)
        object.__setattr__(self, "bl_rna", self.op.get_rna_type())
        object.__setattr__(self, "values", dict(given))
        object.__setattr__(self, "given", set(given))

    @property
    def properties(self) -> "InvokedExport":
        return self

    def is_property_set(self, name: str) -> bool:
        return name in self.given

    def __getattr__(self, name: str):
        return self.values[name] if name in self.values else self.bl_rna.properties[name].default

    def __setattr__(self, name: str, value) -> None:
        assert name in self.bl_rna.properties, name
        self.values[name] = value

    def execute(self, context) -> set[str]:
        return self.op("EXEC_DEFAULT", **self.values)


def _export_mdb(path, **given) -> set[str]:
    idname = operators.export_idname(formats.targets()["mdb"])
    op = InvokedExport(idname, filepath=str(path), **given)
    cls = getattr(bpy.types, op.op.idname())
    assert bpy.app.background  # no file browser: invoke runs the export with the path given
    return cls.invoke(op, bpy.context, None)


def test_a_preference_changes_the_operators_default_and_not_the_cli(prefs, testdata, tmp_path, capfd):
    """A skinned NWN2 model names its GR2 skeleton: the MDB export of Fox refuses without one."""
    fox = testdata / "gltf" / "Fox.glb"
    import_file(fox)
    with pytest.raises(RuntimeError, match="--skeleton NAME"):  # bpy.ops raises an operator's error report
        _export_mdb(tmp_path / "a.mdb")
    prefs.defaults_mdb.skeleton = "P_HHM_skel"
    assert _export_mdb(tmp_path / "b.mdb") == {"FINISHED"} and (tmp_path / "b.mdb").is_file()
    with pytest.raises(RuntimeError, match="--skeleton NAME"):  # the caller's value wins
        _export_mdb(tmp_path / "c.mdb", skeleton="")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.mdb"]
    assert ConvertOptions(target="mdb").skeleton is None  # what the command line starts from
    capfd.readouterr()
    assert cli.main(["check-target", str(fox), "--to", "mdb"]) == 1
    assert "--skeleton NAME" in capfd.readouterr().out
