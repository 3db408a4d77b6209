"""File › Export's defaults fit together (issue 46, item 2): after File › Import of an Urho3D model and its
animation, the model export takes the profile the model was imported with (axes and layout) and the animation
export each animation's own layout, so that Urho3D's loader reads the pair (`support.urho_engine`, written from
the engine's rules) and poses it as `convert`'s own pair is posed.

Before: the model came out in UrhoX axes (UMD2) and the animation in Urho3D axes inside the UrhoX v2 layout,
which Urho3D read as an animation named "\\x02" with a track count made of other bytes (Mutant_Run: 1,982,301)."""
from __future__ import annotations

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from support.urho_engine import (  # noqa: E402
    Engine, animation_header, correspondence, diagonal, matched_difference, urho3d_to_blender, urhox_to_blender,
)

from skinbridge.io_urhox.model import umd2  # noqa: E402
from skinbridge.io_urhox.motion import uani  # noqa: E402

from conftest import run_cli  # noqa: E402

pytestmark = pytest.mark.blender

POSE_TOL = 1e-4  # of the diagonal: two conversions of one pose, through float32 files


def _posed(folder, to_blender, times) -> tuple[np.ndarray, list[np.ndarray]]:
    engine = Engine(umd2.read((folder / "Ninja.mdl").read_bytes()))
    walk = uani.read((folder / "Animations" / "Ninja_Walk.ani").read_bytes())
    return to_blender(engine.positions), [to_blender(engine.skin(walk, t)) for t in times]


@pytest.mark.slow
def test_file_export_defaults_write_a_pair_the_engine_loads(clean_scene, testdata, tmp_path):
    src = testdata / "urho3d"
    assert bpy.ops.import_scene.skinbridge_urhox(filepath=str(src / "Ninja.mdl")) == {"FINISHED"}
    bpy.context.view_layer.objects.active = next(o for o in bpy.data.objects if o.type == "ARMATURE")
    assert bpy.ops.import_anim.skinbridge_urhox_ani(filepath=str(src / "Ninja_Walk.ani")) == {"FINISHED"}
    out = tmp_path / "export"
    assert bpy.ops.export_scene.skinbridge_urhox(filepath=str(out / "Ninja.mdl")) == {"FINISHED"}
    assert bpy.ops.export_anim.skinbridge_urhox_ani(directory=str(out)) == {"FINISHED"}

    walk = uani.read((src / "Ninja_Walk.ani").read_bytes())
    name, length, tracks = animation_header((out / "Animations" / "Ninja_Walk.ani").read_bytes())
    assert (name, tracks) == (walk.name, len(walk.tracks)) == ("Walk", 24)
    assert length == pytest.approx(float(walk.length))
    assert umd2.read((out / "Ninja.mdl").read_bytes()).magic == "UMDL"  # the file's layout and axes

    converted = tmp_path / "convert"
    result = run_cli("convert", src / "Ninja.mdl", "--motion", src / "Ninja_Walk.ani", "--to", "urhox",
                     "-o", converted)
    assert result.returncode == 0, result.stdout + result.stderr
    times = (np.arange(6) + 0.37) * float(walk.length) / 6
    rest_a, posed_a = _posed(converted, urhox_to_blender, times)
    rest_b, posed_b = _posed(out, urho3d_to_blender, times)
    pairs = correspondence(rest_a, rest_b)
    worst = max(matched_difference(pairs, a, b) for a, b in zip(posed_a, posed_b)) / diagonal(rest_a)
    assert worst <= POSE_TOL, worst


def test_each_animation_keeps_its_own_layout_unless_one_is_chosen(clean_scene, testdata, tmp_path):
    """Ninja's classic walk and a UrhoX v2 copy of its idle on one armature: the default writes each as it came;
    a chosen format writes both in it."""
    src = testdata / "urho3d"
    idle = uani.read((src / "Ninja_Idle1.ani").read_bytes())
    v2 = tmp_path / "in" / "Ninja_Idle1.ani"
    v2.parent.mkdir()
    records = uani.Animation(uani.VARIANT_URHOX, 2, "", idle.length, idle.tracks)
    for t in records.tracks:  # UANI v2 keys hold all three channels
        t.channel_mask, t.interpolation = uani.CHANNELS_ALL, 1  # linear
        t.positions = np.zeros((t.key_count, 3), np.float32) if t.positions is None else t.positions
        t.scales = np.ones((t.key_count, 3), np.float32) if t.scales is None else t.scales
    v2.write_bytes(uani.write(records))
    assert bpy.ops.import_scene.skinbridge_urhox(filepath=str(src / "Ninja.mdl")) == {"FINISHED"}
    bpy.context.view_layer.objects.active = next(o for o in bpy.data.objects if o.type == "ARMATURE")
    for path in (src / "Ninja_Walk.ani", v2):
        assert bpy.ops.import_anim.skinbridge_urhox_ani(filepath=str(path)) == {"FINISHED"}
    out = tmp_path / "default"
    assert bpy.ops.export_anim.skinbridge_urhox_ani(directory=str(out)) == {"FINISHED"}
    variants = {p.stem: uani.detect_variant(p.read_bytes()) for p in (out / "Animations").glob("*.ani")}
    assert variants == {"Ninja_Walk": uani.VARIANT_URHO3D, "Ninja_Idle1": uani.VARIANT_URHOX}
    out = tmp_path / "chosen"
    assert bpy.ops.export_anim.skinbridge_urhox_ani(directory=str(out), ani_format="urho3d") == {"FINISHED"}
    variants = {p.stem: uani.detect_variant(p.read_bytes()) for p in (out / "Animations").glob("*.ani")}
    assert variants == {"Ninja_Walk": uani.VARIANT_URHO3D, "Ninja_Idle1": uani.VARIANT_URHO3D}
