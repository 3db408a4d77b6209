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


def one_model(meshes: list, arm, model_prop: str) -> tuple[list, object]:
    """(meshes, armature) an export takes when no armature chooses: meshes that different imports made (their
    `model_prop` token, one per import) are different models, as two armatures are, so with several of them
    those of the models the selection touches are taken, with the meshes made in Blender (which belong to
    none); NoTarget names them when the selection touches none. A file imported twice is so written as it was,
    not merged with its copy."""
    if arm is not None:
        return meshes, arm
    models: dict[str, list] = {}
    for ob in meshes:
        if isinstance(ob.get(model_prop), str):
            models.setdefault(ob[model_prop], []).append(ob)
    if len(models) < 2:
        return meshes, arm
    chosen = {token for token, obs in models.items() if any(ob.select_get() for ob in obs)}
    if not chosen:
        names = ", ".join(obs[0].name for obs in models.values())
        raise NoTarget(f"{len(models)} models could be exported ({names}): select one (a mesh of it)")
    return [ob for ob in meshes if ob.get(model_prop) in chosen or not isinstance(ob.get(model_prop), str)], arm
