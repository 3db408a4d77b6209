"""Shared by the Wallpaper Engine tests: a puppet built in code, a record comparison, a table-driven walker of
MDLV files that follows docs/wallpaper_engine.md §2 field by field (independent of the codec), the tests' own
skinning of the raw records (§3) and a picture and a project folder the tests write."""
from __future__ import annotations

import json
import math
import shutil
import struct

import numpy as np

from skinbridge.core import model as cm
from skinbridge.core.transforms import matrix_to_trs
from skinbridge.io_wepuppet.puppet import convert, mdl
from skinbridge.io_wepuppet.puppet.project_docs import format_json, layer_doc, project_doc, scene_doc
from skinbridge.io_wepuppet.texture import tex


def rot(axis: str, a: float) -> np.ndarray:
    c, s = math.cos(a), math.sin(a)
    m = np.eye(4)
    i, j = {"x": (1, 2), "y": (2, 0), "z": (0, 1)}[axis]
    m[i, i], m[i, j], m[j, i], m[j, j] = c, -s, s, c
    return m


def built_puppet(n_bones: int = 3, samples: int = 9, fps: float = 12.0) -> tuple[cm.Scene, np.ndarray, mdl.Model]:
    """A strip of quads skinned to a chain of bones whose bind matrices rotate about all three axes, with one
    clip keyed on every Euler axis, translation and non-uniform scale. Returns the Scene (core axes) and the
    file-space local bind matrices (n, 4, 4) and the records it was made from."""
    local = []
    for i in range(n_bones):
        m = rot("z", 0.3 + 0.2 * i) @ rot("y", 0.15 * (i + 1)) @ rot("x", -0.1 * i)
        m[:3, 3] = (40.0 * i - 30.0, 25.0 + 5 * i, 3.0 * i) if i else (-20.0, -60.0, 0.0)
        local.append(m)
    local = np.array(local)
    scene_model = mdl.Model(tag="MDLV0013")
    bones = [mdl.Bone(f"b{i}" if i else "", 1, i - 1, convert.to_column_major(local[i]).astype("<f4"),
                      '{"a":"1 0 0"}' if i == 1 else "") for i in range(n_bones)]
    sk = mdl.Skeleton(1, bones)
    world = convert.world_binds(sk)
    n_v = 4 * n_bones
    rng = np.random.default_rng(7)
    v = np.zeros(n_v, mdl.vertex_dtype(mdl.FORMAT_NARROW))
    heads = world[:, :3, 3]
    for i in range(n_v):
        b = min(i // 4, n_bones - 1)
        v["position"][i] = heads[b] + [(i % 2) * 30 - 15, ((i // 2) % 2) * 20 - 10, 0]
        j = [b, max(b - 1, 0), (b + 1) % n_bones, 0]
        wts = rng.dirichlet([2, 1, 1]) if b else [1, 0, 0]
        v["joints"][i] = j
        v["weights"][i, :3] = wts
    v["uv0"] = rng.random((n_v, 2))
    tris = []
    for q in range(n_bones):
        a = 4 * q
        tris += [a, a + 1, a + 2, a + 1, a + 3, a + 2]
    mesh = mdl.Mesh(["materials/built.json"], 0, None, None, mdl.FORMAT_NARROW, v, np.array(tris, "<u2"))
    scene_model.meshes = [mesh]
    k = np.arange(samples)[:, None]
    s = np.zeros((n_bones, samples, 9), np.float32)
    for i in range(n_bones):
        t0, r0, s0 = matrix_to_trs(local[i])
        e0 = convert.quat_to_euler_xyz(r0)
        s[i, :, 0:3] = t0 + np.hstack([4 * np.sin(k / 3), 2 * k, -np.cos(k / 2)])
        s[i, :, 3:6] = e0 + np.hstack([0.2 * np.sin(k / 2), 0.1 * k / samples, 0.4 * np.sin(k / 4 + i)])
        s[i, :, 6:9] = np.hstack([1 + 0.1 * k / samples, 1 - 0.05 * k / samples, np.ones_like(k, float)])
    clip = mdl.Clip(77, 0, "Wave", "loop", np.float32(fps), samples - 1, 0, np.zeros(n_bones, "<u4"), s,
                    events=[(np.float32(2), '{"frame":2,"name":"tick"}')])
    scene_model.sections = [mdl.Section("MDLS0001", sk), mdl.Section("MDLA0001", mdl.Animations(1, [clip]))]
    scene, _ = convert.to_scene(scene_model, "built", textures=False)
    return scene, local, scene_model


def pairs(v) -> list[dict]:
    """Per vertex {bone: weight} of its influences of weight > 0. A bone named in two slots of one vertex (Hood
    has such vertices) counts once with the sum: it deforms alike, and a vertex group holds one weight per bone."""
    out = []
    for row_j, row_w in zip(v["joints"], v["weights"]):
        d: dict[int, float] = {}
        for j, w in zip(row_j, row_w):
            if w > 0:
                d[int(j)] = d.get(int(j), 0.0) + float(w)
        out.append(d)
    return out


def close(a, b, ulps: int = 4, floor: float = 1e-5) -> bool:
    a = np.asarray(a, np.float32).astype(np.float64)
    b = np.asarray(b, np.float32).astype(np.float64)
    tol = np.maximum(floor, ulps * np.spacing(np.abs(b).astype(np.float32)).astype(np.float64))
    return bool(np.all(np.abs(a - b) <= tol))


def assert_same_records(a: mdl.Model, b: mdl.Model, weights_tol: float = 1e-6) -> None:
    """Item-5 equality: vertex/triangle order, positions/UVs within max(1e-5, 4 ulps), per-vertex (bone, weight)
    pairs of weight > 0, bone names/parents/flags/props byte for byte, bind matrices exactly, clips."""
    assert len(a.meshes) == len(b.meshes)
    for ma, mb in zip(a.meshes, b.meshes):
        assert np.array_equal(np.asarray(ma.indices, np.int64), np.asarray(mb.indices, np.int64))
        assert close(ma.vertices["position"], mb.vertices["position"])
        assert close(ma.vertices["uv0"], mb.vertices["uv0"])
        if "joints" in ma.vertices.dtype.names:
            pa, pb = pairs(ma.vertices), pairs(mb.vertices)
            for x, y in zip(pa, pb):
                assert x.keys() == y.keys() and all(abs(x[k] - y[k]) <= weights_tol for k in x), (x, y)
    sa, sb = a.skeleton, b.skeleton
    assert (sa is None) == (sb is None)
    if sa is not None:
        for x, y in zip(sa.bones, sb.bones):
            assert (x.name, x.parent, x.flags, x.props.encode("utf-8", "surrogateescape")) == \
                (y.name, y.parent, y.flags, y.props.encode("utf-8", "surrogateescape"))
            assert x.matrix.tobytes() == y.matrix.tobytes(), x.name
    ca, cb = a.animations, b.animations
    assert (ca is None) == (cb is None)
    if ca is not None:
        for x, y in zip(ca.clips, cb.clips):
            assert (x.id, x.name, x.mode, float(x.fps), x.length, x.flags) == \
                (y.id, y.name, y.mode, float(y.fps), y.length, y.flags)
            assert np.array_equal(x.track_flags, y.track_flags)
            assert [(float(f), t) for f, t in x.events] == [(float(f), t) for f, t in y.events]
            assert close(x.samples, y.samples), x.name


# -- the walker ---------------------------------------------------------------------------------------------
# Each entry: (field, struct format or a callable taking the walker). A table, not the codec.

STRIDES = {0x00000009: 20, 0x0000000F: 48, 0x01800009: 52, 0x0180000F: 80, 0x0181000E: 84}


class Walker:
    def __init__(self, data: bytes):
        self.data, self.pos, self.fields = data, 0, []

    def take(self, label: str, fmt: str):
        size = struct.calcsize("<" + fmt)
        assert self.pos + size <= len(self.data), f"{label} runs past the end"
        value = struct.unpack_from("<" + fmt, self.data, self.pos)
        self.fields.append((label, self.pos, value))
        self.pos += size
        return value[0] if len(value) == 1 else value

    def cstr(self, label: str) -> str:
        end = self.data.index(b"\0", self.pos)
        text = self.data[self.pos:end].decode("utf-8")
        self.fields.append((label, self.pos, text))
        self.pos = end + 1
        return text

    def skip(self, label: str, n: int) -> None:
        assert self.pos + n <= len(self.data), f"{label} runs past the end"
        self.fields.append((label, self.pos, n))
        self.pos += n


def walk(data: bytes) -> dict:
    """Field-by-field walk of an MDLV file with MDLS0001 / MDAT0001 / MDLA0001 sections."""
    wk = Walker(data)
    tag = wk.cstr("tag")
    version = int(tag[4:])
    out = {"version": version, "meshes": [], "bones": [], "attachments": [], "clips": [], "sections": []}
    wk.take("legacy format", "I")
    per_mesh = wk.take("materials per mesh", "I")
    for k in range(wk.take("mesh count", "I")):
        mats = [wk.cstr(f"mesh {k} material") for _ in range(per_mesh)]
        flags = wk.take(f"mesh {k} flags", "I")
        if flags & 2:
            wk.take(f"mesh {k} flags extra", "I")
        bbox = wk.take(f"mesh {k} bbox", "6f") if version >= 17 else None
        fmt = wk.take(f"mesh {k} format", "I") if version >= 15 else None
        vbytes = wk.take(f"mesh {k} vertex bytes", "I")
        stride = STRIDES[fmt]
        assert vbytes % stride == 0
        verts = []
        for i in range(vbytes // stride):
            start = wk.pos
            rec = {"position": wk.take(f"v{i} position", "3f")}
            if stride == 80:
                rec["normal"] = wk.take(f"v{i} normal", "3f")
                rec["tangent"] = wk.take(f"v{i} tangent", "4f")
            rec["joints"] = wk.take(f"v{i} joints", "4I")
            rec["weights"] = wk.take(f"v{i} weights", "4f")
            rec["uv"] = wk.take(f"v{i} uv", "2f")
            assert wk.pos - start == stride
            verts.append(rec)
        ibytes = wk.take(f"mesh {k} index bytes", "I")
        size = 4 if flags & 1 else 2
        indices = [wk.take(f"index {j}", "I" if size == 4 else "H") for j in range(ibytes // size)]
        if version >= 21:
            assert wk.take(f"mesh {k} extra positions flag", "B") == 0
            assert wk.take(f"mesh {k} vector4 flag", "B") == 0
        if version >= 23:
            assert wk.take(f"mesh {k} group count", "I") == 0
        out["meshes"].append({"materials": mats, "format": fmt, "bbox": bbox, "vertices": verts, "indices": indices})
    while wk.pos < len(data):
        stag = wk.cstr("section tag")
        if not stag:
            break
        end = wk.take(f"{stag} end", "I")
        out["sections"].append(stag)
        if stag == "MDLS0001":
            for i in range(wk.take("bone count", "I")):
                name = wk.cstr(f"bone {i} name")
                flags, parent, length = wk.take(f"bone {i} flags/parent/length", "IiI")
                assert length == 64
                matrix = wk.take(f"bone {i} matrix", "16f")
                out["bones"].append({"name": name, "flags": flags, "parent": parent, "matrix": matrix,
                                     "props": wk.cstr(f"bone {i} props")})
        elif stag == "MDAT0001":
            for i in range(wk.take("attachment count", "H")):
                bone = wk.take(f"attachment {i} bone", "H")
                out["attachments"].append({"bone": bone, "name": wk.cstr(f"attachment {i} name"),
                                           "matrix": wk.take(f"attachment {i} matrix", "16f")})
        elif stag == "MDLA0001":
            for c in range(wk.take("clip count", "i")):
                cid, zero = wk.take(f"clip {c} id", "2I")
                name, mode = wk.cstr(f"clip {c} name"), wk.cstr(f"clip {c} mode")
                fps, length, flags = wk.take(f"clip {c} fps/length/flags", "fII")
                tracks = []
                for t in range(wk.take(f"clip {c} track count", "i")):
                    tflags, nbytes = wk.take(f"clip {c} track {t} flags/bytes", "2I")
                    assert nbytes == 36 * (length + 1)
                    tracks.append([wk.take(f"clip {c} track {t} sample {k}", "9f") for k in range(length + 1)])
                events = [(wk.take("event frame", "f"), wk.cstr("event text"))
                          for _ in range(wk.take(f"clip {c} event count", "i"))]
                out["clips"].append({"id": cid, "name": name, "mode": mode, "fps": fps, "length": length,
                                     "flags": flags, "tracks": tracks, "events": events})
        else:
            wk.skip(stag, end - wk.pos)
        assert wk.pos == end, (stag, wk.pos, end)
    out["end"] = wk.pos
    return out


def _rotation(axis: int, angle: float) -> np.ndarray:
    """Rotation about one axis by Rodrigues' formula (not the module's hand-written matrices)."""
    k = np.zeros(3)
    k[axis] = 1.0
    kx = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    return np.eye(3) + math.sin(angle) * kx + (1 - math.cos(angle)) * kx @ kx


def layer_matrix(obj: dict, properties: dict) -> np.ndarray:
    """The tests' own reading of a scene.json layer's place, in scene pixels: T(origin) · Rz · Ry · Rx · S, a value
    bound to a user property taking that property's value."""
    def vec(key: str, default: str) -> np.ndarray:
        v = obj.get(key, default)
        if isinstance(v, dict):
            v = properties[v["user"]]["value"]
        return np.full(3, float(v)) if isinstance(v, (int, float)) else np.array([float(x) for x in v.split()])
    ax, ay, az = vec("angles", "0 0 0")
    m = np.eye(4)
    m[:3, :3] = _rotation(2, az) @ _rotation(1, ay) @ _rotation(0, ax) @ np.diag(vec("scale", "1 1 1"))
    m[:3, 3] = vec("origin", "0 0 0")
    return m


# ------------------------------------------------------------------------------------------------------------
# the tests' own reading of docs/wallpaper_engine.md §3: skinning from the raw records

def mat16(f):  # column-major 16 floats, written out element by element
    f = [float(x) for x in f]
    return np.array([[f[0], f[4], f[8], f[12]], [f[1], f[5], f[9], f[13]], [f[2], f[6], f[10], f[14]],
                     [f[3], f[7], f[11], f[15]]])


def _rx(a):
    c, s = math.cos(a), math.sin(a)
    return np.array([[1, 0, 0, 0], [0, c, -s, 0], [0, s, c, 0], [0, 0, 0, 1.0]])


def _ry(a):
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, 0, s, 0], [0, 1, 0, 0], [-s, 0, c, 0], [0, 0, 0, 1.0]])


def _rz(a):
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, -s, 0, 0], [s, c, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1.0]])


def local_pose(sample):
    p, e, s = sample[0:3], sample[3:6], sample[6:9]
    t = np.eye(4)
    t[:3, 3] = p
    return t @ _rz(e[2]) @ _ry(e[1]) @ _rx(e[0]) @ np.diag([s[0], s[1], s[2], 1.0])


def reference_deform(m: mdl.Model, clip: mdl.Clip, k: int) -> np.ndarray:
    """File-space positions of mesh 0 at sample k, one bone and one vertex at a time (no codec maths)."""
    bones = m.skeleton.bones
    bind, world = [], []
    for i, b in enumerate(bones):
        bind.append(mat16(b.matrix) if b.parent < 0 else bind[b.parent] @ mat16(b.matrix))
        loc = local_pose(clip.samples[i, k])
        world.append(loc if b.parent < 0 else world[b.parent] @ loc)
    skin = [world[i] @ np.linalg.inv(bind[i]) for i in range(len(bones))]
    v = m.meshes[0].vertices
    out = np.zeros((len(v), 3))
    for i in range(len(v)):
        p = np.append(np.asarray(v["position"][i], np.float64), 1.0)
        for j, w in zip(v["joints"][i], v["weights"][i]):
            if w:
                out[i] += float(w) * (skin[int(j)] @ p)[:3]
    return out


def to_blender(p, metres_per_unit=convert.METRES_PER_UNIT):
    """File positions → Blender, as docs/wallpaper_engine.md §4 maps them."""
    p = np.asarray(p, np.float64)
    return metres_per_unit * np.stack([p[:, 0], -p[:, 2], p[:, 1]], axis=1)


# ------------------------------------------------------------------------------------------------------------
# pictures and projects the tests write

def grey_picture(h: int, w: int) -> np.ndarray:
    """Grey blocks (so R8 and RG88 hold it whole and LZ4 shrinks it) with a varying alpha."""
    yy, xx = np.mgrid[0:h, 0:w]
    px = np.empty((h, w, 4), np.uint8)
    px[..., 0] = px[..., 1] = px[..., 2] = (xx // 8 * 40 + yy // 8 * 17) % 256
    px[..., 3] = 255 - (yy // 4) * 7 % 256
    return px


ANIMATION_LAYERS = [
    {"additive": False, "animation": 459, "blend": 0.5, "blendin": 0.2, "id": 30, "name": "walk", "rate": 1.0},
    {"additive": True, "animation": 459, "blend": 1.0, "id": 31, "name": "hop", "rate": 2.0, "visible": False}]
EFFECT = {"file": "effects/shake/effect.json", "id": 40, "passes": [{"constantshadervalues": {"speed": 2.5}}]}


def write_json(path, doc) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(format_json(doc))


def make_project(folder, testdata) -> None:
    """A project our writer makes: an image with its texture, an image parented to it, BlacRyu's goose puppet,
    a static model, a particle system and an effect kept as data."""
    models, materials = folder / "models", folder / "materials"
    models.mkdir()
    materials.mkdir()
    shutil.copyfile(testdata / "wepuppet" / "blacryu_goose_t_puppet.mdl", models / "goose_t_puppet.mdl")
    shutil.copyfile(testdata / "wepuppet" / "blacryu_goose_t.tex", materials / "goose_t.tex")
    shutil.copyfile(testdata / "wepuppet" / "blacryu_Arwing_static.mdl", models / "arwing.mdl")
    write_json(models / "goose_t.json", json.loads((testdata / "wepuppet" / "blacryu_goose_t.model.json").read_text()))
    rgba = np.zeros((4, 8, 4), np.uint8)
    rgba[..., 0] = np.arange(8) * 30
    rgba[..., 3] = 255
    (materials / "sky.tex").write_bytes(tex.write(tex.from_rgba(rgba)))
    for name in ("sky", "goose_t"):
        write_json(materials / f"{name}.json", {"passes": [{"shader": "genericimage2", "textures": [name]}]})
    write_json(models / "sky.json", {"material": "materials/sky.json"})
    write_json(folder / "particles" / "snow.json", {"emitter": [{"name": "boxrandom"}]})
    objects = [
        layer_doc("image", "models/sky.json", 1, "sky", (960, 540, 0), scale=(2, 1.5, 1), size="1920 1080"),
        layer_doc("image", "models/sky.json", 2, "badge", (100, -50, 0), angles=(0, 0, 0.25), parent=1,
                  effects=[EFFECT]),
        layer_doc("image", "models/goose_t.json", 3, "goose", (700.5, 300.25, 0), angles=(0, 0, 0.5),
                  animationlayers=ANIMATION_LAYERS),
        layer_doc("model", "models/arwing.mdl", 4, "arwing", (100, 200, -50), angles=(0.3, -0.2, 0.1),
                  scale=(2, 3, 4)),
        layer_doc("particle", "particles/snow.json", 5, "snow", (960, 1080, 0), instanceoverride={"rate": 2}),
    ]
    objects[2]["scale"] = {"user": "goosescale", "value": "1.00000 1.00000 1.00000"}
    props = {"goosescale": {"order": 100, "text": "Goose scale", "type": "slider", "value": 1.5}}
    (folder / "project.json").write_bytes(format_json(project_doc("Goose pond", props)))
    (folder / "scene.json").write_bytes(format_json(scene_doc(1920, 1080, objects)))
