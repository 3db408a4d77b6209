"""The Fox animations written by `convert`, checked against the
glTF animation evaluated here with numpy as glTF specifies, and against Blender's own evaluation of Fox.glb."""
from __future__ import annotations

import numpy as np
import pytest

from support.gltf_numpy import Glb
from support.quaternion import slerp
from support.bytes_compare import assert_same_bytes
from support.evaluation import evaluated_positions, sample_times

pytestmark = pytest.mark.blender

CLIPS = ("Survey", "Walk", "Run")
TOL = 1e-4  # of the bounding-box diagonal


# -- an independent glTF animation evaluator -------------------------------------------------------------

def _sample(times, values, t, rotation):
    if t <= times[0]:
        return values[0]
    if t >= times[-1]:
        return values[-1]
    i = int(np.searchsorted(times, t, side="right")) - 1
    f = (t - times[i]) / (times[i + 1] - times[i])
    if rotation:
        return slerp(values[i], values[i + 1], f)
    return values[i] + (values[i + 1] - values[i]) * f


def _trs_matrix(t, q_xyzw, s):
    x, y, z, w = q_xyzw
    r = np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                  [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                  [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])
    m = np.eye(4)
    m[:3, :3] = r * np.asarray(s)
    m[:3, 3] = t
    return m


class GltfClip:
    def __init__(self, glb: Glb, index: int):
        self.glb = glb
        anim = glb.json["animations"][index]
        self.name = anim["name"]
        self.channels = []
        for c in anim["channels"]:
            s = anim["samplers"][c["sampler"]]
            assert s.get("interpolation", "LINEAR") == "LINEAR"
            self.channels.append((c["target"]["node"], c["target"]["path"],
                                  glb.accessor(s["input"]).ravel().astype(np.float64),
                                  glb.accessor(s["output"]).astype(np.float64)))
        self.duration = max(float(ch[2].max()) for ch in self.channels)
        self.key_times = np.unique(np.concatenate([ch[2] for ch in self.channels]))

    def skin(self, t: float) -> np.ndarray:
        """Skinned positions (glTF axes) at time t."""
        g = self.glb
        nodes = g.json["nodes"]
        trs = []
        for n in nodes:
            trs.append([np.array(n.get("translation", [0, 0, 0]), float),
                        np.array(n.get("rotation", [0, 0, 0, 1]), float), np.array(n.get("scale", [1, 1, 1]), float)])
        for node, path, times, values in self.channels:
            k = {"translation": 0, "rotation": 1, "scale": 2}[path]
            trs[node][k] = _sample(times, values, t, path == "rotation")
        local = [_trs_matrix(*x) for x in trs]
        parents = g.parents()
        world = {}

        def w(i):
            if i not in world:
                world[i] = local[i] if i not in parents else w(parents[i]) @ local[i]
            return world[i]

        skin = g.json["skins"][0]
        ibm = g.accessor(skin["inverseBindMatrices"]).reshape(-1, 4, 4).transpose(0, 2, 1).astype(np.float64)
        mats = np.array([w(j) @ ibm[k] for k, j in enumerate(skin["joints"])])
        prim = g.json["meshes"][0]["primitives"][0]["attributes"]
        pos = g.accessor(prim["POSITION"]).astype(np.float64)
        joints = g.accessor(prim["JOINTS_0"]).astype(np.int64)
        weights = g.accessor(prim["WEIGHTS_0"]).astype(np.float64)
        m = np.einsum("vk,vkij->vij", weights, mats[joints])
        return np.einsum("vij,vj->vi", m[:, :3, :3], pos) + m[:, :3, 3]


def gltf_to_blender(p: np.ndarray) -> np.ndarray:
    return np.stack([p[:, 0], -p[:, 2], p[:, 1]], axis=1)


# -- fixtures -------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def glb(testdata):
    return Glb(testdata / "gltf" / "Fox.glb")


@pytest.fixture(scope="module")
def clips(glb):
    return {c.name: c for c in (GltfClip(glb, i) for i in range(len(glb.json["animations"])))}


@pytest.fixture(scope="module")
def fox_dir(fox_mdl):
    return fox_mdl.parent


@pytest.fixture(scope="module")
def fox_core(fox_mdl):
    from skinbridge.io_urhox.model import convert, umd2

    scene, _ = convert.to_scene(umd2.read(fox_mdl.read_bytes()), "Fox", "urhox")
    return scene


def core_animation(path, scene, profile="urhox"):
    from skinbridge.io_urhox.motion import convert as motion_convert, uani

    roots = {b.name for b in scene.skeleton.bones if b.parent < 0}
    anim, _ = motion_convert.to_core(uani.read(path.read_bytes()), path.stem, profile, roots)
    return anim


def core_skin(scene, anim, t):
    from skinbridge.core import skinning

    world = skinning.evaluate_animation(scene.skeleton, anim, t)
    return skinning.skin_mesh(scene.meshes[0], scene.skeleton, world)


# -- item 1 ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("clip", CLIPS)
def test_fox_clip_written_as_urhox_v2(fox_dir, clips, glb, clip):
    from skinbridge.io_urhox.motion import uani

    path = fox_dir / "Animations" / f"{clip}.ani"
    assert path.is_file(), f"convert did not write {path}"
    anim = uani.read(path.read_bytes())
    assert anim.variant == "urhox" and anim.version == 2 and not anim.warnings
    assert anim.trigger_count == 0 and anim.metadata_count == 0
    ref = clips[clip]
    joints = {glb.json["nodes"][j]["name"] for j in glb.json["skins"][0]["joints"]}
    animated = {glb.json["nodes"][node]["name"] for node, *_ in ref.channels} & joints
    assert [t.name for t in anim.tracks] and {t.name for t in anim.tracks} == animated
    assert len(anim.tracks) == len(animated)
    for track in anim.tracks:
        assert track.interpolation == uani.INTERPOLATION_LINEAR
        assert (np.diff(track.times) > 0).all(), track.name
    assert abs(float(anim.length) - ref.duration) <= 1e-4


# -- item 2 ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("clip", CLIPS)
def test_fox_core_skinning_equals_gltf(fox_dir, fox_core, clips, clip):
    ref = clips[clip]
    anim = core_animation(fox_dir / "Animations" / f"{clip}.ani", fox_core)
    pos = fox_core.meshes[0].positions
    diag = float(np.linalg.norm(np.ptp(pos, axis=0)))
    worst = 0.0
    for t in sample_times(ref.key_times):
        expected = gltf_to_blender(ref.skin(t))
        got = core_skin(fox_core, anim, t)
        worst = max(worst, float(np.abs(got - expected).max()) / diag)
    assert worst <= TOL, f"{clip}: {worst:.3g} of the diagonal"


@pytest.fixture(scope="module")
def fox_blender(addon, testdata):
    """Fox.glb imported by Blender's glTF importer in this process."""
    import bpy

    bpy.ops.wm.read_factory_settings(use_empty=True)
    assert bpy.ops.import_scene.gltf(filepath=str(testdata / "gltf" / "Fox.glb")) == {"FINISHED"}
    arm = next(o for o in bpy.context.view_layer.objects if o.type == "ARMATURE")
    mesh = next(o for o in bpy.context.view_layer.objects if o.type == "MESH" and o.find_armature() == arm)
    return arm, mesh


@pytest.mark.parametrize("clip", CLIPS)
def test_fox_core_skinning_equals_blender_at_keys_and_midpoints(fox_blender, fox_dir, fox_core, clips, clip):
    import bpy

    arm, mesh = fox_blender
    arm.animation_data.action = bpy.data.actions[clip]
    fps = bpy.context.scene.render.fps / bpy.context.scene.render.fps_base
    anim = core_animation(fox_dir / "Animations" / f"{clip}.ani", fox_core)
    core_rest = fox_core.meshes[0].positions.astype(np.float64)
    diag = float(np.linalg.norm(np.ptp(core_rest, axis=0)))
    # Blender's mesh may order (or merge) vertices differently: pair them by rest position
    rest = np.array([v.co[:] for v in mesh.data.vertices], dtype=np.float64)
    world = np.array(mesh.matrix_world, dtype=np.float64)
    rest = rest @ world[:3, :3].T + world[:3, 3]
    pair = np.argmin(((core_rest[:, None, :] - rest[None, :, :]) ** 2).sum(-1), axis=1)
    assert np.abs(rest[pair] - core_rest).max() <= 1e-5 * diag
    worst = 0.0
    for t in sample_times(clips[clip].key_times, fractions=(0.5,)):
        got = evaluated_positions(mesh, t, fps)[pair]
        expected = core_skin(fox_core, anim, t)
        worst = max(worst, float(np.abs(got - expected).max()) / diag)
    assert worst <= TOL, f"{clip}: {worst:.3g} of the diagonal"


# -- item 4 (codec part) and item 6 -----------------------------------------------------------------------

def _ani_files(testdata, fox_dir):
    return [testdata / "urho3d" / "Ninja_Walk.ani", testdata / "urho3d" / "Ninja_Idle1.ani",
            *[fox_dir / "Animations" / f"{c}.ani" for c in CLIPS]]


def test_read_write_byte_identical(testdata, fox_dir):
    from skinbridge.io_urhox.motion import uani

    for path in _ani_files(testdata, fox_dir):
        data = path.read_bytes()
        anim = uani.read(data)
        assert anim.variant == ("urho3d" if path.name.startswith("Ninja") else "urhox")
        assert_same_bytes(uani.write(anim), data, uani.read, what=path.name)


def test_mapping_round_trip_keeps_tracks(testdata, fox_dir):
    """file → core → file without Blender: same masks, key times and values (within float32 rounding)."""
    from skinbridge.io_urhox.motion import convert as motion_convert, uani

    for path in _ani_files(testdata, fox_dir):
        rec = uani.read(path.read_bytes())
        roots = {rec.tracks[0].name}
        core, _ = motion_convert.to_core(rec, path.stem, "urhox", roots)
        back, _ = motion_convert.from_core(core, "urhox", rec.variant, roots)
        assert [t.name for t in back.tracks] == [t.name for t in rec.tracks]
        for a, b in zip(back.tracks, rec.tracks):
            assert a.channel_mask == b.channel_mask
            np.testing.assert_array_equal(a.times, b.times)
            np.testing.assert_allclose(a.positions, b.positions, atol=1e-5, rtol=0)
            d = np.minimum(np.abs(a.rotations - b.rotations).max(1), np.abs(a.rotations + b.rotations).max(1))
            assert d.max() <= 1e-6


def _mutations(data: bytes, rng: np.random.Generator):
    n = len(data)
    cuts = sorted(set([0, 1, 4, 5, 8, 9, 12, n - 1, n - 4, n - 8] + list(rng.integers(0, n, 40))))
    for c in cuts:
        if 0 <= c < n:
            yield data[:c]
    for pos in list(range(min(n, 48))) + list(rng.integers(0, n, 150)):
        for value in (0x00, 0xFF, 0x7F, 0x80, data[pos] ^ 0x01):
            b = bytearray(data)
            b[pos] = value
            yield bytes(b)


@pytest.mark.slow
def test_bad_input_reads_or_raises_format_error(testdata, fox_dir):
    from skinbridge.core.errors import FormatError
    from skinbridge.io_urhox.motion import convert as motion_convert, info, uani

    rng = np.random.default_rng(5)
    for path in _ani_files(testdata, fox_dir):
        tried = 0
        for data in _mutations(path.read_bytes(), rng):
            tried += 1
            try:
                with np.errstate(all="ignore"):
                    rec = uani.read(data)
                    motion_convert.to_core(rec, "x", "urhox", {"b_Root_00", "Joint1"})
                    info.animation_summary(data)
            except FormatError:
                pass
        assert tried > 500
