"""MMD physics that simulates: what makes a model's rigid bodies and joints (`blender_physics`) move it in
Blender as MMD does (docs/mmd.md §6).

* Collisions: MMD's group/mask rule laid out on Blender's 20 collision collections (io_pmx.model.collision);
  pairs that share a collection although MMD keeps them apart get disabled collisions: on their joint when
  one joins them, else on a GENERIC constraint (`ncc`) when they are near at rest (`NEAR` × the sum of their
  sizes), as mmd_tools does; farther excluded pairs may touch in Blender (docs/mmd.md §6.1).
* Bones: a bone whose body is dynamic takes the world transform of an empty (`track`) parented to the body and
  placed at the bone's rest, so the bone is where the body is, whatever its parents do (a Child Of would add
  the parent's motion a second time). Mode 1 copies the whole transform, mode 2 the rotation only; a mode 2
  body jointed to the dynamic body of its bone's parent moves as mode 1, as MMD does.
* World: one Bullet step per 1/60 s of scene time (MMD's fixed step); gravity MMD's 98 units/s² at the
  model's scale (7.84 m/s² at 0.08), set on the scene because Blender has one gravity per scene: it is set
  only when nothing else in the scene falls by it (no other rigid bodies, cloth, soft bodies or particles),
  else left as it is with a warning (docs/mmd.md §6.2).
* Off (posing): the follow constraints off and the dynamic bodies out of the simulation, at rest.
"""
from __future__ import annotations

import bpy
import numpy as np
from mathutils import Matrix

from ...blender import scene as bscene
from ...blender.props import MODEL_DATA_PROP
from ..model.collision import collides, collision_layout
from . import blender_physics as bp
from .blender_motion_model import model_metres_per_unit
from . import blender_mmd

NEAR = 1.5  # excluded pairs closer at rest than this × the sum of their sizes get a disabled-collision constraint
STEP = 1.0 / 60.0  # MMD's fixed physics step, seconds
GRAVITY = 98.0  # MMD's gravity, units/s² (9.8 m/s² at MMD's nominal 10 units a metre)
TRACK = "track"
NCC = "ncc"
IK_MUTED = "mmd_ik_under_physics"  # pose bone property: names of its IK constraints the physics turned off


def _mode(ob) -> int:
    if ob.rigid_body is not None and ob.rigid_body.kinematic:
        return 0
    mode = int(ob.get("mmd_mode", 1))
    return mode if mode in (1, 2) else 1


def set_world_step(scene) -> None:
    """Bullet steps of `STEP` seconds: substeps per frame of the scene's frame rate."""
    world = scene.rigidbody_world
    fps = scene.render.fps / (scene.render.fps_base or 1.0)
    world.substeps_per_frame = max(1, round(1.0 / (fps * STEP)))
    follow_scene_range(scene)


def follow_scene_range(scene) -> bool:
    """The rigid-body world's cache (its simulation range) made the scene's frame range, from the scene's
    first frame (which may be 0, as a VMD's is): Blender stops simulating at the cache's last frame, and the
    bodies then stay where they were while the motion goes on (docs/mmd.md §6.3). Returns whether the scene
    has a rigid-body world."""
    world = scene.rigidbody_world
    if world is None:
        return False
    cache = world.point_cache
    start, end = scene.frame_start, max(scene.frame_end, scene.frame_start + 1)
    if (cache.frame_start, cache.frame_end) != (start, end):
        # set in the order that keeps start < end at every step (Blender clamps one against the other)
        if start >= cache.frame_end:
            cache.frame_end, cache.frame_start = end, start
        else:
            cache.frame_start, cache.frame_end = start, end
    return True


def _falls_by_gravity(ob) -> bool:
    """Whether a scene object other than an MMD body simulates under the scene's gravity."""
    if ob.rigid_body is not None and ob.get(bp.KIND_PROP) != "rigid" and ob.rigid_body.type == "ACTIVE":
        return True
    return any(m.type in ("CLOTH", "SOFT_BODY", "PARTICLE_SYSTEM") for m in getattr(ob, "modifiers", ()))


def set_gravity(scene, scale: float) -> list[str]:
    """The scene's gravity made MMD's at the model's scale (straight down, 98 units/s² × `scale`) unless
    something else in the scene falls by it; returns a warning when it is left."""
    want = (0.0, 0.0, -GRAVITY * scale)
    others = [ob.name for ob in scene.objects if _falls_by_gravity(ob)]
    if others:
        have = float(np.linalg.norm(scene.gravity))
        if abs(have - GRAVITY * scale) > 1e-6 or not scene.use_gravity:
            return [f"scene gravity left at {have:g} m/s² (it also moves {', '.join(sorted(others)[:3])}"
                    f"{' ...' if len(others) > 3 else ''}); MMD physics at this scale falls at "
                    f"{GRAVITY * scale:g} m/s²"]
        return []
    scene.use_gravity = True
    scene.gravity = want
    return []


def _remove(objects) -> None:
    for ob in list(objects):
        bpy.data.objects.remove(ob)


def _helpers(arm_ob, kind: str) -> list:
    coll = bp.find_collection(arm_ob)
    return [o for o in coll.all_objects if o.get(bp.KIND_PROP) == kind] if coll is not None else []


def _follow_constraints(arm_ob) -> list:
    return [(pb, c) for pb in arm_ob.pose.bones for c in pb.constraints if bp.followed_body(c) is not None]


def apply_collisions(context, arm_ob) -> int:
    """Collision collections, joints' disabled collisions and `ncc` constraints from each body's group and
    mask; returns the number of `ncc` constraints."""
    _remove(_helpers(arm_ob, NCC))
    bodies, joints = bp.physics_objects(arm_ob)
    if not bodies:
        return 0
    groups = [int(ob.get(bp.GROUP_PROP, 0)) for ob in bodies]
    masks = [int(ob.get(bp.MASK_PROP, 0xFFFF)) for ob in bodies]
    member, apart = collision_layout(groups, masks)
    meet = collides(groups, masks)
    for ob, row in zip(bodies, member):
        ob.rigid_body.collision_collections = row.tolist()
    index = {ob.name: k for k, ob in enumerate(bodies)}
    for ob in joints:
        c = ob.rigid_body_constraint
        i, j = index.get(getattr(c.object1, "name", None)), index.get(getattr(c.object2, "name", None))
        if i is not None and j is not None:
            c.disable_collisions = not meet[i, j]
            apart[i, j] = apart[j, i] = False
    # at rest, whatever the frame: a body's world matrix is where the last frame left it (or, new, not yet
    # evaluated), and a rebuild after Clear found 311 of Luka's 819 near pairs from it
    centres = np.array([np.array(bp.rest_matrix(ob).translation) for ob in bodies])
    size = np.array([float(max(ob.dimensions)) / 2 for ob in bodies])
    near = np.linalg.norm(centres[:, None] - centres[None], axis=2) <= NEAR * (size[:, None] + size[None])
    coll = bp.find_collection(arm_ob)
    made = 0
    for i, j in zip(*np.nonzero(np.triu(apart & near, 1))):
        ob = bpy.data.objects.new(f"ncc {bodies[i].name} {bodies[j].name}", None)
        coll.objects.link(ob)
        ob[bp.KIND_PROP] = NCC
        ob[MODEL_DATA_PROP] = True
        ob.hide_viewport = True
        c = bp.constraint_of(context, ob, "GENERIC")
        c.object1, c.object2 = bodies[i], bodies[j]
        c.disable_collisions = True
        made += 1
    return made


def _effective_modes(arm_ob, bodies, joints, bones: list) -> list[int]:
    """Each body's mode as MMD runs it: mode 2 jointed to the dynamic body of its bone's parent moves as 1."""
    modes = [_mode(ob) for ob in bodies]
    index = {ob.name: k for k, ob in enumerate(bodies)}
    for ob in joints:
        c = ob.rigid_body_constraint
        i, j = index.get(getattr(c.object1, "name", None)), index.get(getattr(c.object2, "name", None))
        if i is None or j is None:
            continue
        for a, b in ((i, j), (j, i)):
            if modes[a] != 0 and modes[b] == 2 and bones[b] and bones[a]:
                parent = arm_ob.data.bones[bones[b]].parent
                if parent is not None and parent.name == bones[a]:
                    modes[b] = 1
    return modes


def _track(coll, arm_ob, body, bone_name: str):
    """An empty parented to `body`, at `bone_name`'s rest world transform while the body is at rest."""
    ob = bpy.data.objects.new(f"{body.name} {TRACK}", None)
    coll.objects.link(ob)
    ob[bp.KIND_PROP] = TRACK
    ob[MODEL_DATA_PROP] = True
    ob.hide_viewport = True
    ob.parent = body
    ob.matrix_parent_inverse = bp.rest_matrix(body).inverted()
    ob.matrix_basis = Matrix(arm_ob.matrix_world) @ arm_ob.data.bones[bone_name].matrix_local
    return ob


def link_bones(context, arm_ob, enabled: bool = True) -> int:
    """Every dynamic body's bone follows it (constraints named `FOLLOW`, replacing earlier ones); returns how
    many bones follow a body."""
    bodies, joints = bp.physics_objects(arm_ob)
    bones = [bp.bone_of(ob, arm_ob) for ob in bodies]
    for pb, c in _follow_constraints(arm_ob):
        pb.constraints.remove(c)
    _remove(_helpers(arm_ob, TRACK))
    coll = bp.find_collection(arm_ob)
    linked = 0
    for ob, bone, mode in zip(bodies, bones, _effective_modes(arm_ob, bodies, joints, bones)):
        if mode == 0 or not bone:
            continue
        ob[bp.BONE_PROP] = bone
        c = arm_ob.pose.bones[bone].constraints.new("COPY_TRANSFORMS" if mode == 1 else "COPY_ROTATION")
        c.name = bp.FOLLOW
        c.target = _track(coll, arm_ob, ob, bone)
        c.enabled = enabled
        linked += 1
    return linked


def _ik_chain(pb, c) -> list[str]:
    """The pose bones an IK constraint on `pb` turns: `pb` and its parents, `chain_count` in all (0: to the
    root)."""
    chain: list[str] = []
    while pb is not None and (c.chain_count == 0 or len(chain) < c.chain_count):
        chain.append(pb.name)
        pb = pb.parent
    return chain


def ik_under_physics(arm_ob) -> list:
    """(pose bone, IK constraint) whose every bone follows a dynamic body: MMD solves IK before the physics and
    the bodies then place those bones, so the IK shows nothing there; Blender solves IK after a bone's other
    constraints and would leave the bones off their bodies (docs/mmd.md §6.2)."""
    driven = {pb.name for pb, _ in _follow_constraints(arm_ob)}
    return [(pb, c) for pb in arm_ob.pose.bones for c in pb.constraints
            if c.type == "IK" and driven.issuperset(_ik_chain(pb, c))]


def _mute_ik(arm_ob, on: bool) -> None:
    """Physics on: the IK constraints of `ik_under_physics` turned off (their keyed influence, a VMD's IK on/off,
    is kept); off: the ones it turned off on again."""
    for pb in arm_ob.pose.bones:
        for name in pb.get(IK_MUTED, ()):
            c = pb.constraints.get(name)
            if c is not None:
                c.enabled = True
        if IK_MUTED in pb:
            del pb[IK_MUTED]
    if not on:
        return
    for pb, c in ik_under_physics(arm_ob):
        if c.enabled:
            c.enabled = False
            pb[IK_MUTED] = [*pb.get(IK_MUTED, ()), c.name]


def set_simulation(context, arm_ob, on: bool) -> None:
    """Physics on (dynamic bodies simulate, their bones follow, the IK that only reaches such bones off) or off
    for posing (bodies at rest, bones free, that IK on again); the cache is dropped so that Play simulates again
    from the first frame."""
    bodies, _ = bp.physics_objects(arm_ob)
    for ob in bodies:
        if not ob.rigid_body.kinematic:
            ob.rigid_body.enabled = on
    for _, c in _follow_constraints(arm_ob):
        c.enabled = on
    _mute_ik(arm_ob, on)
    context.view_layer.update()


def is_on(arm_ob) -> bool:
    return any(c.enabled for _, c in _follow_constraints(arm_ob))


def link(context, arm_ob, enabled: bool = True) -> list[str]:
    """Make the model's rigid bodies and joints simulate as MMD's (collisions, bones, world step, gravity
    when `enabled`); returns warnings."""
    bp.ensure_world(context)
    set_world_step(context.scene)
    warnings = set_gravity(context.scene, model_metres_per_unit(arm_ob)) if enabled else []
    apply_collisions(context, arm_ob)
    link_bones(context, arm_ob, enabled)
    set_simulation(context, arm_ob, enabled)
    return warnings


def build(context, arm_ob) -> list[str]:
    """Physics on for the model: its bodies and joints made from the records stored with it when it has
    none (imported with physics or cleared before), then linked; returns warnings."""
    warnings: list[str] = []
    bodies, joints = bp.physics_objects(arm_ob)
    if not bodies and not joints:
        extras = blender_mmd.stored_extras(arm_ob, []) or {}
        names = bscene.barm_names(arm_ob) or [b.name for b in arm_ob.data.bones]
        warnings += bp.build_physics(context, arm_ob, extras, model_metres_per_unit(arm_ob), names, [])
    return warnings + link(context, arm_ob, True)


def clear(context, arm_ob) -> None:
    """Physics off and unlinked: follow constraints, tracking empties and `ncc` constraints removed, dynamic
    bodies out of the simulation at rest, the bones they drove back at rest. The bodies and joints stay: they
    are the model's (export writes them)."""
    driven = {pb.name for pb, _ in _follow_constraints(arm_ob)}
    set_simulation(context, arm_ob, False)
    for pb, c in _follow_constraints(arm_ob):
        pb.constraints.remove(c)
    _remove(_helpers(arm_ob, TRACK) + _helpers(arm_ob, NCC))
    for name in driven:
        pb = arm_ob.pose.bones[name]
        pb.matrix_basis = Matrix()
    context.view_layer.update()


def rebuild(context, arm_ob) -> list[str]:
    """Clear and build again from the bodies and joints as the user left them."""
    clear(context, arm_ob)
    return build(context, arm_ob)


def bake(context) -> None:
    """Simulate the scene's frame range into the rigid body cache (Play then reads it back)."""
    scene = context.scene
    world = scene.rigidbody_world
    if world is None:
        return
    follow_scene_range(scene)
    with context.temp_override(scene=context.scene, point_cache=world.point_cache):
        bpy.ops.ptcache.bake(bake=True)
