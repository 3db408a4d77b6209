"""Issue 49, the edit campaign on the goose puppet (docs/testing.md §6): an edit made in Blender changes only
what it edits in the written `.mdl`, or the export says what the file cannot hold. A moved key rewrites that one
sample (not its track's other samples: an Euler angle 0 came back -0); keys after the clip's end make it longer
and keep its first samples; a second import of the model writes the file's clip name, not Blender's ".001";
a shape key and a new image in the material are named in a warning (a `.mdl` holds neither)."""
from __future__ import annotations

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from skinbridge.blender import compat  # noqa: E402
from skinbridge.io_wepuppet.puppet import blender_io, mdl  # noqa: E402

pytestmark = pytest.mark.blender

GOOSE = "blacryu_goose_t_puppet.mdl"


def _curve(act, path: str, index: int):
    return next(fc for cb in compat.channelbags(act) for fc in cb.fcurves
                if fc.data_path == path and fc.array_index == index)


def _goose(testdata):
    path = testdata / "wepuppet" / GOOSE
    result = blender_io.import_wepuppet(bpy.context, str(path))
    return path.read_bytes(), result


def _written(tmp_path) -> tuple[mdl.Model, list[str]]:
    out = tmp_path / "out.mdl"
    warnings = blender_io.export_wepuppet(bpy.context, str(out))
    return mdl.read(out.read_bytes()), warnings


def _root_x(result):
    """Root's location x curve of the goose's clip, and how many file units one Blender unit is along it."""
    act = result.armature.animation_data.action
    return _curve(act, 'pose.bones["Root"].location', 0)


def test_a_moved_key_rewrites_that_sample_alone(clean_scene, testdata, tmp_path):
    data, result = _goose(testdata)
    fc = _root_x(result)
    key = fc.keyframe_points[len(fc.keyframe_points) // 2]
    frame = key.co.x
    for p in (key.co, key.handle_left, key.handle_right):
        p.y += 0.1
    fc.update()
    written, _ = _written(tmp_path)
    was = mdl.read(data)
    a, b = was.animations.clips[0].samples, written.animations.clips[0].samples
    sample = int(round(frame / bpy.context.scene.render.fps * float(was.animations.clips[0].fps)))
    changed = np.argwhere(a.view("<u4") != b.view("<u4"))  # bit for bit: -0 is not 0
    # the goose's root track holds file x along Blender x: 0.1 m is 10 image pixels at the import's scale
    assert changed.tolist() == [[0, sample, 0]] and b[0, sample, 0] == pytest.approx(a[0, sample, 0] + 10, abs=1e-4)
    written.animations.clips[0].samples = a
    assert mdl.write(written) == data  # and nothing else of the file


def test_keys_after_the_end_make_the_clip_longer(clean_scene, testdata, tmp_path):
    data, result = _goose(testdata)
    fc = _root_x(result)
    clip = mdl.read(data).animations.clips[0]
    fps = bpy.context.scene.render.fps
    end = clip.length / float(clip.fps) * fps  # 48: the action's last frame
    fc.keyframe_points.insert(end + 10, fc.evaluate(end) + 0.1)
    fc.update()
    written, _ = _written(tmp_path)
    longer = written.animations.clips[0]
    frames = int(np.ceil((end + 10) / fps * float(clip.fps) - 1e-3))  # 58 of 24 fps: 36.25 clip frames
    assert longer.length == frames == 37
    assert longer.samples[:, :clip.length + 1].tobytes() == clip.samples.tobytes()
    # past the last key Blender holds it: the root at its new key, every other bone at its last sample
    assert longer.samples[0, -1, 0] == pytest.approx(clip.samples[0, -1, 0] + 10, abs=1e-4)
    assert np.array_equal(longer.samples[1:, -1], clip.samples[1:, -1])


def test_a_second_import_writes_the_files_clip_name(clean_scene, testdata, tmp_path):
    data, _ = _goose(testdata)
    second = blender_io.import_wepuppet(bpy.context, str(testdata / "wepuppet" / GOOSE))
    assert second.armature.animation_data.action.name.endswith(".001")
    for ob in bpy.context.scene.objects:
        ob.select_set(ob in second.objects)
    out = tmp_path / "copy.mdl"
    blender_io.export_wepuppet(bpy.context, str(out), selected_only=True)  # the copy
    assert out.read_bytes() == data


def test_a_shape_key_and_a_new_image_are_named_in_warnings(clean_scene, testdata, tmp_path):
    data, result = _goose(testdata)
    mesh_ob = next(ob for ob in result.objects if ob.type == "MESH")
    mesh_ob.shape_key_add(name="Basis", from_mix=False)
    key = mesh_ob.shape_key_add(name="Wing up", from_mix=False)
    key.data[0].co.z += 0.05
    node = next(n for n in mesh_ob.data.materials[0].node_tree.nodes if n.type == "TEX_IMAGE")
    node.image = bpy.data.images.new("painted", 4, 4)
    written, warnings = _written(tmp_path)
    assert [w for w in warnings if "shape keys not written" in w and "Wing up" in w]
    assert [w for w in warnings if "image painted not written" in w]
    assert mdl.write(written) == data  # the file as it was: the warnings say what it does not hold


HOOD = "blacryu_d2r_Hood_puppet.mdl"


def test_a_key_between_samples_is_named_in_a_warning(clean_scene, testdata, tmp_path):
    """The Hood's clips hold a sample every 24 / 4.875 = 4.92 frames: a key between two of them changes no sample
    (the file comes back as it was) and the export says so, naming the bone and the frame; an unchanged import,
    whose rotation curves carry Blender's GENERATED keys between the samples, is not warned about."""
    path = testdata / "wepuppet" / HOOD
    result = blender_io.import_wepuppet(bpy.context, str(path))
    _, warnings = _written(tmp_path)
    assert not [w for w in warnings if "between its samples" in w]
    act = result.armature.animation_data.action
    fc = _curve(act, 'pose.bones["bone_0"].location', 0)
    fc.keyframe_points.insert(189.0, fc.evaluate(189.0) + 0.1)
    fc.update()
    written, warnings = _written(tmp_path)
    assert mdl.write(written) == path.read_bytes()
    said = [w for w in warnings if "between its samples" in w]
    assert len(said) == 1 and f"clip {act.name}" in said[0] and "bone_0 at frame 189" in said[0], warnings


def test_a_static_model_imported_twice_writes_the_selected_copy(clean_scene, testdata, tmp_path):
    """A model without bones imported twice (bench/edits' duplicate-model) is two models: File › Export writes the
    copy the selection touches, byte for byte as the file (both copies were merged into one model); with none
    selected it names both and writes nothing."""
    path = testdata / "wepuppet" / "blacryu_Arwing_static.mdl"
    for _ in range(2):
        assert bpy.ops.import_scene.skinbridge_wepuppet(filepath=str(path)) == {"FINISHED"}
    meshes = [ob for ob in bpy.data.objects if ob.type == "MESH"]
    tokens = {ob[blender_io.IMPORT_PROP] for ob in meshes}
    assert len(tokens) == 2
    for ob in bpy.context.view_layer.objects:
        ob.select_set(False)
    out = tmp_path / "none.mdl"
    with pytest.raises(RuntimeError, match="2 models could be exported"):
        bpy.ops.export_scene.skinbridge_wepuppet(filepath=str(out))
    assert not out.exists()
    second = next(ob for ob in meshes if ob[blender_io.IMPORT_PROP] != meshes[0][blender_io.IMPORT_PROP])
    second.select_set(True)
    out = tmp_path / "second.mdl"
    assert bpy.ops.export_scene.skinbridge_wepuppet(filepath=str(out)) == {"FINISHED"}
    assert out.read_bytes() == path.read_bytes()
