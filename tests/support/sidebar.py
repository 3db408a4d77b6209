"""The SkinBridge sidebar drawn without a screen, for the Blender tests of the tab (docs/blender.md §10): a stand-in
UILayout that records the labels and fails on a property, operator or icon Blender does not have; every panel of
the tab drawn against it; and a file imported through the operator the registry names for it. Needs Blender."""
from __future__ import annotations

import bpy

from skinbridge import formats
from skinbridge.app import operators

ICONS = set(bpy.types.UILayout.bl_rna.functions["label"].parameters["icon"].enum_items.keys())


class StandInLayout:
    """A UILayout that records labels and refuses a prop() naming no RNA property, an operator that does not
    exist or an icon Blender does not have."""

    def __init__(self, record: list | None = None):
        self.labels = record if record is not None else []

    def _sub(self, *args, **kwargs) -> "StandInLayout":
        return StandInLayout(self.labels)

    column = row = box = grid_flow = split = _sub

    def label(self, text: str = "", icon: str = "NONE", **kwargs) -> None:
        assert icon in ICONS, icon
        self.labels.append(text)

    def prop(self, data, name: str, text: str | None = None, **kwargs) -> None:
        if name.startswith('["'):
            assert name[2:-2] in data.keys(), name
        else:
            assert name in data.bl_rna.properties.keys(), f"{type(data).__name__} has no property {name}"

    def operator(self, idname: str, text: str = "", icon: str = "NONE", **kwargs) -> "StandInOperatorProperties":
        category, _, name = idname.partition(".")
        assert icon in ICONS, icon
        return StandInOperatorProperties(getattr(getattr(bpy.ops, category), name).get_rna_type())


class StandInOperatorProperties:
    """What `layout.operator()` returns: setting a property the operator does not have fails."""

    def __init__(self, rna):
        object.__setattr__(self, "rna", rna)

    def __setattr__(self, name: str, value) -> None:
        assert name in self.rna.properties.keys(), f"{self.rna.identifier} has no property {name}"


class StandInPanel:
    def __init__(self):
        self.layout = StandInLayout()


def panels():
    return [bpy.types.VIEW3D_PT_skinbridge, bpy.types.VIEW3D_PT_skinbridge_target,
            bpy.types.VIEW3D_PT_skinbridge_report, bpy.types.VIEW3D_PT_skinbridge_mmd]


def drawn(context) -> list[str]:
    """Every panel of the tab drawn against the stand-in layout: the labels, in order."""
    labels = []
    for cls in panels():
        panel = StandInPanel()
        cls.draw(panel, context)
        labels += panel.layout.labels
    return labels


def import_file(path) -> None:
    """`path` imported by the File › Import operator of the format its content names."""
    spec = formats.identify_file(path)
    idname = operators.import_idname(spec)
    category, _, name = idname.partition(".")
    assert getattr(getattr(bpy.ops, category), name)(filepath=str(path)) == {"FINISHED"}
