"""Convert options are declared once, by the format packages (FormatSpec.options): the command line flags, their
checks, the export operators' properties and the README table are all derived from those records, and an option
given to a target that does not take it is refused with one line before Blender loads."""
from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

import pytest

from skinbridge import cli, formats
from skinbridge.app.options import ConvertOptions

README = Path(__file__).resolve().parents[2] / "README.md"


def _convert_actions() -> dict[str, argparse.Action]:
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {a.dest: a for a in sub.choices["convert"]._actions}


def _value_of(option) -> str:
    """A value the option's flag accepts."""
    if option.choices:
        return option.values()[-1]
    if option.type in (int, float):
        return str(option.type(option.high if option.high is not None else 1))
    return "x.json" if option.path else "x"


def test_every_target_option_is_a_convert_flag_with_its_checks():
    actions = _convert_actions()
    takers = formats.option_takers()
    assert {"profile", "max_bones", "deform_only", "ani_format", "mmd_rig", "bone_map", "arm_angle", "units_per_metre",
            "skeleton", "limit_weights"} <= set(takers)
    for name, (option, targets) in takers.items():
        action = actions[name]
        assert action.option_strings == _flags(option)
        assert action.default is argparse.SUPPRESS  # not given: absent, so only what was given is refused
        assert action.help == formats.option_help(name)
        assert action.help.startswith(" or ".join(targets) + ": " + option.help) or ";" in action.help
        if option.type is bool:
            assert action.nargs == 0
        elif option.choices:
            assert list(action.choices) == list(option.values())
        elif option.type in (int, float):
            assert action.type(str(option.low)) == option.low and action.type(str(option.high)) == option.high
            for outside in (option.low - 1, option.high + 1):
                with pytest.raises(argparse.ArgumentTypeError, match="is outside"):
                    action.type(str(outside))


def _flags(option) -> list[str]:
    """The flags argparse gives an option: its own, its --no- form when it is on by default, and its aliases."""
    names = [option.cli_flag] + ["--" + a.replace("_", "-") for a in option.aliases]
    if option.type is bool and option.default:
        return [f for n in names for f in (n, "--no-" + n[2:])]
    return names


@pytest.fixture
def probe_target():
    """A target of this test's own with a switch that is on by default, an option renamed (its old flag an
    alias) and a choice of Blender's export alone."""
    from skinbridge.core.formatspec import FormatSpec, Option

    spec = formats.register(FormatSpec(
        name="probe", label="Probe", kind="model", extensions=(".probe",), target="probe",
        options=(Option("probe_flex", bool, True, help="write the shapes"),
                 Option("probe_units_per_metre", float, 10.0, low=1, high=100, aliases=("probe_scale",),
                        help="units per metre"),
                 Option("probe_bake", bool, False, blender_only=True, help="bake what Blender plays"))))
    yield spec
    formats.unregister("probe")


def test_switches_on_by_default_have_a_no_form_and_aliases_their_flags(probe_target):
    actions = _convert_actions()
    assert actions["probe_flex"].option_strings == ["--probe-flex", "--no-probe-flex"]
    assert actions["probe_units_per_metre"].option_strings == ["--probe-units-per-metre", "--probe-scale"]
    parser = cli.build_parser()
    args = parser.parse_args(["convert", "a.glb", "--to", "probe", "--no-probe-flex", "--probe-scale", "20"])
    assert (args.probe_flex, args.probe_units_per_metre) == (False, 20.0)
    assert ConvertOptions(target="probe", probe_scale=30.0).probe_units_per_metre == 30.0
    table = formats.options_table()
    assert "`--probe-flex` / `--no-probe-flex`" in table and "(or `--probe-scale`)" in table
    assert "`convert` refuses it" in table


def test_a_blender_only_option_is_refused_in_one_line_before_blender_loads(probe_target, capsys):
    assert cli.main(["convert", "Fox.glb", "--to", "probe", "--probe-bake"]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "error: --probe-bake is a choice of Blender's File › Export only (--to probe writes without it)"]


def test_flags_of_other_targets_are_not_hand_written_in_cli():
    text = (Path(cli.__file__)).read_text(encoding="utf-8")
    for name, (option, _) in formats.option_takers().items():
        assert f'"{option.cli_flag}"' not in text, f"{option.cli_flag} is spelled in cli.py"


def test_readme_table_is_the_generated_one():
    text = README.read_text(encoding="utf-8")
    found = re.search(r"<!-- options:begin -->\n(.*?)<!-- options:end -->", text, re.S)
    assert found, "README.md has no options markers"
    assert found.group(1) == formats.options_table()
    for option, _ in formats.option_takers().values():
        assert f"`{option.cli_flag}" in found.group(1)


def _foreign(target: str) -> list[tuple[str, list[str], str]]:
    """(flag, its arguments, a target that takes it) for every option `target` does not take."""
    out = []
    for option, takers in formats.option_takers().values():
        if target not in takers:
            value = [] if option.type is bool else [_value_of(option)]
            out.append((option.cli_flag, value, takers[0]))
    return out


def test_pmx_refuses_every_option_of_another_target(capsys):
    foreign = _foreign("pmx")
    assert {f for f, _, _ in foreign} >= {"--profile", "--max-bones", "--deform-only", "--ani-format"}
    for flag, value, owner in foreign:
        code = cli.main(["convert", "Fox.glb", "--to", "pmx", flag, *value])
        err = capsys.readouterr().err.strip().splitlines()
        assert code == 2, flag
        assert err == [f"error: {flag} applies to --to {owner} only, not --to pmx"], (flag, err)


def test_a_foreign_option_at_its_default_value_is_refused(capsys):
    for option, takers in formats.option_takers().values():
        if option.type is bool or option.default is None:
            continue
        other = next(t for t in formats.targets() if t not in takers)
        code = cli.main(["convert", "Fox.glb", "--to", other, option.cli_flag, str(option.default)])
        assert code == 2
        assert capsys.readouterr().err.strip().splitlines() == [
            f"error: {option.cli_flag} applies to --to {' or '.join(takers)} only, not --to {other}"]


def test_refusal_happens_before_blender_loads():
    code = ("import sys\nfrom skinbridge import cli\n"
            "r = cli.main(['convert', 'Fox.glb', '--to', 'pmx', '--profile', 'urhox'])\n"
            "print(r, 'bpy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.split() == ["2", "False"], out.stderr


def test_convert_options_are_filled_from_the_target_specs():
    o = ConvertOptions(target="urhox")
    assert (o.profile, o.max_bones, o.deform_only, o.ani_format) == ("urhox", 64, False, "urhox")
    assert ConvertOptions(target="urhox", profile="urho3d").ani_format == "urho3d"  # follows the profile
    assert ConvertOptions(target="urhox", profile="urho3d", ani_format="urhox").ani_format == "urhox"
    pmx = ConvertOptions(target="pmx", bone_map="map.json")
    assert (pmx.mmd_rig, pmx.arm_angle, pmx.units_per_metre) == (False, 0.0, None)
    assert pmx.given_paths() == ["map.json"]
    with pytest.raises(AttributeError, match="max_bones"):
        pmx.max_bones  # noqa: B018  (a reader of an option its target does not declare)
    with pytest.raises(TypeError, match="no target takes"):
        ConvertOptions(target="pmx", frobnicate=1)


@pytest.mark.blender
def test_export_operator_properties_are_the_option_records(addon):
    """Through the session's add-on (the `addon` fixture): registering the operators here as well left the
    fixture's own registration refused in the same process."""
    bpy = pytest.importorskip("bpy")

    def properties(idname: str):
        group, _, name = idname.partition(".")
        rna = getattr(getattr(bpy.ops, group), name).get_rna_type()
        return rna, {p.identifier: p for p in rna.properties}

    for target, spec in formats.targets().items():
        rna, _ = properties(spec.export_operator)
        module = getattr(bpy.types, rna.identifier).__module__
        merged: dict = {}
        for other in formats.all_specs():  # the package's export operators together (UrhoX: model and .ani)
            if other.export_operator and not other.foreign_operators:
                other_rna, props = properties(other.export_operator)
                if getattr(bpy.types, other_rna.identifier).__module__ == module:
                    merged.update(props)
        merged.update(properties(spec.export_operator)[1])  # the target's own operator first
        for o in spec.options:  # a reading option is the import operator's (io_mdb's --skeleton-path)
            p = (properties(spec.import_operator)[1] if o.reading else merged).get(o.name)
            assert p is not None, f"{target}: no operator property {o.name}"
            default = o.default if o.default is not None else o.ui_default
            if o.type is bool:
                assert p.type == "BOOLEAN" and p.default == bool(default)
            elif o.choices:
                assert p.type == "ENUM" and [i.identifier for i in p.enum_items] == list(o.values())
                assert p.default == default
            elif o.type is str:
                assert p.type == "STRING" and p.default == (default or "")
                assert (p.subtype == "FILE_PATH") == o.path
            else:
                assert p.type == ("INT" if o.type is int else "FLOAT")
                assert p.default == pytest.approx(default)
                assert (p.hard_min, p.hard_max) == pytest.approx((o.low, o.high))
            assert o.help[1:] in p.description
    _, pmx_import = properties("import_scene.skinbridge_pmx")
    assert pmx_import["metres_per_unit"].default == pytest.approx(0.08)  # inward: metres per MMD unit
    assert pmx_import["scale"].is_hidden  # its earlier id (MMD units per metre, the inverse) for scripts


@pytest.mark.parametrize("content,what", [(None, "no such file"), (b"{not json", "not a UTF-8 JSON file"),
                                          (b'["a list"]', "--bone-map"),
                                          (b'{"a":' * 100_000 + b"1" + b"}" * 100_000, "nested 100000 levels deep")])
def test_a_bone_map_is_read_whenever_given(tmp_path, capsys, content, what):
    """Without --mmd-rig too: a missing or invalid --bone-map file is a usage error (exit 2, one line) before
    any input is converted, not ignored; nesting deep enough for a RecursionError is refused the same way (issue 45,
    fault 12)."""
    bone_map = tmp_path / "map.json"
    if content is not None:
        bone_map.write_bytes(content)
    out = tmp_path / "out"
    code = cli.main(["convert", "Fox.glb", "--to", "pmx", "-o", str(out), "--bone-map", str(bone_map)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and err[0].startswith("error: ") and what.lower() in err[0].lower(), err
    assert str(bone_map) in err[0] and not out.exists()


@pytest.mark.parametrize("frames", ["a:b", "1:x:2", "1,two", "1:2:3:4"])
def test_render_frames_that_are_not_integers_name_the_option_and_its_form(testdata, tmp_path, capsys, frames):
    code = cli.main(["render", str(testdata / "urho3d" / "Box.mdl"), "--frames", frames,
                     "-o", str(tmp_path / "s.png")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1, err
    assert err[0].startswith("error: --frames") and "A:B" in err[0] and "invalid literal" not in err[0]
    assert list(tmp_path.iterdir()) == []


def test_the_registrys_blender_only_options_are_refused_by_convert(capsys):
    """VMD's bake and Wallpaper Engine's project_files are File › Export's alone: where a target declares such an
    option, `convert` names it and refuses in one line."""
    blender_only = [(o, takers) for o, takers in formats.option_takers().values() if o.blender_only]
    assert [o.name for o, _ in blender_only] == ["project_files"]
    assert any(o.name == "bake" and o.blender_only for o in formats.get("vmd").options)
    for option, takers in blender_only:
        assert cli.main(["convert", "Fox.glb", "--to", takers[0], option.cli_flag]) == 2
        assert capsys.readouterr().err.strip().splitlines() == [
            f"error: {option.cli_flag} is a choice of Blender's File › Export only (--to {takers[0]} writes "
            "without it)"]
