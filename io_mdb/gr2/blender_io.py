"""GR2 animations in Blender (docs/nwn2.md §5.5, §5.6): `--motion FILE.gr2` (the registry's motion loader), and
an armature with its actions written as GR2 files (`convert --to gr2` and File › Export, through the registry's
`export_target`).

Each animation of the file becomes an action on the armature (an MDB import builds it from the skeleton its SKIN
packets name): of its track groups, the one whose tracks name most of the armature's bones; the file is parsed,
decoded and sampled before the first action is created, and the actions made are removed again if building
fails.
"""
from __future__ import annotations

import base64
import json
import os
import zlib

import numpy as np

from ...blender import action as bact
from ...blender import compat
from ...blender import armature as barm
from ...blender import scene as bscene
from ...core.errors import ExportError, FormatError
from ...core.fileio import makedirs, output_path, write_atomic
from ...core.naming import NameAllocator
from ..archive import archive
from . import animation, bind, convert, export, gr2, skeleton

HEADER_PROP = "nwn2_gr2_header"  # on an armature or action made from a GR2 file: its ArtToolInfo, ExporterInfo and
# FromFileName (JSON), written again by the export


# what a GR2 import keeps so that the export writes the file again with only the edit (docs/nwn2.md §5.6): the
# file (base64) on the armature and on each action; on the armature its bones' names and rest matrices as built;
# on an action its track group, its frame range and a digest of each bone's F-curves as built
FILE_PROP, REST_PROP = "nwn2_gr2_file", "nwn2_gr2_rest"
GROUP_PROP, RANGE_PROP, CURVES_PROP = "nwn2_gr2_group", "nwn2_gr2_range", "nwn2_gr2_curves"
REST_TOLERANCE = 1e-5


def _bone_digests(act) -> dict[str, int]:
    """Bone name → a digest of its F-curves (paths, keys and handles): which bones' keys the user changed."""
    out: dict[str, int] = {}
    for cb in compat.channelbags(act):
        for fc in cb.fcurves:
            m = bact.POSE_BONE_PATH.match(fc.data_path)
            if m is None:
                continue
            bone = bact.unescape_bone_name(m.group(1))
            n = len(fc.keyframe_points)
            parts = [f"{m.group(2)}[{fc.array_index}]".encode()]
            for prop in ("co", "handle_left", "handle_right"):
                values = np.empty(2 * n, np.float32)
                fc.keyframe_points.foreach_get(prop, values)
                parts.append(values.tobytes())
            out[bone] = zlib.crc32(b"".join(parts), out.get(bone, 0))
    return out


def _kept_bytes(idblock) -> bytes | None:
    raw = idblock.get(FILE_PROP)
    try:
        return base64.b64decode(raw) if raw else None
    except (ValueError, TypeError):
        return None


def _built_rest(arm_ob) -> list | None:
    try:
        built = json.loads(arm_ob.get(REST_PROP, ""))
    except (ValueError, TypeError):
        return None
    return built if isinstance(built, list) and len(built) == len(arm_ob.data.bones) else None


def _renames(arm_ob) -> dict[str, str]:
    """Bone name in the file → its name now, of the bones the user renamed."""
    built = _built_rest(arm_ob) or []
    return {old: b.name for (old, _), b in zip(built, arm_ob.data.bones) if old != b.name}


def _rest_moved(arm_ob) -> set[str]:
    """Names (now) of the bones whose rest the user moved, and of their children (their rest relative to it)."""
    built = _built_rest(arm_ob) or []
    moved = {b.name for (_, m), b in zip(built, arm_ob.data.bones)
             if not np.allclose(np.asarray(m, np.float64).reshape(4, 4), np.array(b.matrix_local, np.float64),
                                rtol=0, atol=REST_TOLERANCE)}
    return moved | {b.name for b in arm_ob.data.bones if b.parent is not None and b.parent.name in moved}


def _kept_skeleton(arm_ob, skel) -> bytes | None:
    """The armature's source file with only its edited bones written again, or None (a new file)."""
    data, built = _kept_bytes(arm_ob), _built_rest(arm_ob)
    if data is None or built is None or [b.name for b in skel.bones] != [b.name for b in arm_ob.data.bones]:
        return None
    renamed, moved = set(), set()
    for i, ((old, m), b) in enumerate(zip(built, arm_ob.data.bones)):
        if old != b.name:
            renamed.add(i)
        if not np.allclose(np.asarray(m, np.float64).reshape(4, 4), np.array(b.matrix_local, np.float64), rtol=0,
                           atol=REST_TOLERANCE):
            moved.add(i)
    return export.kept_skeleton_file(data, skel, renamed, moved)


def _kept_animation(arm_ob, act, anim, skel) -> bytes | None:
    """The action's source file with only the tracks of bones whose keys changed written again, or None."""
    data = _kept_bytes(act)
    try:
        digests = json.loads(act.get(CURVES_PROP, ""))
    except (ValueError, TypeError):
        return None
    if data is None or not isinstance(digests, dict) or not act.get(GROUP_PROP):
        return None
    names = _renames(arm_ob)
    back = {new: old for old, new in names.items()}
    now = _bone_digests(act)
    edited = {bone for bone, d in now.items() if digests.get(back.get(bone, bone)) != d} | _rest_moved(arm_ob)
    same_range = list(act.get(RANGE_PROP, [])) == [float(x) for x in act.frame_range]
    return export.kept_animation_file(data, str(act[GROUP_PROP]), anim, edited, names,
                                      None if same_range else anim.length, skel)


def keep_source(arm_ob, data: bytes, skeleton_name: str, header: dict | None = None) -> None:
    """What File › Export needs to write the armature's GR2 file again with only the edit: the file, its header,
    the skeleton's name and the bones as built (a GR2 import, and an MDB import that built the armature from the
    GR2 its SKIN packets name)."""
    arm_ob[HEADER_PROP] = json.dumps(header if header is not None else export.file_header(gr2.read(data)))
    arm_ob[bind.SKELETON_PROP] = skeleton_name  # the armature may be named otherwise
    arm_ob[FILE_PROP] = base64.b64encode(data).decode("ascii")
    arm_ob[REST_PROP] = json.dumps([[b.name, [x for row in b.matrix_local for x in row]] for b in arm_ob.data.bones])


def _header(idblock) -> dict | None:
    try:
        return json.loads(idblock.get(HEADER_PROP, "")) or None
    except (ValueError, TypeError):
        return None


def _stem(path: str) -> str:
    inside = archive.member_of(path)  # "pack.hak:P_HHF_skel.gr2": named after its member
    return os.path.splitext(os.path.basename(inside[1] if inside else path))[0]


def import_gr2_animations(context, path: str, arm_ob, assign: bool = True, data: bytes | None = None,
                          f: gr2.Gr2File | None = None) -> tuple[list, list[str]]:
    """(actions, warnings) of the file's animations on `arm_ob` (the file's bytes `data` and its reading `f`
    when the caller has them: one read, one decompression). ExportError when no track group names a bone of the
    armature."""
    if arm_ob is None or arm_ob.type != "ARMATURE":
        raise ExportError("select an armature to import animations onto")
    data = archive.read_input(path) if data is None else data
    f = gr2.read(data) if f is None else f
    stem = _stem(path)
    bones = set(arm_ob.data.bones.keys())
    animations, warnings = convert.for_bones(f, stem, bones)
    if not animations:
        groups = [g.name for a in animation.animations(f) for g in a.groups]
        raise ExportError(f"{os.path.basename(path)}: no track group names a bone of {arm_ob.name} (groups: "
                          f"{', '.join(groups) or 'none'})")
    warnings = [f"{os.path.basename(path)}: {w}" for w in list(f.warnings) + warnings]
    fps = bact.fps_of(context.scene)
    created: list = []
    with bact.rollback_on_failure(arm_ob, created):
        for anim in animations:
            act, more = bact.build_action(arm_ob, anim, fps)
            created.append(act)
            warnings += more
        header = json.dumps(export.file_header(f))
        kept = base64.b64encode(data).decode("ascii")
        for act, anim in zip(created, animations):
            act[HEADER_PROP] = header
            act[FILE_PROP] = kept
            act[GROUP_PROP] = str(anim.extras.get("gr2", {}).get("track_group", ""))
            act[RANGE_PROP] = [float(x) for x in act.frame_range]
            act[CURVES_PROP] = json.dumps(_bone_digests(act))
        if assign and created:
            bact.assign(arm_ob, created[-1])
    return created, warnings


def load_motion(context, path: str, arm_ob, options) -> list[str]:
    """`convert --motion FILE.gr2`: the file's animations as actions on the model's armature."""
    return import_gr2_animations(context, path, arm_ob)[1]


def export_gr2(context, outdir: str, name: str, arm_ob=None, skeleton_name: str | None = None, keep: bool = True
               ) -> tuple[list[str], list[str]]:
    """The armature's skeleton as OUTDIR/NAME.gr2 and each of its actions as OUTDIR/<action>.gr2 (one track
    group named after the skeleton). With `keep` (File › Export), an armature or action imported from a GR2 file
    is that file written again with only the edit (untouched: its bytes). Only reads the scene."""
    makedirs(outdir)  # an output folder that cannot be is named before the model is looked at
    names = NameAllocator()
    paths = [output_path(outdir, names.take(name, ".gr2") + ".gr2")]
    meshes = []
    if arm_ob is None:
        meshes, arm_ob = bscene.exportable_objects(context)
    if arm_ob is None or arm_ob.type != "ARMATURE":
        raise ExportError("no armature to export as a GR2 skeleton")
    skel = export.parents_first(barm.read_skeleton(arm_ob))
    named = [ob.get(bind.SKELETON_PROP) for ob in meshes if ob.get(bind.SKELETON_PROP)]
    skel.name = skeleton_name or (named[0] if named else str(arm_ob.get(bind.SKELETON_PROP, "")) or
                                  _built_name(arm_ob))
    write_atomic(paths[0], (keep and _kept_skeleton(arm_ob, skel)) or export.skeleton_file(skel, _header(arm_ob)))
    warnings: list[str] = []
    loose = sorted(ob.name for ob in meshes if not ob.get(bind.SKELETON_PROP))
    if keep and loose:  # File › Export: a mesh made in Blender is not in a GR2 (the game's meshes are MDB files)
        warnings.append(f"a GR2 holds the skeleton and its animations: {len(loose)} mesh object(s) not written "
                        f"({', '.join(loose[:5])}{', ...' if len(loose) > 5 else ''}); export them as MDB")
    for act in bact.armature_actions(arm_ob):
        anim, more = bact.read_action(context, arm_ob, act)
        warnings += more
        paths.append(output_path(outdir, names.take(act.name, ".gr2") + ".gr2"))
        write_atomic(paths[-1], (keep and _kept_animation(arm_ob, act, anim, skel))
                     or export.animation_file(anim, skel.name, skel, _header(act)))
    return paths, warnings


def _built_name(arm_ob) -> str:
    """The skeleton name of an armature without the property that holds it (lost through another format or a
    script): an armature our import built is `<skeleton>_rig` holding data `<skeleton>`, so the skeleton's name
    comes back, not the object's; any other armature gives its object name."""
    data_name = arm_ob.data.name if arm_ob.data is not None else ""
    return data_name if data_name and arm_ob.name == f"{data_name}_rig" else arm_ob.name


def export_target(context, outdir: str, name: str, options) -> tuple[list[str], list[str]]:
    """`convert --to gr2`: the model's armature as OUTDIR/NAME.gr2 (its skeleton named as the SKIN meshes name it,
    else after the armature) and each action of it as OUTDIR/<action>.gr2, written for that skeleton (a motion
    loaded from another skeleton's GR2 gets one track group named after it: not its file again)."""
    return export_gr2(context, outdir, name, keep=False)


def blender_import(context, path: str, options) -> list[str]:
    """The registry's `blender_import` (File › Import, `render`): the file's skeleton as an armature, with the
    file's own animations on it; an animation file (no skeleton) is refused, since it has nothing to show
    without the skeleton it plays on (load it onto one: `convert --motion`)."""
    return _import_skeleton(context, path, archive.read_input(path))


def _import_skeleton(context, path: str, data: bytes, f: gr2.Gr2File | None = None) -> list[str]:
    """`blender_import` of the bytes `data` (and their reading `f`) of the file `path`: read once, decompressed
    once (docs/nwn2.md §5.1)."""
    f = gr2.read(data) if f is None else f
    scene, warnings = convert.to_scene(f, _stem(path) or "gr2")
    if scene.skeleton is None or not len(scene.skeleton):
        raise FormatError(f"{os.path.basename(path)} holds no skeleton (an animation file: load it onto the "
                          "armature of its skeleton with convert --motion)", None, "Skeletons")
    before = bscene.snapshot_ids()
    try:
        result = bscene.build_scene(context, scene, scene.skeleton.name)
        keep_source(result.armature, data, scene.skeleton.name, export.file_header(f))
        if animation.animations(f):
            _, more = import_gr2_animations(context, path, result.armature, data=data, f=f)
            warnings += more
    except BaseException:  # nothing of a failed import stays in the scene
        bscene.remove_new(before)
        raise
    return warnings + result.warnings


def import_file(context, path: str, arm_ob) -> list[str]:
    """File › Import and drop of a .gr2: a skeleton file as an armature with its own animations; an animation
    file (no skeleton) as actions on `arm_ob`, the armature the user chose (ExportError when there is none)."""
    data = archive.read_input(path)
    f = gr2.read(data)
    if skeleton.skeletons(f):
        return _import_skeleton(context, path, data, f)
    return import_gr2_animations(context, path, arm_ob, data=data, f=f)[1]
