"""Fox.glb → `convert --to dmx`: our DMX reader and srctools (an independent reader, test-only) read the written
files back equal to the exported scene through the core model, within 1e-6 relative (float32 storage): bones,
binds, vertices, normals, UVs, weights, triangles per material, and every animation sample. The QC names every
written file and every sequence with its rate. The expected scene is what Blender holds after the import, read
through the core model (`gather_scene`, `read_action`) in the same session; the srctools side works out binds,
vertex fields and channel values from the element tree alone."""
from __future__ import annotations

import io
import os

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from skinbridge import formats  # noqa: E402
from skinbridge.app.loading import compare_load  # noqa: E402
from skinbridge.app.options import ConvertOptions  # noqa: E402
from skinbridge.app.pipeline import convert_file  # noqa: E402
from skinbridge.blender import action as bact  # noqa: E402
from skinbridge.blender import scene as bscene  # noqa: E402
from skinbridge.core.transforms import quat_to_matrix3  # noqa: E402
from skinbridge.io_smd.smd import convert  # noqa: E402
from skinbridge.io_smd.dmx import dmx  # noqa: E402
from skinbridge.io_smd.dmx import convert as dmx_convert  # noqa: E402
from skinbridge.io_smd.dmx import write as dmx_write  # noqa: E402
from skinbridge.io_smd.qc import qc  # noqa: E402

try:
    import srctools.dmx as srctools_dmx
except ImportError:  # the independent reader is test-only: only its checks skip without it
    srctools_dmx = None

pytestmark = pytest.mark.blender
RTOL = ATOL = 1e-6


def _close(a, b, what: str) -> None:
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    assert a.shape == b.shape, (what, a.shape, b.shape)
    err = float(np.abs(a - b).max(initial=0))
    assert np.allclose(a, b, rtol=RTOL, atol=ATOL), f"{what}: {err}"


def _expected(context):
    """The exported scene through the core model, as the exporter reads it."""
    scene, _ = bscene.gather_scene(context, max_influences=dmx_write.MAX_WEIGHTS, tangents=False)
    _, arm_ob = bscene.exportable_objects(context)
    for act in bact.armature_actions(arm_ob):
        anim, _ = bact.read_action(context, arm_ob, act)
        anim.name = act.name
        scene.animations.append(anim)
    return scene


def _by_material(m, scene) -> dict[str, np.ndarray]:
    slots = m.material_indices if m.material_indices is not None else np.zeros(len(m.triangles), int)
    return {scene.materials[m.materials[s]].name: m.triangles[slots == s] for s in np.unique(slots)}


def _check_model(got, want) -> None:
    gb, wb = got.skeleton.bones, want.skeleton.bones
    assert [b.name for b in gb] == [b.name for b in wb] and [b.parent for b in gb] == [b.parent for b in wb]
    _close([b.bind for b in gb], [b.bind for b in wb], "binds")
    assert len(got.meshes) == len(want.meshes)
    for g, w in zip(got.meshes, want.meshes):
        _close(g.positions, w.positions, f"{w.name} positions")
        _close(g.normals, w.normals, f"{w.name} normals")
        assert [n for n, _ in g.uvs][1:] == [f"texcoord${k}" for k in range(1, len(w.uvs))]
        for (_, gu), (_, wu) in zip(g.uvs, w.uvs):
            _close(gu, wu, f"{w.name} UVs")
        _close(g.weights, w.weights, f"{w.name} weights")
        assert np.array_equal(np.where(w.weights > 0, g.joints, -1), np.where(w.weights > 0, w.joints, -1))
        gt, wt = _by_material(g, got), _by_material(w, want)
        assert gt.keys() == wt.keys() and all(np.array_equal(gt[k], wt[k]) for k in wt)


def _srctools(path: str):
    """srctools reads binary 1-5 and keyvalues2: our binary 9 file goes to it as our binary 5 write of it."""
    d = dmx.read(open(path, "rb").read())
    d.encoding_version, d.strings, d.header, d.prefix = 5, None, None, []
    return srctools_dmx.Element.parse(io.BytesIO(dmx.write(d)))[0]


def _matrix(t) -> np.ndarray:
    x, y, z, w = t["orientation"].val_quat
    m = np.eye(4)
    m[:3, :3] = quat_to_matrix3([w, x, y, z])
    m[:3, 3] = [float(c) for c in t["position"].val_vec3]
    return m


def _srctools_bones(model) -> dict[str, np.ndarray]:
    """Bind matrix of every joint: its base-state transform (Z up: no axis turn) after its parent's."""
    base = {t.name: t for t in list(model["baseStates"].iter_elem())[0]["transforms"].iter_elem()}
    out = {}

    def walk(e, parent: np.ndarray) -> None:
        for c in e["children"].iter_elem():
            if c.type == "DmeJoint":
                out[c.name] = parent @ _matrix(base[c.name])
                walk(c, out[c.name])
    walk(model, np.eye(4))
    return out


def _check_srctools_model(path: str, want) -> None:
    model = _srctools(path)["model"].val_elem
    binds = _srctools_bones(model)
    assert list(binds) == [b.name for b in want.skeleton.bones]
    _close(list(binds.values()), [b.bind for b in want.skeleton.bones], "srctools binds")
    joints = [e.name for e in model["jointList"].iter_elem()]
    dags = [c for c in model["children"].iter_elem() if c.type == "DmeDag"]
    for dag, w in zip(dags, want.meshes):
        data = dag["shape"].val_elem["bindState"].val_elem
        pos = np.array([list(v) for v in data["position$0"].iter_vec3()])[list(data["position$0Indices"].iter_int())]
        _close(pos, w.positions, "srctools positions")
        uv = np.array([list(v) for v in data["texcoord$0"].iter_vec2()])[list(data["texcoord$0Indices"].iter_int())]
        _close(uv, w.uvs[0][1], "srctools UVs")
        k = int(data["jointCount"].val_int)
        weights = np.array(list(data["blendweights$0"].iter_float())).reshape(-1, k)
        names = np.array(joints)[np.array(list(data["blendindices$0"].iter_int())).reshape(-1, k)]
        bones = [b.name for b in want.skeleton.bones]
        _close(weights, w.weights, "srctools weights")
        wanted = np.array(bones)[w.joints]
        assert (names[w.weights > 0] == wanted[w.weights > 0]).all()


def _check_animation(path: str, want_skel, anim, rate: float) -> None:
    got, _ = dmx_convert.load(path, open(path, "rb").read())
    assert [a.name for a in got.animations] == [anim.name] and got.animations[0].extras["fps"] == rate
    count = int(round(anim.length * rate)) + 1
    seconds = np.arange(count) / rate
    want = convert.animation_locals(want_skel, anim, seconds)
    _close(convert.animation_locals(got.skeleton, got.animations[0], seconds), want, f"{anim.name} samples")
    if srctools_dmx is None:
        return
    clip = list(_srctools(path)["animationList"].val_elem["animations"].iter_elem())[0]
    assert float(clip["frameRate"].val_float) == rate
    index = {b.name: i for i, b in enumerate(want_skel.bones)}
    for ch in clip["channels"].iter_elem():
        layer = list(ch["log"].val_elem["layers"].iter_elem())[0]
        times = np.array([float(t) for t in layer["times"].iter_time()])  # srctools gives seconds
        assert np.abs(times - seconds).max() <= 0.5e-4  # whole ticks of 1/10000 s
        i = index[ch["toElement"].val_elem.name]
        if ch["toAttribute"].val_str == "position":
            _close([list(v) for v in layer["values"].iter_vec3()], want[:, i, :3, 3], f"{ch.name} srctools")
        else:
            q = np.array([list(v) for v in layer["values"].iter_quat()])
            _close(quat_to_matrix3(q[:, [3, 0, 1, 2]]), want[:, i, :3, :3], f"{ch.name} srctools")


def test_fox_to_dmx(clean_scene, testdata, tmp_path):
    written, warnings = convert_file(str(testdata / "gltf" / "Fox.glb"), str(tmp_path), "Fox",
                                     ConvertOptions(target="dmx"))
    print(warnings)
    want = _expected(bpy.context)
    names = sorted(os.path.basename(p) for p in written)
    assert names == sorted(["Fox.dmx", "Fox.qc"] + [f"{a.name}.dmx" for a in want.animations])
    got, _ = dmx_convert.load(str(tmp_path / "Fox.dmx"), (tmp_path / "Fox.dmx").read_bytes())
    _check_model(got, want)
    if srctools_dmx is not None:
        _check_srctools_model(str(tmp_path / "Fox.dmx"), want)
    project = qc.read(str(tmp_path / "Fox.qc"))
    assert [(b.name, b.file) for b in project.bodies] == [("Fox", str(tmp_path / "Fox.dmx"))]  # read resolved
    assert sorted(project.files()) == sorted(str(tmp_path / n) for n in names if n.endswith(".dmx"))
    fps = bact.fps_of(bpy.context.scene)
    assert [s.name for s in project.sequences] == [a.name for a in want.animations]
    for seq, anim in zip(project.sequences, want.animations):
        rate = dmx_write.sample_rate(anim, fps)
        assert seq.files == [str(tmp_path / f"{anim.name}.dmx")] and seq.fps == rate
        _check_animation(seq.files[0], want.skeleton, anim, rate)
        assert formats.file_kind(seq.files[0]) == "motion"
    assert formats.file_kind(str(tmp_path / "Fox.dmx")) == "model"
    folder, _ = compare_load(str(tmp_path))  # `compare`: the folder's one model with its motions
    assert [a.name for a in folder.animations] == sorted(a.name for a in want.animations)
    _check_model(folder, want)


def test_export_operator_writes_the_same_files(clean_scene, testdata, tmp_path):
    """File › Export › Valve DMX writes the package convert writes, named by the chosen file's stem."""
    convert_file(str(testdata / "gltf" / "Fox.glb"), str(tmp_path / "convert"), "Fox", ConvertOptions(target="dmx"))
    (tmp_path / "op").mkdir()
    assert bpy.ops.export_scene.skinbridge_dmx(filepath=str(tmp_path / "op" / "Fox.dmx")) == {"FINISHED"}
    assert sorted(os.listdir(tmp_path / "op")) == sorted(os.listdir(tmp_path / "convert"))
    assert (tmp_path / "op" / "Fox.qc").read_text() == (tmp_path / "convert" / "Fox.qc").read_text()
    want = _expected(bpy.context)
    got, _ = dmx_convert.load("Fox.dmx", (tmp_path / "op" / "Fox.dmx").read_bytes())
    _check_model(got, want)


def test_the_written_qc_imports_whole(clean_scene, testdata, tmp_path):
    """The QC `convert --to dmx` writes imports back: the model and one action per sequence, named as it, each
    posing the bones as the DMX it names."""
    convert_file(str(testdata / "gltf" / "Fox.glb"), str(tmp_path), "Fox", ConvertOptions(target="dmx"))
    bpy.ops.wm.read_factory_settings(use_empty=True)
    formats.get("qc").get("blender_import")(bpy.context, str(tmp_path / "Fox.qc"), None)
    (arm,) = [o for o in bpy.data.objects if o.type == "ARMATURE"]
    assert len([o for o in bpy.data.objects if o.type == "MESH"]) == 1
    project = qc.read(str(tmp_path / "Fox.qc"))
    assert sorted(a.name for a in bpy.data.actions) == sorted(s.name for s in project.sequences)
    for seq in project.sequences:
        clip, _ = dmx_convert.load(seq.files[0], open(seq.files[0], "rb").read())
        got, _ = bact.read_action(bpy.context, arm, bpy.data.actions[seq.name])
        seconds = np.arange(int(round(clip.animations[0].length * seq.fps)) + 1) / seq.fps
        want = convert.animation_locals(clip.skeleton, clip.animations[0], seconds)
        have = convert.animation_locals(clip.skeleton, got, seconds)
        assert np.abs(have - want).max() <= 1e-5 * max(1.0, float(np.abs(want[..., :3, 3]).max())), seq.name
