"""An edited DMX model written as the imported file with the edit in it (docs/source.md §6.6, "What an edited
export keeps").

The file as read (`dmx.read`: its string table, keyvalues2 tokens and layout, gzip wrap) is the base: the core Scene
the export read from Blender is compared with the one the import made of the file (`convert`), and only what
differs is changed in the element graph, in place:

* a bone renamed: its DmeJoint, its DmeTransform and its base-state transform renamed; a rest moved: those two
  transforms' position and orientation (float32, as read elsewhere);
* a mesh whose faces and weights are as read: the position, normal and UV values of the vertices that moved (the
  other values keep their bits); a shape key changed: the rows of its delta that changed; a new shape key: a
  DmeVertexDeltaData appended to the mesh's delta states with its flex controller; a removed one dropped;
* a mesh whose faces or weights changed (deleted faces): its vertex data's fields and its face sets' faces written
  again, in the same elements;
* a mesh added: a DmeDag appended to the model's children and joint list, as Blender Source Tools adds one; a mesh
  removed: its DmeDag dropped with the references to it.

Every other element keeps its id, attribute order and value (its keyvalues2 tokens as read). The result is read
back and compared with the export's scene: a file that would not read as the export is `Refused`, naming why
(the caller then writes the file anew).
"""
from __future__ import annotations

import re

import numpy as np

from ...core import model as cm
from ...core.transforms import affine_inverse, matrix_to_trs
from ..smd import convert as smd_convert
from . import convert, dmx, write
from .records import TIME_TICKS, AttrType, Element, element_refs, reachable

POSITION_TOLERANCE = 1e-5  # × the model's size: a vertex or bone position Blender gave back as read
NORMAL_TOLERANCE = 2e-3    # a normal Blender's custom normals gave back as read
UV_TOLERANCE = 1e-5
WEIGHT_TOLERANCE = 1e-4
ROTATION_TOLERANCE = 1e-5  # a rest's rotation matrix element
_SUFFIX = re.compile(r"\.\d{3}$")  # Blender's duplicate-name suffix


class Refused(Exception):
    """The edit cannot be written into the imported file: the message says why."""


def patched(source: bytes, scene: cm.Scene) -> bytes:
    """The bytes of the file `source` with the differences between what it holds and `scene` written into it."""
    d = dmx.read(source)
    before = {id(e) for e in reachable(d)}
    _Patch(d, scene).run()
    out = _finish(d, before)
    _check(out, scene)
    return out


def patched_motion(source: bytes, skel: cm.Skeleton, anim: cm.Animation, warnings: list[str]) -> bytes:
    """The bytes of the motion file `source` (one clip) with the differences between what it holds and
    `skel` and `anim` written into it: bones renamed, rests moved, key values changed at the file's key times,
    deleted keys dropped; a scale the file cannot hold is warned about."""
    d = dmx.read(source)
    before = {id(e) for e in reachable(d)}
    p = _Patch(d, cm.Scene(name="motion", skeleton=skel))
    p.skeleton(partial=True)
    notes: list[str] = []
    p.motion(anim, notes)
    out = _finish(d, before)
    back, _ = convert.to_scene(dmx.read(out), "check")
    kept = {b.name for i, b in zip(p.bone_map, skel.bones) if i >= 0}
    if back.skeleton is None or not kept <= {b.name for b in back.skeleton.bones}:
        raise Refused("the file written does not read back with the armature's bone names")
    warnings += notes
    return out


def _finish(d: dmx.DmxFile, before: set[int]) -> bytes:
    """The patched file's bytes."""
    # new elements after the file's own, each at the top level of a keyvalues2 file (inline they would stand
    # between the file's elements, which a reader numbers in the order they stand)
    new = [e for e in reachable(d) if id(e) not in before]
    d.elements += new
    if d.top_level is not None:
        d.top_level += new
    return dmx.write(d)


def _base(name: str) -> str:
    return _SUFFIX.sub("", name)


def _pair(old: list[str], new: list[str], renames: bool = False) -> list[tuple[int | None, int | None]]:
    """(old index, new index) pairs: the same name first, then the same name but for Blender's .001 suffix, then
    (`renames`) the others in order; unpaired ones with None."""
    pairs: dict[int, int] = {}
    free = list(range(len(new)))
    rules = [lambda a, b: a == b, lambda a, b: _base(a) == _base(b)] + ([lambda a, b: True] if renames else [])
    for rule in rules:
        for i, name in enumerate(old):
            if i in pairs:
                continue
            j = next((j for j in free if rule(name, new[j])), None)
            if j is not None:
                pairs[i] = j
                free.remove(j)
    out: list[tuple[int | None, int | None]] = [(i, pairs.get(i)) for i in range(len(old))]
    return out + [(None, j) for j in free]


def _set(e: Element, name: str, value) -> None:
    """Attribute `name` of `e` holds `value` (in the attribute's own dtype)."""
    a = e.get(name)
    a.value = np.asarray(value, dmx.FIXED[a.type][0]).reshape(np.shape(a.value)) if a.type in dmx.FIXED else value


def _dense(mesh: cm.Mesh, bones: int) -> np.ndarray:
    """Each vertex's weight per bone."""
    out = np.zeros((len(mesh.positions), max(bones, 1)), np.float64)
    if mesh.joints is not None and mesh.weights is not None and mesh.weights.size:
        rows = np.repeat(np.arange(len(mesh.positions)), mesh.weights.shape[1])
        np.add.at(out, (rows, np.asarray(mesh.joints).reshape(-1)), np.asarray(mesh.weights, np.float64).reshape(-1))
    return out


def _moved(a: np.ndarray, b: np.ndarray, tol: float) -> np.ndarray:
    return np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64)).reshape(len(a), -1).max(axis=1) > tol


def _local(mesh: cm.Mesh, inv: np.ndarray) -> cm.Mesh:
    """A copy of `mesh` in the space of its node (`inv`: model space to node space)."""
    rot, move = inv[:3, :3], inv[:3, 3]
    out = cm.Mesh(mesh.name, (np.asarray(mesh.positions, np.float64) @ rot.T + move).astype(np.float32),
                  mesh.triangles)
    out.__dict__.update({k: v for k, v in mesh.__dict__.items() if k not in ("positions", "shape_keys", "normals")})
    out.normals = None if mesh.normals is None else (np.asarray(mesh.normals, np.float64) @ rot.T).astype(np.float32)
    out.shape_keys = [cm.ShapeKey(k.name, (np.asarray(k.positions, np.float64) @ rot.T + move).astype(np.float32))
                      for k in mesh.shape_keys]
    return out


class _Patch:
    def __init__(self, d: dmx.DmxFile, scene: cm.Scene):
        self.d, self.scene = d, scene
        self.root = d.root
        self.model = convert.element_of(self.root, "model") or convert.element_of(self.root, "skeleton")
        if self.model is None:
            raise Refused("the file holds no model")
        warnings: list[str] = []
        self.up = convert.up_matrix(self.model)
        self.skel, self.bones, self.placed = convert.skeleton_of(self.model, self.up, warnings)
        self.kw = convert.KEYWORDS_22 if d.format_version >= 22 else convert.KEYWORDS_OLD
        self.slots = convert.joint_bones(self.model, self.bones, d.format_version)
        self.orig = cm.Scene(name="source")
        self.orig.meshes = [convert.mesh_of(m, p if self.skel is not None else -1, self.slots, place, self.kw,
                                            self.orig, warnings) for m, p, place in self.placed]
        sizes = [np.abs(m.positions).max() for m in self.orig.meshes if len(m.positions)]
        self.size = max(sizes + [1.0])
        self.bone_map: list[int] = []  # the file's bone of each exported bone

    def run(self) -> None:
        self.skeleton()
        old = [m.name for m in self.orig.meshes]
        new = [m.name for m in self.scene.meshes]
        for i, j in _pair(old, new):
            if i is None:
                self.add_mesh(self.scene.meshes[j])
            elif j is None:
                self.remove_mesh(self.placed[i][0])
            else:
                self.mesh(self.scene.meshes[j], self.orig.meshes[i], *self.placed[i])

    # -- skeleton -------------------------------------------------------------------------------------------

    def _locals(self, skel: cm.Skeleton) -> np.ndarray:
        binds = np.array([b.bind for b in skel.bones], np.float64).reshape(-1, 4, 4)
        out = np.empty_like(binds)
        for i, b in enumerate(skel.bones):
            out[i] = (affine_inverse(self.up) if b.parent < 0 else affine_inverse(binds[b.parent])) @ binds[i]
        return out

    def skeleton(self, partial: bool = False) -> None:
        """Bones renamed and rests moved. `partial` (a motion): the file's bones the armature lacks stay as
        they are, and bones pair by name unless both have as many."""
        new, old = self.scene.skeleton, self.skel
        if new is None or old is None or not new.bones:
            if (new is not None and new.bones) or (old is not None and old.bones and self.scene.skeleton is None):
                raise Refused("the armature was added or removed")
            return
        pairs = _pair([b.name for b in old.bones], [b.name for b in new.bones],
                      renames=not partial or len(old.bones) == len(new.bones))
        if not partial and any(i is None or j is None for i, j in pairs):
            raise Refused("bones were added or removed")
        of_new = {j: i for i, j in pairs if i is not None and j is not None}
        new_local, old_local = self._locals(new), self._locals(old)
        if partial:  # a bone renamed: the one left over whose rest is the file's
            free = [i for i in range(len(old.bones)) if i not in of_new.values()]
            for j in range(len(new.bones)):
                same = [i for i in free if j not in of_new and
                        np.abs(new_local[j] - old_local[i]).max() <= POSITION_TOLERANCE * self.size]
                if len(same) == 1:
                    of_new[j] = same[0]
                    free.remove(same[0])
        self.bone_map = [of_new.get(j, -1) for j in range(len(new.bones))]
        for j, b in enumerate(new.bones):
            i = self.bone_map[j]
            if i >= 0 and (self.bone_map[b.parent] if b.parent >= 0 else -1) != old.bones[i].parent:
                raise Refused(f"bone {b.name!r} has another parent")
        base_list = convert.elements_of(self.model, "baseStates")
        base = {t.name or "": t for t in convert.elements_of(base_list[0], "transforms")} if base_list else {}
        for j, b in enumerate(new.bones):
            i = self.bone_map[j]
            if i < 0:
                continue
            e = self.bones[i]
            transforms = [t for t in (base.get(e.name or ""), convert.element_of(e, "transform")) if t is not None]
            if b.name != old.bones[i].name:
                for x in [e] + transforms:
                    if x.name == old.bones[i].name:
                        x.name = b.name
            moved = np.abs(new_local[j][:3, 3] - old_local[i][:3, 3]).max() > POSITION_TOLERANCE * self.size
            turned = np.abs(new_local[j][:3, :3] - old_local[i][:3, :3]).max() > ROTATION_TOLERANCE
            if moved or turned:
                self._pose(transforms, new_local[j], moved, turned, POSITION_TOLERANCE * self.size)

    @staticmethod
    def _pose(transforms: list[Element], local: np.ndarray, moved: bool, turned: bool, tol: float) -> None:
        """The transforms' position (`moved`: each coordinate further than `tol` from the file's) and orientation
        (`turned`) set to `local`'s."""
        t, q, _ = matrix_to_trs(local)
        xyzw = q[[1, 2, 3, 0]]
        for e in transforms:
            if moved and e.get("position") is not None:
                _set(e, "position", _merge(e.value("position"), t, tol))
            if turned and e.get("orientation") is not None:
                old = np.asarray(e.value("orientation"), np.float64).reshape(-1)
                _set(e, "orientation", -xyzw if len(old) == 4 and np.dot(old, xyzw) < 0 else xyzw)

    # -- motion -------------------------------------------------------------------------------------------

    def motion(self, anim: cm.Animation, warnings: list[str]) -> None:
        """The clip's channel values at the file's key times where `anim` (on the exported skeleton) differs
        from what the import made of them, keys `anim` no longer has dropped; channels named after a renamed
        bone renamed with it."""
        clips = [c for c in convert.elements_of(convert.element_of(self.root, "animationList"), "animations")
                 if c.type == "DmeChannelsClip"]
        if len(clips) != 1 or self.skel is None or not any(i >= 0 for i in self.bone_map):
            raise Refused(f"the file holds {len(clips)} clips" if len(clips) != 1 else "the file holds no bones")
        clip = clips[0]
        old = convert.animation_of(clip, self.skel, self.bones, self.up, [])
        rate = convert.frame_rate(clip)
        end = float(old.length)
        if float(anim.length) < end - 1.5 / TIME_TICKS:
            raise Refused(f"animation {anim.name!r} is shorter than the file's")
        self._key_times(anim, old, end)
        frame = convert.element_of(clip, "timeFrame")
        if float(anim.length) > end + 1.5 / TIME_TICKS and frame is not None and frame.get("duration") is not None:
            _set(frame, "duration", int(round(float(anim.length) * TIME_TICKS)))  # keys added after the end
        by_transform = {id(convert.element_of(e, "transform")): i for i, e in enumerate(self.bones)}
        renamed = {self.skel.bones[i].name: b.name for i, b in zip(self.bone_map, self.scene.skeleton.bones)
                   if i >= 0 and self.skel.bones[i].name != b.name}
        tracks = {tr.bone: tr for tr in anim.tracks}
        scaled: set[str] = set()
        cache: dict[bytes, tuple[np.ndarray, np.ndarray]] = {}
        up_inv = affine_inverse(self.up)
        for channel in convert.elements_of(clip, "channels"):
            target = convert.element_of(channel, "toElement")
            what = channel.value("toAttribute")
            i = by_transform.get(id(target))
            for old_name, new_name in renamed.items():
                if channel.name and channel.name.startswith(old_name) and i is not None and \
                        self.skel.bones[i].name == old_name:
                    channel.name = new_name + channel.name[len(old_name):]
            layers = convert.elements_of(convert.element_of(channel, "log"), "layers")
            if i is None or what not in ("position", "orientation") or not layers or layers[0].get("times") is None:
                continue
            layer = layers[0]
            ticks = np.asarray(layer.value("times"))
            key = ticks.tobytes()
            if key not in cache:
                seconds = convert.seconds_of(ticks, rate)
                cache[key] = (smd_convert.animation_locals(self.scene.skeleton, anim, seconds),
                              smd_convert.animation_locals(self.skel, old, seconds))
            new_all, old_all = cache[key]
            if i not in self.bone_map:
                continue  # a bone the armature lacks: its channel as the file has it
            j = self.bone_map.index(i)
            new_m, old_m = new_all[:, j], old_all[:, i]
            if self.skel.bones[i].parent < 0:
                new_m, old_m = up_inv @ new_m, up_inv @ old_m
            if (np.abs(matrix_to_trs(new_m)[2] - 1) > write.SCALE_TOLERANCE).any():
                scaled.add(self.scene.skeleton.bones[j].name)
            self._channel_values(layer, what, new_m, old_m)
            tr = tracks.get(self.scene.skeleton.bones[j].name)
            times = (tr.translation_times if what == "position" else tr.rotation_times) if tr is not None else None
            if times is not None and len(times):
                self._drop_keys(layer, convert.seconds_of(ticks, rate), np.asarray(times, np.float64))
                self._extend(layer, what, np.asarray(times, np.float64), end, anim, j, self.skel.bones[i].parent < 0)
        if scaled:
            warnings.append(f"animation {anim.name!r}: {len(scaled)} bone(s) scaled ({', '.join(sorted(scaled)[:5])}):"
                            " a DMX transform holds no scale, written without it")

    def _extend(self, layer: Element, what: str, times: np.ndarray, end: float, anim: cm.Animation, j: int,
                root: bool) -> None:
        """The keys of the exported track after the clip's `end` (keys added after it) appended to the layer."""
        ticks = np.asarray(layer.value("times"))
        extra = times[times > end + 1.5 / TIME_TICKS]
        if not len(extra) or layer.get("values") is None:
            return
        m = smd_convert.animation_locals(self.scene.skeleton, anim, extra)[:, j]
        if root:
            m = affine_inverse(self.up) @ m
        t, q, _ = matrix_to_trs(m)
        values = np.asarray(layer.value("values"))
        if what == "position":
            more = t
        else:
            more = q[:, [1, 2, 3, 0]]
            prev = values[-1].astype(np.float64) if len(values) else more[0]
            for k in range(len(more)):  # each key on the side of the one before it
                more[k] = -more[k] if np.dot(more[k], prev) < 0 else more[k]
                prev = more[k]
        _set_array(layer, "times", np.concatenate([ticks, np.round(extra * TIME_TICKS).astype(np.int32)]))
        _set_array(layer, "values", np.concatenate([values, more.astype(values.dtype)]))

    @staticmethod
    def _drop_keys(layer: Element, seconds: np.ndarray, times: np.ndarray) -> None:
        """The layer's keys at times the exported track has no key at (keys deleted) left out."""
        near = np.abs(seconds[:, None] - times[None]).min(axis=1) <= 1.5 / TIME_TICKS
        if near.all() or not near.any():
            return
        for name in ("times", "values"):
            if layer.get(name) is not None and len(layer.value(name)) == len(near):
                _set_array(layer, name, np.asarray(layer.value(name))[near])

    def _key_times(self, anim: cm.Animation, old: cm.Animation, end: float) -> None:
        """Refused when `anim` keys a bone at a time up to the file's `end` its file channel holds no key at (a
        key added between the file's keys)."""
        times = {tr.bone: np.concatenate([t for t in (tr.translation_times, tr.rotation_times) if t is not None]
                                         or [np.zeros(0)]) for tr in old.tracks}
        names = {b.name: self.skel.bones[i].name for i, b in zip(self.bone_map, self.scene.skeleton.bones) if i >= 0}
        armature = {b.name for b in self.scene.skeleton.bones}
        for tr in anim.tracks:
            if tr.bone not in names:
                if tr.bone in armature:
                    raise Refused(f"bone {tr.bone!r} is keyed but not in the file")
                continue  # a track kept from the file for a bone the armature lacks: as the file has it
            have = times.get(names[tr.bone], np.zeros(0))
            for t in (tr.translation_times, tr.rotation_times):
                t = np.asarray(t if t is not None else [], np.float64)
                t = t[t <= end + 1.5 / TIME_TICKS]
                if not len(t):
                    continue
                near = np.abs(np.asarray(t, np.float64)[:, None] - have[None]).min(axis=1, initial=np.inf) \
                    if len(have) else np.full(len(t), np.inf)
                if (near > 1.5 / TIME_TICKS).any():
                    raise Refused(f"bone {tr.bone!r}: a key at a time the file holds no key at")

    def _channel_values(self, layer: Element, what: str, new_m: np.ndarray, old_m: np.ndarray) -> None:
        a = layer.get("values")
        if a is None or len(a.value) != len(new_m):
            return
        t_new, q_new, _ = matrix_to_trs(new_m)
        if what == "position":
            t_old = matrix_to_trs(old_m)[0]
            rows = np.abs(t_new - t_old).max(axis=1) > POSITION_TOLERANCE * self.size
            fresh = _merge(np.asarray(a.value), t_new, POSITION_TOLERANCE * self.size)
        else:
            q_old = matrix_to_trs(old_m)[1]
            q_old = np.where((np.einsum("ij,ij->i", q_new, q_old) < 0)[:, None], -q_old, q_old)
            rows = np.abs(q_new - q_old).max(axis=1) > ROTATION_TOLERANCE
            fresh = q_new[:, [1, 2, 3, 0]]
            was = np.asarray(a.value, np.float64)
            fresh = np.where((np.einsum("ij,ij->i", fresh, was) < 0)[:, None], -fresh, fresh)
        if rows.any():
            values = np.array(a.value)
            values[rows] = fresh[rows]
            _set(layer, "values", values)

    # -- meshes ---------------------------------------------------------------------------------------------

    def _data(self, mesh: Element) -> list[Element]:
        """The vertex data elements of `mesh` that hold its positions (bind, current and base states)."""
        out: list[Element] = []
        for e in [convert.element_of(mesh, "currentState"), convert.element_of(mesh, "bindState")] + \
                convert.elements_of(mesh, "baseStates"):
            if e is not None and e.get(self.kw["position"]) is not None and all(e is not x for x in out):
                out.append(e)
        return out

    def _bones_count(self) -> int:
        return len(self.scene.skeleton.bones) if self.scene.skeleton is not None else 0

    @staticmethod
    def _file_polygons(mesh: Element) -> tuple[np.ndarray, np.ndarray, list[str | None]]:
        """(the DMX vertex of each corner, the corner count and mtlName of each polygon) of the file's face sets
        in order, as `convert` reads them (faces of fewer than 3 corners left out)."""
        ks, sizes, mtls = [np.zeros(0, np.int64)], [np.zeros(0, np.int64)], []
        for face_set in convert.elements_of(mesh, "faceSets"):
            faces = face_set.value("faces")
            if faces is None or not len(faces):
                continue
            material = convert.element_of(face_set, "material")
            mtl = (material.value("mtlName") if material is not None else None) or face_set.name or "material"
            faces = np.asarray(faces, np.int64)
            faces = faces if faces[-1] == -1 else np.append(faces, -1)
            end = faces == -1
            poly = np.cumsum(end) - end  # the polygon of each entry (its -1 too)
            counts = np.bincount(poly[~end], minlength=int(end.sum()))
            kept = counts >= 3
            ks.append(faces[~end & kept[poly]])
            sizes.append(counts[kept])
            mtls += [mtl] * int(kept.sum())
        return np.concatenate(ks), np.concatenate(sizes), mtls

    def corners(self, nm: cm.Mesh, mesh: Element, pos_index: np.ndarray) -> np.ndarray | None:
        """The exported (core) vertex of each DMX vertex of the file (-1: on no polygon), matched polygon by
        polygon and corner by corner through their position values (a polygon's corners may start elsewhere);
        None when the polygons, their corners (as position values) or their materials are not the file's."""
        ks, file_sizes, mtls = self._file_polygons(mesh)
        found = nm.extras.get("dmx_polygons")
        if isinstance(found, dict):
            sizes, corners, slots = (np.asarray(found["sizes"], np.int64), np.asarray(found["corners"], np.int64),
                                     np.asarray(found["slots"], np.int64))
        else:
            corners = np.asarray(nm.triangles, np.int64).reshape(-1)
            sizes = np.full(len(nm.triangles), 3, np.int64)
            slots = np.asarray(nm.material_indices if nm.material_indices is not None
                               else np.zeros(len(nm.triangles)), np.int64)
        if not np.array_equal(sizes, file_sizes) or len(corners) != len(ks) or not len(sizes):
            return None
        names = [self.scene.materials[k].extras.get(convert.MTL_NAME, self.scene.materials[k].name)
                 for k in nm.materials]
        table = np.array(names + [None], object)
        new_mtls = table[np.where((slots >= 0) & (slots < len(names)), slots, len(names))]
        if not (new_mtls == np.array(mtls, object)).all():
            return None
        out = np.full(len(pos_index), -1, np.int64)
        source = np.asarray(nm.extras.get("source_vertex", ()), np.int64)
        if len(source) != len(nm.positions):
            out[ks] = corners
            return out
        file_values, new_values = pos_index[ks], source[corners]
        starts = np.cumsum(sizes) - sizes
        same = new_values == np.repeat(file_values[starts], sizes)  # where each polygon's first corner stands
        if (np.add.reduceat(same.astype(np.int64), starts) != 1).any():
            return None
        local = np.arange(len(corners)) - np.repeat(starts, sizes)
        turn = np.zeros(len(sizes), np.int64)
        turn[np.repeat(np.arange(len(sizes)), sizes)[same]] = local[same]
        rolled = np.repeat(starts, sizes) + (local + np.repeat(turn, sizes)) % np.repeat(sizes, sizes)
        if not np.array_equal(new_values[rolled], file_values):
            return None
        out[ks] = corners[rolled]
        return out

    def _weights_same(self, nm: cm.Mesh, om: cm.Mesh, at: np.ndarray, on: np.ndarray) -> bool:
        if self.scene.skeleton is None or not self.bone_map:
            return True
        new = _dense(nm, self._bones_count())[:, np.argsort(self.bone_map)]
        old = _dense(om, len(self.skel.bones))
        return bool(np.abs(new[at[on]] - old[on]).max(initial=0) <= WEIGHT_TOLERANCE)

    def mesh(self, nm: cm.Mesh, om: cm.Mesh, mesh: Element, parent: int, place: np.ndarray) -> None:
        inv = affine_inverse(place)
        local = _local(nm, inv)
        datas = self._data(mesh)
        if not datas:
            raise Refused(f"mesh {om.name!r} has no vertex data")
        kw = self.kw
        pos_index = np.asarray(datas[0].value(kw["position"] + "Indices"))
        at = self.corners(nm, mesh, pos_index) if len(pos_index) == len(om.positions) else None
        on = at >= 0 if at is not None else None
        if at is None or not self._weights_same(nm, om, at, on):
            _keep_bits(local, nm, om, np.asarray(datas[0].value(kw["position"])), pos_index)
            if datas[0].get(kw["weight"]) is None:
                self._parent_weights(local, parent)
            self.rewrite(local, mesh, datas)
            return
        moved = np.zeros(len(at), bool)
        moved[on] = _moved(nm.positions[at[on]], om.positions[on], POSITION_TOLERANCE * self.size)
        for data in datas:
            if moved.any():
                values = np.array(data.value(kw["position"]))
                rows = pos_index[moved]
                values[rows] = _merge(values[rows], local.positions[at[moved]], POSITION_TOLERANCE * self.size)
                _set(data, kw["position"], values)
            if local.normals is not None:
                self._field(data, kw["normal"], local.normals, nm.normals, om.normals, NORMAL_TOLERANCE, at)
            flip = bool(np.asarray(data.value("flipVCoordinates", 0)).reshape(-1)[:1].sum())
            for (name, uv), (_, old_uv) in zip(nm.uvs, om.uvs):
                key = kw["uv"] if name == "UVMap" else name
                file_uv = np.array(uv, np.float32)
                if not flip:
                    file_uv[:, 1] = 1 - file_uv[:, 1]
                self._field(data, key, file_uv, uv, old_uv, UV_TOLERANCE, at)
        self.shape_keys(local, om, mesh, datas[0], inv, at)

    @staticmethod
    def _field(data: Element, key: str, file_values, new, old, tol: float, at: np.ndarray) -> None:
        """The values of field `key` of the DMX vertices whose value changed (`new`, of the exported vertex `at`
        each DMX vertex, against `old`): `file_values` (of the exported vertices)."""
        a, index = data.get(key), data.get(key + "Indices")
        if new is None or old is None or a is None or index is None or len(old) != len(at):
            return
        on = at >= 0
        moved = np.zeros(len(at), bool)
        moved[on] = _moved(np.asarray(new)[at[on]], np.asarray(old)[on], tol)
        if moved.any():
            values = np.array(a.value)
            values[np.asarray(index.value)[moved]] = np.asarray(file_values)[at[moved]]
            _set(data, key, values)

    def shape_keys(self, local: cm.Mesh, om: cm.Mesh, mesh: Element, data: Element, inv: np.ndarray,
                   at: np.ndarray) -> None:
        kw = self.kw
        base = np.asarray(data.value(kw["position"]), np.float64)
        pos_index = np.asarray(data.value(kw["position"] + "Indices"))
        used, first = np.unique(pos_index[at >= 0], return_index=True)
        first = at[at >= 0][first]  # the exported vertex of each position value used
        old_keys = {k.name: k for k in om.shape_keys}
        deltas = {e.name: e for e in convert.elements_of(mesh, "deltaStates")}
        tol = POSITION_TOLERANCE * self.size
        inv_old = {k: (np.asarray(v.positions, np.float64) @ inv[:3, :3].T + inv[:3, 3]) for k, v in old_keys.items()}
        added = []
        for k in local.shape_keys:
            dense = np.zeros_like(base)
            dense[used] = np.asarray(k.positions, np.float64)[first] - base[used]
            e = deltas.get(k.name)
            if e is None:
                which = np.flatnonzero(np.abs(dense).max(axis=1) > tol).astype(np.int32)
                added.append(write.new_element(
                    "DmeVertexDeltaData", k.name, vertexFormat=(AttrType.STRING, [kw["position"]]),
                    flipVCoordinates=(AttrType.BOOL, 1), jointCount=(AttrType.INT, 0),
                    **{kw["position"]: (AttrType.VECTOR3, dense[which]),
                       kw["position"] + "Indices": (AttrType.INT, which)}))
                continue
            old_pos = inv_old.get(k.name)
            if old_pos is not None and not _moved(np.asarray(k.positions)[at[at >= 0]], old_pos[at >= 0], tol).any():
                continue
            self._delta_rows(e, dense, tol)
        gone = [n for n in deltas if n not in {k.name for k in local.shape_keys}]
        if added or gone:
            self._delta_list(mesh, added, gone)

    def _delta_rows(self, e: Element, dense: np.ndarray, tol: float) -> None:
        """Delta `e` holds `dense` (a delta per position value) where it differs from what it held."""
        kw = self.kw
        a, ia = e.get(kw["position"]), e.get(kw["position"] + "Indices")
        if a is None or ia is None:
            raise Refused(f"shape key {e.name!r} holds no {kw['position']} delta")
        old = np.zeros_like(dense)
        idx = np.asarray(ia.value)
        old[idx] = np.asarray(a.value, np.float64)
        changed = _moved(dense, old, tol)
        if not changed.any():
            return
        now = np.abs(dense).max(axis=1) > tol
        keep = [int(i) for i in idx if now[i]]
        which = np.array(keep + sorted(set(np.flatnonzero(now).tolist()) - set(keep)), np.int32)
        values = np.where(changed[which, None], dense[which], old[which])
        _set_array(e, kw["position"], values)
        _set_array(e, kw["position"] + "Indices", which)

    def _delta_list(self, mesh: Element, added: list[Element], gone: list[str]) -> None:
        a = mesh.get("deltaStates")
        if a is None:
            mesh.attributes.append(write.attribute("deltaStates", AttrType.ELEMENT, []))
            a = mesh.get("deltaStates")
        keep = [k for k, e in enumerate(a.value) if not (isinstance(e, Element) and e.name in gone)]
        a.value = [a.value[k] for k in keep] + added
        for name in ("deltaStateWeights", "deltaStateWeightsLagged"):
            w = mesh.get(name)
            rows = np.asarray(w.value).reshape(-1, 2)[[k for k in keep if k < len(w.value)]] if w is not None else None
            rows = np.concatenate([rows, np.zeros((len(added), 2), np.float32)]) if rows is not None else None
            if w is not None:
                _set_array(mesh, name, rows)
            elif added:
                mesh.attributes.append(write.attribute(name, AttrType.VECTOR2, np.zeros((len(a.value), 2), np.float32)))
        if added:
            self._controls(mesh, [e.name for e in added])

    def _controls(self, mesh: Element, names: list[str]) -> None:
        """A flex controller for each new shape key that is no corrective (write.flex_controls decides)."""
        wanted = [c for c in write.flex_controls(self.scene, []) if any(r in names for r in c["raw"])]
        op = convert.element_of(self.root, "combinationOperator")
        if op is None:
            if wanted:
                self.root.attributes.append(write.attribute("combinationOperator", AttrType.ELEMENT,
                                                            write.combination(wanted, [mesh])))
            return
        have = {c.name for c in convert.elements_of(op, "controls")}
        fresh = write.combination([c for c in wanted if c["name"] not in have], [])
        more = convert.elements_of(fresh, "controls")
        if not more:
            return
        for name in ("controls",):
            op.get(name).value = list(op.value(name)) + more
        for name in ("controlValues", "controlValuesLagged"):
            if op.get(name) is not None:
                _set_array(op, name, np.concatenate([np.asarray(op.value(name)).reshape(-1, 3),
                                                     np.asarray(fresh.value(name)).reshape(-1, 3)]))
        targets = op.get("targets")
        if targets is not None and all(t is not mesh for t in targets.value):
            targets.value = list(targets.value) + [mesh]

    def _parent_weights(self, local: cm.Mesh, parent: int) -> None:
        """No weights for a mesh the file moves with its parent bone (no weight fields) while every vertex is
        still weighted to that bone alone."""
        if local.joints is None or local.weights is None or parent < 0 or parent not in self.bone_map:
            return
        j = self.bone_map.index(parent)
        w, joints = np.asarray(local.weights), np.asarray(local.joints)
        if np.all(np.abs(np.where(joints == j, w, 0).sum(axis=1) - 1) <= WEIGHT_TOLERANCE) and \
                np.all(np.where(joints != j, w, 0) <= WEIGHT_TOLERANCE):
            local.joints = local.weights = None

    # -- topology -------------------------------------------------------------------------------------------

    def joint_slots(self) -> np.ndarray | None:
        """The jointList index of each exported bone (None: no skeleton)."""
        if self.scene.skeleton is None or not self.bone_map:
            return None
        first = {}
        for k, b in enumerate(self.slots):
            first.setdefault(int(b), k)
        return np.array([first.get(i, -1) for i in self.bone_map], np.int64)

    def _fresh_data(self, local: cm.Mesh, name: str, count: int = 0) -> Element:
        """`local`'s vertex data as this writer lays it out, blend indices into the file's jointList, with
        `count` joints per vertex (the file's jointCount) when the weights fit."""
        _fit(local, count)
        slots = self.joint_slots()
        if slots is not None and local.joints is not None and local.weights is not None:
            used = np.unique(np.asarray(local.joints)[np.asarray(local.weights) > 0])
            missing = [self.scene.skeleton.bones[b].name for b in used if slots[b] < 0]
            if missing:
                raise Refused(f"bone {missing[0]!r} weights the mesh but is not in the model's jointList")
        return write.vertex_data(local, name, slots, self.kw)

    def rewrite(self, local: cm.Mesh, mesh: Element, datas: list[Element]) -> None:
        """The mesh's vertex fields, face sets and deltas written again from `local`, in its elements."""
        count = int(np.asarray(datas[0].value("jointCount", 0)).reshape(-1)[:1].sum())
        fresh = self._fresh_data(local, datas[0].name or "bind", count)
        for data in datas:
            _replace(data, fresh)
        sets = write.face_sets(local, self.scene)
        old = {convert.element_of(s, "material").value("mtlName") if convert.element_of(s, "material") is not None
               else None: s for s in convert.elements_of(mesh, "faceSets")}
        out = []
        for s in sets:
            mtl = convert.element_of(s, "material").value("mtlName")
            kept = old.get(mtl)
            if kept is not None and kept.get("faces") is not None:
                _set_array(kept, "faces", s.value("faces"))
                out.append(kept)
            else:
                out.append(s)
        mesh.get("faceSets").value = out
        deltas = {e.name: e for e in convert.elements_of(mesh, "deltaStates")}
        added = []
        for k in local.shape_keys:
            e = write.delta(local, k, self.kw)
            if k.name in deltas:
                _replace(deltas[k.name], e)
            else:
                added.append(e)
        gone = [n for n in deltas if n not in {k.name for k in local.shape_keys}]
        if added or gone:
            self._delta_list(mesh, added, gone)

    # -- objects --------------------------------------------------------------------------------------------

    def add_mesh(self, nm: cm.Mesh) -> None:
        local = _local(nm, affine_inverse(self.up))
        dag = write.mesh_dag(local, self.scene, self.joint_slots(), self.kw)
        if nm.joints is not None:
            self._fresh_data(local, "bind")  # refused when a bone weighting it is not in the jointList
        for name in ("children", "jointList"):
            a = self.model.get(name)
            if a is not None and a.type == AttrType.ELEMENT and a.array:
                a.value = list(a.value) + [dag]
        if nm.shape_keys:
            self._controls(dag.value("shape"), [k.name for k in nm.shape_keys])

    def remove_mesh(self, mesh: Element) -> None:
        elements = reachable(self.d)
        before = _from_root(self.d.root)
        dags = [e for e in elements if e.type == "DmeDag" and e.value("shape") is mesh]
        gone = {id(x) for x in dags + [mesh]}
        jl = self.model.get("jointList")
        if jl is not None and jl.array:
            at = [k for k, e in enumerate(jl.value) if id(e) in gone]
            if at and any(self.slots[k] >= 0 for k in range(min(at), len(self.slots))):
                raise Refused(f"mesh {mesh.name!r} stands before bones in the model's jointList")
        for e in elements:
            for a in e.attributes:
                if a.type == AttrType.ELEMENT and a.array and any(id(x) in gone for x in a.value):
                    a.value = [x for x in a.value if id(x) not in gone]
                elif a.type == AttrType.ELEMENT and not a.array and id(a.value) in gone:
                    a.value = None
        after = _from_root(self.d.root)
        self.d.elements = [e for e in self.d.elements if id(e) in after or id(e) not in before]
        if self.d.top_level is not None:
            self.d.top_level = [e for e in self.d.top_level if id(e) in after or id(e) not in before]


def _from_root(root: Element) -> set[int]:
    """The ids of the elements reachable from `root` (a stack, never recursion)."""
    seen = {id(root)}
    stack = [root]
    while stack:
        for c in element_refs(stack.pop()):
            if id(c) not in seen:
                seen.add(id(c))
                stack.append(c)
    return seen


def _merge(old, new, tol: float) -> np.ndarray:
    """`new`, but each number within `tol` of `old`'s: `old`'s (its bits as the file has them)."""
    old, new = np.asarray(old), np.asarray(new, np.float64)
    return np.where(np.abs(new - old) <= tol, old, new)


def _keep_bits(local: cm.Mesh, nm: cm.Mesh, om: cm.Mesh, values: np.ndarray, pos_index: np.ndarray) -> None:
    """The file's own position value for each vertex of `local` (`nm` in its node's space) that Blender gave back
    exactly where the import put a DMX vertex (`om`): its bits, not those of a round trip through the node's
    matrix."""
    old = np.ascontiguousarray(np.asarray(om.positions, np.float32))
    new = np.ascontiguousarray(np.asarray(nm.positions, np.float32))
    if not len(old) or not len(new):
        return
    row = np.dtype((np.void, old.itemsize * old.shape[1]))  # a point's bytes, compared whole
    ko, kn = old.view(row).ravel(), new.view(row).ravel()
    order = np.argsort(ko, kind="stable")  # of equal points the last one, as a dict built in order keeps
    at = order[np.clip(np.searchsorted(ko[order], kn, side="right") - 1, 0, None)]
    hit = ko[at] == kn
    local.positions[hit] = np.asarray(values)[np.asarray(pos_index)[at[hit]]]


def _fit(mesh: cm.Mesh, count: int) -> None:
    """`mesh`'s weights as `count` per vertex (the largest first) when none has more, padded with zeros."""
    w, j = mesh.weights, mesh.joints
    if w is None or j is None or count <= 0 or w.shape[1] == count or ((np.asarray(w) > 0).sum(axis=1) > count).any():
        return
    order = np.argsort(-np.asarray(w), axis=1, kind="stable")[:, :count]
    w, j = np.take_along_axis(np.asarray(w), order, 1), np.take_along_axis(np.asarray(j), order, 1)
    pad = count - w.shape[1]
    mesh.weights = np.pad(w, ((0, 0), (0, pad))).astype(np.float32)
    mesh.joints = np.pad(j, ((0, 0), (0, pad))).astype(np.int32)


def _set_array(e: Element, name: str, value) -> None:
    a = e.get(name)
    a.value = np.ascontiguousarray(np.asarray(value, dmx.FIXED[a.type][0]))


def _replace(old: Element, fresh: Element) -> None:
    """`old` holds `fresh`'s attributes: the same ones get the new values (in place, in their order), new ones are
    appended, and fields `fresh` no longer lists are dropped. The file's UV orientation and field order stay."""
    names = {a.name for a in fresh.attributes}
    fields = old.value("vertexFormat")
    fields = list(fields) if isinstance(fields, list) else []
    flip = old.get("flipVCoordinates")
    unflipped = flip is not None and not flip.array and not int(np.asarray(flip.value))
    for a in fresh.attributes:
        value = a.value
        if unflipped and a.type == AttrType.VECTOR2 and a.array and not a.name.endswith("Indices"):
            value = np.array(value)
            value[:, 1] = 1 - value[:, 1]
        if a.name == "flipVCoordinates" and flip is not None or a.name == "jointCount" and not int(np.asarray(a.value)):
            continue  # the file's flag; its joint count while no weights are written
        if a.name == "vertexFormat" and sorted(fields) == sorted(a.value):
            continue
        mine = old.get(a.name)
        if mine is None:
            old.attributes.append(a)
            a.value = value
        elif mine.type == a.type and mine.array == a.array:
            mine.value = value
        else:
            old.attributes[old.attributes.index(mine)] = a
            a.value = value
    dropped = {f for f in fields if f not in names} | {f + "Indices" for f in fields if f not in names}
    old.attributes = [a for a in old.attributes if a.name not in dropped]


def _check(data: bytes, scene: cm.Scene) -> None:
    """Refused unless the written file reads back as `scene`: bone names and binds, mesh vertices and faces,
    shape key names."""
    back, _ = convert.to_scene(dmx.read(data), "check", with_animations=False)
    a, b = back.skeleton, scene.skeleton
    if (a is None) != (b is None or not b.bones):
        raise Refused("the file written does not read back with the armature")
    size = max([float(np.abs(m.positions).max()) for m in scene.meshes if len(m.positions)] + [1.0])
    if a is not None and b is not None:
        names_a = sorted(x.name for x in a.bones)
        if names_a != sorted(x.name for x in b.bones):
            raise Refused("the file written does not read back with the armature's bone names")
        binds = {x.name: np.asarray(x.bind) for x in a.bones}
        for x in b.bones:
            if np.abs(binds[x.name] - np.asarray(x.bind)).max() > 1e-4 * size:
                raise Refused(f"bone {x.name!r} does not read back at its rest")
    for i, j in _pair([m.name for m in back.meshes], [m.name for m in scene.meshes]):
        if i is None or j is None:
            raise Refused("the file written does not read back with the exported meshes")
        ma, mb = back.meshes[i], scene.meshes[j]
        if len(ma.triangles) != len(mb.triangles) or not _same_points(ma.positions, mb.positions, 1e-4 * size):
            raise Refused(f"mesh {mb.name!r} does not read back with its faces and vertex positions")
        if sorted(k.name for k in ma.shape_keys) != sorted(k.name for k in mb.shape_keys):
            raise Refused(f"mesh {mb.name!r} does not read back with its shape keys")


def _same_points(a: np.ndarray, b: np.ndarray, tol: float) -> bool:
    """The same points, whatever their order and however often each is repeated: as many distinct ones, within
    `tol` of each other in bounds and mean."""
    ua, ub = np.unique(np.asarray(a, np.float32), axis=0), np.unique(np.asarray(b, np.float32), axis=0)
    if len(ua) != len(ub):
        return False
    if not len(ua):
        return True
    return bool(max(np.abs(ua.min(0) - ub.min(0)).max(), np.abs(ua.max(0) - ub.max(0)).max(),
                    np.abs(ua.astype(np.float64).mean(0) - ub.astype(np.float64).mean(0)).max()) <= tol)
