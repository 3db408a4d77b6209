"""Core skeletons and animations as NWN2 GR2 files (docs/nwn2.md §5.6): the root, skeleton, model, track group and
animation objects of the game's type tree (`types`), laid out by `write`.

Units and axes as the import (§5.4): the file's centimetres are metres × `UNITS_PER_METRE`, Z up, no axis change.
A track's channels become 32-bit float curves of degree 1 (DaK32fC32f) with one knot per key, so Granny
interpolates linearly between the keys (orientations: the normalised lerp, which meets the slerp at the keys and
half-way between them); a channel of one key is a constant (D3Constant32f, D4Constant32f); a bone without scale
keys, or with unit scales only (within 1e-6), gets the identity scale/shear (DaIdentity). Tracks are sorted by
name (byte order), as Granny's track lookup needs. The animation's TimeStep and Oversampling are the game's
(1/240 s and 8: 30 fps).
"""
from __future__ import annotations

import numpy as np

from ...core import model as cm
from ...core.errors import ExportError
from ...core.transforms import affine_inverse, quat_normalize
from . import curves, gr2, write
from .types import build as build_types

UNITS_PER_METRE = 100.0
FPS = 30.0
OVERSAMPLING = 8.0
EXPORTER = ("SkinBridge", 2, 6, 0, 10)  # our name; Granny's version of the game's files (2.6.0.10)
ACCUMULATION_FLAGS = 2  # what every public NWN2 track group holds
IDENTITY_TOLERANCE = 1e-6


def _transform(translation, rotation_xyzw, scale_shear) -> np.ndarray:
    """A Granny transform whose flags name the parts that are not the identity (within float32 noise: a scale
    of 0.99999994 from a decomposed matrix is no scale), those parts written as the identity."""
    t = np.zeros((), gr2.TRANSFORM_DTYPE)
    t["rotation"], t["scale_shear"] = [0, 0, 0, 1], np.eye(3)
    flags = 0
    if np.any(np.asarray(translation) != 0):
        flags |= 1
        t["translation"] = translation
    if not np.allclose(rotation_xyzw, [0, 0, 0, 1], rtol=0, atol=IDENTITY_TOLERANCE):
        flags |= 2
        t["rotation"] = rotation_xyzw
    if not np.allclose(scale_shear, np.eye(3), rtol=0, atol=IDENTITY_TOLERANCE):
        flags |= 4
        t["scale_shear"] = scale_shear
    t["flags"] = flags
    return t


def _check_finite(name: str, what: str, *arrays) -> None:
    if not all(np.isfinite(np.asarray(a, np.float64)).all() for a in arrays if a is not None):
        raise ExportError(f"bone {name}: {what} is not a finite number")


def skeleton_object(skel: cm.Skeleton, types: dict) -> dict:
    """A Granny skeleton: each bone's rest transform relative to its parent and its inverse world transform
    (row vectors, file units)."""
    bones = []
    for i, b in enumerate(skel.bones):
        _check_finite(b.name, "the rest or bind transform", b.rest_translation, b.rest_rotation, b.rest_scale, b.bind)
        if not -1 <= b.parent < i:
            raise ExportError(f"bone {i} ({b.name}): parent {b.parent} does not come before it")
        w, x, y, z = quat_normalize(b.rest_rotation)
        world = np.array(b.bind, np.float64)
        world[:3, 3] *= UNITS_PER_METRE
        bones.append({"Name": b.name, "ParentIndex": b.parent,
                      "Transform": _transform(np.asarray(b.rest_translation) * UNITS_PER_METRE, [x, y, z, w],
                                              np.diag(np.asarray(b.rest_scale, np.float64))),
                      "InverseWorldTransform": affine_inverse(world).T.ravel().astype(np.float32)})
    return {"Name": skel.name, "Bones": bones}


def _curve(types: dict, fmt: str, degree: int, knots, controls) -> dict:
    fields = curves.encode(fmt, degree, knots, controls)
    fields["__type__"] = types[fmt]
    return {"CurveData": fields}


def _channel(types: dict, times, values, constant: str) -> dict:
    values = np.asarray(values, np.float32)
    if len(values) == 1:
        return _curve(types, constant, 0, [0.0], values)
    return _curve(types, "DaK32fC32f", 1, np.asarray(times, np.float32), values)


def _continuous(q: np.ndarray) -> np.ndarray:
    """Quaternions flipped in sign so that neighbours take the short way, as Granny's exporter leaves them."""
    out = q.copy()
    for k in range(1, len(out)):
        if np.dot(out[k - 1], out[k]) < 0:
            out[k] = -out[k]
    return out


def _track(types: dict, track: cm.Track, rest: cm.Bone | None) -> dict:
    _check_finite(track.bone, "a key", track.translations, track.rotations, track.scales)
    if track.translations is not None and len(track.translations):
        t_times, t = track.translation_times, np.asarray(track.translations) * UNITS_PER_METRE
    else:
        t_times, t = [0.0], [np.asarray(rest.rest_translation) * UNITS_PER_METRE if rest else np.zeros(3)]
    if track.rotations is not None and len(track.rotations):
        r_times, r = track.rotation_times, quat_normalize(np.asarray(track.rotations, np.float64))
    else:
        r_times, r = [0.0], np.array([rest.rest_rotation if rest else [1.0, 0, 0, 0]], np.float64)
    r = _continuous(np.asarray(r)[:, [1, 2, 3, 0]])
    scales = track.scales if track.scales is not None and len(track.scales) else None
    if scales is None or np.allclose(scales, 1.0, rtol=0, atol=IDENTITY_TOLERANCE):  # Blender's float32 noise
        scale_curve = _curve(types, "DaIdentity", 0, [], np.zeros((1, 9)))
    else:
        matrices = np.asarray(scales, np.float64)[:, :, None] * np.eye(3)
        scale_curve = _curve(types, "DaK32fC32f", 1 if len(scales) > 1 else 0, track.scale_times,
                             matrices.reshape(-1, 9))
    return {"Name": track.bone, "PositionCurve": _channel(types, t_times, t, "D3Constant32f"),
            "OrientationCurve": _channel(types, r_times, r, "D4Constant32f"), "ScaleShearCurve": scale_curve}


def file_header(f: gr2.Gr2File) -> dict:
    """What a file says of where it came from (its root's ArtToolInfo, ExporterInfo and FromFileName) as plain
    JSON values: kept by the import and written again by `skeleton_file` and `animation_file`, so a GR2 that came
    from a file keeps them and only one made from scratch names SkinBridge."""
    def plain(value):
        if isinstance(value, np.ndarray):
            return [float(x) for x in value.ravel()]
        if isinstance(value, (np.integer, int)):
            return int(value)
        if isinstance(value, (np.floating, float)):
            return float(value)
        return value if isinstance(value, str) or value is None else str(value)

    out = {}
    for key in ("ArtToolInfo", "ExporterInfo"):
        if isinstance(f.root.get(key), dict):
            out[key] = {k: plain(v) for k, v in f.root[key].items() if not k.startswith("__")}
    if isinstance(f.root.get("FromFileName"), str):
        out["FromFileName"] = f.root["FromFileName"]
    return out


def _root(types: dict, name: str, header: dict | None = None) -> dict:
    """The file's root: ArtToolInfo, ExporterInfo and FromFileName from `header` (a file's, `file_header`) where
    it has them, else ours; UnitsPerMeter and the axes are always ours (the units and axes written)."""
    header = header or {}
    art = {"FromArtToolName": EXPORTER[0], "ArtToolMajorRevision": 0, "ArtToolMinorRevision": 0,
           "UnitsPerMeter": UNITS_PER_METRE, "Origin": [0, 0, 0], "RightVector": [1, 0, 0], "UpVector": [0, 0, 1],
           "BackVector": [0, -1, 0]}
    exporter = dict(zip(["ExporterName", "ExporterMajorRevision", "ExporterMinorRevision", "ExporterCustomization",
                         "ExporterBuildNumber"], EXPORTER))
    kept_art = header.get("ArtToolInfo") or {}
    for key in ("FromArtToolName", "ArtToolMajorRevision", "ArtToolMinorRevision"):
        if key in kept_art:
            art[key] = kept_art[key]
    exporter.update({k: v for k, v in (header.get("ExporterInfo") or {}).items() if k in exporter})
    return {"ArtToolInfo": art, "ExporterInfo": exporter, "FromFileName": header.get("FromFileName", name)}


def parents_first(skel: cm.Skeleton) -> cm.Skeleton:
    """The skeleton with every parent before its children, as Granny's bone order needs (ValueError on a cycle)."""
    order = skel.topological_order()
    if order == list(range(len(skel.bones))):
        return skel
    new_index = {old: new for new, old in enumerate(order)}
    bones = [cm.Bone(b.name, new_index.get(b.parent, -1), b.bind, b.rest_translation, b.rest_rotation, b.rest_scale,
                     b.deform, b.extras) for b in (skel.bones[i] for i in order)]
    return cm.Skeleton(skel.name, bones)


def skeleton_file(skel: cm.Skeleton, header: dict | None = None) -> bytes:
    """A skeleton file as the game's: the skeleton and a model of it (`header`: the source file's, see
    `file_header`)."""
    types = build_types()
    root = _root(types, skel.name, header)
    skeleton = skeleton_object(skel, types)
    root["Skeletons"] = [skeleton]
    root["Models"] = [{"Name": skel.name, "Skeleton": skeleton, "InitialPlacement": _transform(
        np.zeros(3), [0, 0, 0, 1], np.eye(3))}]
    return write.write(types["FileInfo"], root)


def animation_file(anim: cm.Animation, group: str, skeleton: cm.Skeleton | None = None,
                   header: dict | None = None) -> bytes:
    """An animation file as the game's: one animation of one track group named `group` (the skeleton's name),
    tracks sorted by name; bones of `skeleton` without keys of a channel hold their rest value."""
    types = build_types()
    rest = {b.name: b for b in skeleton.bones} if skeleton is not None else {}
    tracks = sorted(anim.tracks, key=lambda t: t.bone.encode("utf-8", "surrogateescape"))
    names = [t.bone for t in tracks]
    if len(set(names)) != len(names):
        raise ExportError(f"{anim.name}: two tracks move bone {next(n for n in names if names.count(n) > 1)}")
    track_group = {"Name": group, "TransformTracks": [_track(types, t, rest.get(t.bone)) for t in tracks],
                   "InitialPlacement": _transform(np.zeros(3), [0, 0, 0, 1], np.eye(3)),
                   "AccumulationFlags": ACCUMULATION_FLAGS, "LoopTranslation": [0, 0, 0]}
    if not np.isfinite(anim.length) or anim.length < 0:
        raise ExportError(f"{anim.name}: length {anim.length} is not a time span")
    animation = {"Name": anim.name, "Duration": float(anim.length), "TimeStep": 1.0 / (FPS * OVERSAMPLING),
                 "Oversampling": OVERSAMPLING, "TrackGroups": [track_group]}
    root = _root(types, anim.name, header)
    root["TrackGroups"], root["Animations"] = [track_group], [animation]
    return write.write(types["FileInfo"], root)


# -- a file written again with only the edit (docs/nwn2.md §5.6) ----------------------------------------------

def _variants(types: write.FileTypes):
    """The type of a variant's object: ours where we made it (`__type__`), else where the file had it."""
    def of(value):
        if isinstance(value, dict) and "__type__" in value:
            return value["__type__"]
        return types.of(value)
    return of


def kept_skeleton_file(data: bytes, skel: cm.Skeleton, renamed: set[int], moved: set[int]) -> bytes | None:
    """The source file `data` written again with its own typed tree (every record and value it had), only the
    bones edited taken from `skel` (the file's bone order): a renamed bone's Name; a moved bone's Transform and
    InverseWorldTransform, and its children's Transform (relative to it). None when the file's first skeleton
    has other bones than `skel` (count or parents): the caller writes a new file."""
    f = gr2.read(data)
    skeletons = [s for s in f.root.get("Skeletons") or [] if isinstance(s, dict)]
    named = [s for s in skeletons if str(s.get("Name", "")).lower() == skel.name.lower()]
    if not named and len(skeletons) != 1:
        return None
    bones = (named or skeletons)[0].get("Bones") or []
    if len(bones) != len(skel.bones) or any(int(b.get("ParentIndex", -2)) != s.parent
                                            for b, s in zip(bones, skel.bones)):
        return None
    if not renamed and not moved:
        return data  # untouched: the file as it was, bytes and all
    ours = skeleton_object(skel, build_types())["Bones"]
    for i in renamed:
        bones[i]["Name"] = ours[i]["Name"]
    for i, b in enumerate(skel.bones):
        if i in moved:
            bones[i]["InverseWorldTransform"] = ours[i]["InverseWorldTransform"]
        if i in moved or b.parent in moved:
            bones[i]["Transform"] = ours[i]["Transform"]
    types = write.FileTypes(f)
    return write.write(types.root, f.root, _variants(types), f.tag)


def kept_animation_file(data: bytes, group: str, anim: cm.Animation, edited: set[str], names: dict[str, str],
                        duration: float | None, skeleton: cm.Skeleton | None = None) -> bytes | None:
    """The source file `data` written again with its own typed tree, only the tracks of bones `edited` (by their
    names now) of its track group `group` made from `anim` (as `animation_file` makes them), a renamed bone's
    track renamed (`names`: file name → name now) and the animation's Duration set to `duration` when given.
    None when the file holds no such group."""
    f = gr2.read(data)
    found = None
    for a in f.root.get("Animations") or []:
        for g in (a or {}).get("TrackGroups") or []:
            if isinstance(g, dict) and g.get("Name") == group:
                found = (a, g)
                break
        if found:
            break
    if found is None:
        return None
    animation, track_group = found
    if not edited and duration is None and not any(t.get("Name") in names for t in
                                                   track_group.get("TransformTracks") or []):
        return data  # untouched: the file as it was, bytes and all
    types = build_types()
    rest = {b.name: b for b in skeleton.bones} if skeleton is not None else {}
    core = {t.bone: t for t in anim.tracks}
    tracks = list(track_group.get("TransformTracks") or [])
    for t in tracks:
        t["Name"] = names.get(t.get("Name"), t.get("Name"))
    by_name = {t.get("Name"): t for t in tracks}
    for bone in sorted(edited):
        if bone not in core:
            continue
        new = _track(types, core[bone], rest.get(bone))
        if bone in by_name:
            for key in ("PositionCurve", "OrientationCurve", "ScaleShearCurve"):
                by_name[bone][key] = new[key]
        else:
            tracks.append(new)
    tracks.sort(key=lambda t: str(t.get("Name", "")).encode("utf-8", "surrogateescape"))
    track_group["TransformTracks"] = tracks
    if duration is not None:
        if not np.isfinite(duration) or duration < 0:
            length = duration
            raise ExportError(f"{anim.name}: length {length} is not a time span")
        animation["Duration"] = float(duration)
    file_types = write.FileTypes(f)
    return write.write(file_types.root, f.root, _variants(file_types), f.tag)
