"""Which objects an operator acts on: the armature a motion goes onto, the model an export takes."""
from __future__ import annotations


class NoTarget(ValueError):
    """Nothing, or more than one thing, could be the target; the message names the candidates."""


def armature_of(ob):
    """The armature that deforms or carries `ob` (itself when it is one), or None."""
    if ob is None:
        return None
    if ob.type == "ARMATURE":
        return ob
    for mod in getattr(ob, "modifiers", ()):
        if mod.type == "ARMATURE" and mod.object is not None:
            return mod.object
    parent = ob.parent
    while parent is not None:
        if parent.type == "ARMATURE":
            return parent
        parent = parent.parent
    return None


def armatures(context) -> list:
    return [o for o in context.view_layer.objects if o.type == "ARMATURE"]


def find_armature(context, required: bool = False):
    """The armature the user means: the active object's (the armature, or the one deforming the active mesh),
    else the one selected (or deforming what is selected), else the only one in the view layer. With several
    candidates and none chosen: None, or NoTarget naming them when `required`."""
    layer = context.view_layer
    active = armature_of(layer.objects.active)
    if active is not None:
        return active
    chosen = []
    for ob in layer.objects:
        if ob.select_get():
            arm = armature_of(ob)
            if arm is not None and arm not in chosen:
                chosen.append(arm)
    if len(chosen) == 1:
        return chosen[0]
    candidates = chosen or armatures(context)
    if len(candidates) == 1:
        return candidates[0]
    if required:
        if not candidates:
            raise NoTarget("the scene has no armature")
        names = ", ".join(sorted(a.name for a in candidates))
        raise NoTarget(f"{len(candidates)} armatures could be meant ({names}): select one")
    return None
