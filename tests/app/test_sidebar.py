"""The SkinBridge tab of the 3D viewport sidebar (README "Installing the add-on in Blender", docs/blender.md
§10): the panels register under the tab, the model facts equal counts read from the file, the check for a
target lists what the export then prints without leaving a file, and an export with several warnings gives one
report."""
from __future__ import annotations

import re

import pytest

bpy = pytest.importorskip("bpy")

from skinbridge import formats  # noqa: E402  (after the bpy check: these modules need Blender)
from skinbridge.app import operators, sidebar  # noqa: E402
from skinbridge.app.options import ConvertOptions  # noqa: E402
from skinbridge.app.target_check import TargetCheck, check_target  # noqa: E402
from skinbridge.blender import action as bact  # noqa: E402
from skinbridge.blender import compat  # noqa: E402
from skinbridge.blender import model_facts as mf  # noqa: E402
from skinbridge.blender.ops_common import LAST_OUTCOME  # noqa: E402
from skinbridge.io_pmx.model import pmx  # noqa: E402
from support.sidebar import StandInPanel, drawn, import_file, panels  # noqa: E402

pytestmark = pytest.mark.blender

LONG_NAME = "LeftUpperArmTwistHelper"  # 23 ASCII bytes: over the 15 a VMD name holds


def test_the_tab_holds_the_panels_and_the_targets_of_the_registry(addon):
    model = bpy.types.VIEW3D_PT_skinbridge
    assert (model.bl_space_type, model.bl_region_type, model.bl_category) == ("VIEW_3D", "UI", "SkinBridge")
    for cls in panels()[1:]:
        assert (cls.bl_space_type, cls.bl_region_type, cls.bl_category, cls.bl_parent_id) == (
            "VIEW_3D", "UI", "SkinBridge", "VIEW3D_PT_skinbridge")
    props = bpy.context.scene.skinbridge_sidebar
    items = props.bl_rna.properties["target"].enum_items
    assert [i.identifier for i in items] == list(formats.targets())
    for target, spec in formats.targets().items():
        held = set(getattr(props, f"options_{target}").bl_rna.properties.keys()) - {"rna_type", "name"}
        assert held == {o.name for o in spec.options if not o.reading}


def _file_counts(path) -> dict:
    """Counts read from the PMX records: Blender's import is not involved."""
    m = pmx.read(path.read_bytes())
    v = m.vertices
    per_vertex = [len({int(b) for b, w in zip(bones, weights) if w > 0}) for bones, weights in
                  zip(v["bones"].tolist(), v["weights"].tolist())]
    return {"vertices": len(v), "faces": len(m.indices) // 3, "bones": len(m.bones),
            "morphs": sum(x.kind == pmx.MORPH_VERTEX for x in m.morphs), "rigid_bodies": len(m.rigid_bodies),
            "max_influences": max(per_vertex), "mean_influences": sum(per_vertex) / len(per_vertex)}


def test_the_facts_of_luka_are_the_counts_of_its_file(clean_scene, testdata):
    path = testdata / "pmx" / "mmdtools_megurine_luka.pmx"
    import_file(path)
    facts = mf.model_facts(*mf.active_model(bpy.context))
    want = _file_counts(path)
    assert facts.source_path == str(path) and sidebar.source_text(facts) == (path.name, "MikuMikuDance model (PMX)")
    assert (facts.vertices, facts.faces, facts.triangles, facts.bones, facts.morphs, facts.rigid_bodies,
            facts.max_influences) == (want["vertices"], want["faces"], want["faces"], want["bones"], want["morphs"],
                                      want["rigid_bodies"], want["max_influences"])
    assert facts.mean_influences == pytest.approx(want["mean_influences"], rel=1e-12)
    assert facts.deforming_bones == want["bones"]  # a PMX bone has no deform flag: any may weigh vertices
    assert (facts.actions, facts.binds_kept, facts.binds_unchanged) == (0, want["bones"], want["bones"])
    labels = drawn(bpy.context)
    assert f"{want['vertices']:,}" in labels and f"{want['faces']:,}" in labels and str(want["bones"]) in labels
    assert f"Bind matrices: {want['bones']} of {want['bones']} bones as imported" in labels
    arm = bpy.context.view_layer.objects.active
    arm.location.x += 1.0  # a moved armature no longer holds the file's binds: export writes Blender's
    bpy.context.view_layer.update()
    assert mf.model_facts(*mf.active_model(bpy.context)).binds_unchanged == 0


def test_the_kept_keys_fact_counts_the_tracks_the_export_writes_back(clean_scene, testdata):
    """Right after importing BST's walkn every track holds the file's keys (the export writes them back); a key
    moved on one bone leaves one track fewer (the count compared two kinds of fingerprint: it said 0 unchanged)."""
    import_file(testdata / "dmx" / "bst_walkn.dmx.gz")
    arm = next(o for o in bpy.data.objects if o.type == "ARMATURE")
    act = arm.animation_data.action
    curves = compat.channelbag_for_slot(act, arm.animation_data.action_slot).fcurves
    keyed = {re.match(r'pose\.bones\["(.*)"\]', fc.data_path).group(1) for fc in curves}
    kept = set(bact.kept_keys(act)["tracks"])  # the tracks whose keys curves cannot give exactly (149 of 154)
    tracks = len(kept)
    assert 0 < tracks and kept <= keyed
    facts = mf.model_facts(*mf.active_model(bpy.context))
    assert (facts.tracks_kept, facts.tracks_unchanged) == (tracks, tracks)
    fc = next(fc for fc in curves if fc.data_path.startswith(f'pose.bones["{sorted(kept)[0]}"]'))
    fc.keyframe_points[len(fc.keyframe_points) // 2].co.y += 0.1
    assert mf.model_facts(*mf.active_model(bpy.context)).tracks_unchanged == tracks - 1
    assert f"Kept keys: {tracks - 1} of {tracks} tracks unchanged" in drawn(bpy.context)


def test_the_panels_draw_for_a_mesh_and_for_nothing(clean_scene):
    assert "No armature or mesh active" in drawn(bpy.context)
    bpy.ops.mesh.primitive_cube_add()
    labels = drawn(bpy.context)
    assert "Cube" in labels and "8" in labels and "6" in labels and "12" in labels  # vertices, faces, triangles
    assert "Cube settings" not in labels
    bpy.context.object["nwn2_hiding"] = "HIDE_HAIR"  # a format's per-object setting: editable in the tab
    assert "Cube settings" in drawn(bpy.context)


@pytest.fixture
def ninja_long_bone(clean_scene, testdata):
    import_file(testdata / "urho3d" / "Ninja.mdl")
    arm = bpy.context.view_layer.objects.active
    arm.data.bones[3].name = LONG_NAME
    return arm


def test_check_for_pmx_lists_the_vmd_name_and_writes_nothing(ninja_long_bone, tmp_path):
    short = LONG_NAME.encode("cp932")[:15].decode("cp932")  # ASCII: the first 15 characters
    result = check_target(bpy.context, "pmx", {}, "Ninja", parent=str(tmp_path))
    assert list(tmp_path.iterdir()) == []
    assert not result.refused and result.files == ["Ninja.pmx"]
    assert [w for w in result.warnings if LONG_NAME in w] == [
        f"bone name {LONG_NAME!r} is longer than the 15 bytes a VMD name holds: PMX and VMD call it {short!r} "
        "(the full name is its English name)"]
    props = bpy.context.scene.skinbridge_sidebar
    props.target = "pmx"
    assert bpy.ops.skinbridge.check_target() == {"FINISHED"}
    assert [(f.kind, f.text) for f in props.findings] == result.findings
    labels = drawn(bpy.context)
    assert any(short in text for text in labels)
    index = next(i for i, f in enumerate(props.findings) if LONG_NAME in f.text)
    assert bpy.ops.skinbridge.select_finding(index=index) == {"FINISHED"}
    chosen = [pb.name for pb in ninja_long_bone.pose.bones if compat.pose_bone_flag(pb, "select")]
    assert chosen == [LONG_NAME] and bpy.context.view_layer.objects.active == ninja_long_bone


def test_a_finding_names_what_it_quotes():
    text = "mesh 'Body': bone \"Arm's\" (was 'a\\'b') and 'Body' again"
    assert sidebar.quoted_names(text) == ["Body", "Arm's", "a'b"]


def _compare_each_target(tmp_path, name: str) -> dict[str, TargetCheck]:
    """For every target: the check (its temporary folder gone afterwards), then the export itself; the check
    refuses with the export's error, or lists the export's warnings and files. The checks, by target."""
    checks = tmp_path / "checks"
    checks.mkdir()
    out = {}
    for target, spec in formats.targets().items():
        result = out[target] = check_target(bpy.context, target, {}, name, parent=str(checks))
        assert list(checks.iterdir()) == []
        folder = tmp_path / target
        folder.mkdir()
        try:
            _, warnings = spec.get("export_target")(bpy.context, str(folder), name, ConvertOptions(target=target))
        except ValueError as e:  # ExportError and NoTarget: the check says it refuses, with the same words
            assert result.refused == str(e), target
            continue
        assert not result.refused and result.warnings == warnings, target
        assert result.files == sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
    return out


def test_the_check_lists_what_each_target_export_prints(ninja_long_bone, tmp_path):
    checks = _compare_each_target(tmp_path, "Ninja")
    assert any(LONG_NAME in w for w in checks["pmx"].warnings)


@pytest.mark.slow
def test_the_check_of_luka_lists_what_each_target_export_prints(clean_scene, testdata, tmp_path):
    import_file(testdata / "pmx" / "mmdtools_megurine_luka.pmx")
    checks = _compare_each_target(tmp_path, "Luka")
    # the two textures the sample does not ship (the import warned about them too)
    assert sum("was not found" in w for w in checks["pmx"].warnings) == 2
    assert "at most 64 bones" in checks["urhox"].refused


def test_an_export_with_several_warnings_gives_one_report(ninja_long_bone, tmp_path, capfd):
    """In background mode Blender prints each report as "<Type>: message" (a message's further lines
    follow as they are): one such line for the whole export, its further lines every warning."""
    for i, bone in enumerate(ninja_long_bone.data.bones[4:6]):
        bone.name = f"{LONG_NAME}{i}"
    names = [LONG_NAME, f"{LONG_NAME}0", f"{LONG_NAME}1"]
    capfd.readouterr()
    category, _, name = operators.export_idname(formats.targets()["pmx"]).partition(".")
    assert getattr(getattr(bpy.ops, category), name)(filepath=str(tmp_path / "Ninja.pmx")) == {"FINISHED"}
    out = capfd.readouterr().out
    reports = re.findall(r"^(Info|Warning|Error): (.*)$", out, re.M)
    lines = [line[2:] for line in out.splitlines() if line.startswith("  ")]
    assert len(lines) >= 3 and reports == [
        ("Warning", f"Exported Ninja.pmx: {len(lines)} warnings, see the SkinBridge panel or Info")]
    assert [w for w in lines if "15 bytes a VMD name holds" in w] == [
        f"bone name {n!r} is longer than the 15 bytes a VMD name holds: PMX and VMD call it {s!r} (the full "
        "name is its English name)" for n, s in zip(names, ["LeftUpperArmTwi", "LeftUpperArmT~2", "LeftUpperArmT~3"])]
    assert LAST_OUTCOME.warnings == lines and LAST_OUTCOME.headline == "Exported Ninja.pmx"
    labels = drawn(bpy.context)
    assert all(any(w.startswith(text) for text in labels) for w in lines)
    popup = StandInPanel()
    bpy.types.SKINBRIDGE_OT_last_report.draw(popup, bpy.context)
    assert all(any(w.startswith(text) for text in popup.layout.labels) for w in lines)
