"""The QC reader without Blender: the sample project's commands as its text gives them, the grammar's corners
($include, blocks on the next line, comments, $animation used by $sequence), refusals naming line and command,
the writer read back, and the rate an exported sequence is sampled at."""
from __future__ import annotations

import pathlib
import re

import numpy as np
import pytest

from skinbridge.core import model as cm
from skinbridge.core.errors import FormatError
from skinbridge.io_smd.smd import convert
from skinbridge.io_smd.qc import qc

QC_DIR = pathlib.Path(__file__).resolve().parents[2].parent / "shared" / "testdata" / "qc" / "health_charger001"
QC = QC_DIR / "health_charger001.qc"


def test_health_charger_as_its_text_says():
    text = QC.read_text()
    p = qc.read(str(QC))
    assert p.model_name == "editor/item_health_charger_hl2.mdl"
    replaced = re.findall(r'replacemodel "[^"]+" "([^"]+)"', text)
    assert [pathlib.Path(new).name for lod in p.lods for _, new in lod.replacements] == replaced
    assert [lod.threshold for lod in p.lods] == [float(x) for x in re.findall(r"\$LOD (\d+)", text)]
    studio = re.findall(r'studio "([^"]+)"', text)
    assert [(g.name, [pathlib.Path(c).name for c in g.choices]) for g in p.body_groups] == [("Body", studio)]
    assert [(s.name, [pathlib.Path(f).name for f in s.files], s.fps, s.loop) for s in p.sequences] == \
        [("idle", ["idle.smd"], 30.0, False)]  # no fps given: studiomdl's 30
    assert pathlib.Path(p.collision.file).name == "health_charger001_physics.smd" and not p.collision.joints
    assert [c.name for c in p.collision.options] == ["$mass", "$inertia", "$damping", "$rotdamping", "$rootbone"]
    assert p.cd_materials == ["models\\props_combine\\"]  # a backslash before the closing quote is no escape
    kept = [c.name for c in p.others]
    assert kept == ["$staticprop", "$surfaceprop", "$contents", "$illumposition", "$mostlyopaque", "$cbox", "$bbox"]
    assert p.others[3].args == ["0.779", "-3.793", "-0.016"] and p.others[3].line == 32
    assert any("7 command(s) kept but not interpreted" in w for w in p.warnings)
    assert len(p.files()) == 6 and all(pathlib.Path(f).is_file() for f in p.files())


def _project(tmp_path, text: str, **files: str) -> qc.QcProject:
    for name, body in {"ref.smd": "version 1\n", "walk.smd": "version 1\n", **files}.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(body)
    (tmp_path / "m.qc").write_text(text)
    return qc.read(str(tmp_path / "m.qc"))


def test_grammar_includes_animations_and_options(tmp_path):
    p = _project(tmp_path, '/* a comment\nover lines */ $include "parts/a.qci"\n'
                 '$ScALE 2.5 // trailing\n$upaxis y\n$origin 1 2 3 90\n'
                 '$definebone "root" "" 0 0 1 0 90 0 0 0 0 0 0 0\n'
                 '$animation a_walk walk fps 24 loop\n$sequence walk a_walk activity ACT_WALK 1\n'
                 '$sequence run\n{\n\t"walk.smd"\n\tfps 60\n\tevent { 1 2 }\n}\n',
                 **{"parts/a.qci": '$model "body" "ref"\n{\n flexfile "ref.vta"\n}\n', "ref.vta": "version 1\n"})
    assert p.scale == 2.5 and p.up_axis == "Y" and p.origin == (1.0, 2.0, 3.0, 90.0)
    assert [(b.name, b.parent, b.position, b.rotation) for b in p.bones] == [("root", "", (0, 0, 1), (0, 90, 0))]
    assert [(b.name, pathlib.Path(b.file).name, pathlib.Path(b.flex_file).name) for b in p.bodies] == \
        [("body", "ref.smd", "ref.vta")]
    assert len(p.includes) == 1
    seqs = {s.name: s for s in p.sequences}
    assert (seqs["a_walk"].fps, seqs["a_walk"].loop, seqs["a_walk"].animation) == (24.0, True, True)
    walk = seqs["walk"]  # through the $animation: its file, rate and loop
    assert ([pathlib.Path(f).name for f in walk.files], walk.fps, walk.loop) == (["walk.smd"], 24.0, True)
    assert walk.options == ["activity", "ACT_WALK", "1"]
    assert seqs["run"].fps == 60.0 and "event" in seqs["run"].options


@pytest.mark.parametrize("text, files, words", [
    ('$include "a.qci"\n', {"a.qci": '$include "m.qc"\n'}, ["a.qci line 1: $include", "cycle"]),
    ('$body b "../outside.smd"\n', {}, ["m.qc line 1: $body", "outside the QC's folder"]),
    ('$body b "/etc/passwd"\n', {}, ["line 1: $body", "absolute path"]),
    ('$modelname "x"\n$body b "missing"\n', {}, ["m.qc line 2: $body", "no file 'missing'"]),
    ('$modelname "x"\nstray\n', {}, ["m.qc line 2", "'stray' is not a command", "after $modelname"]),
    ('$bodygroup g\n{\n studio "ref"\n', {}, ["line 1: $bodygroup", "not closed"]),
    ('$sequence s "walk" fps fast\n', {}, ["m.qc line 1: $sequence", "'fast' is not a number"]),
    ('$sequence s "nothing"\n', {}, ["m.qc line 1: $sequence", "names no animation file"]),
    ('$upaxis w\n', {}, ["m.qc line 1: $upaxis"]),
    ('$body b "a\x00b"\n', {}, ["m.qc line 1: $body", "is no file name"]),
    ('$modelname "unclosed\n', {}, ["line 1", "not closed"]),
])
def test_bad_projects_are_refused_naming_line_and_command(tmp_path, text, files, words):
    with pytest.raises(FormatError) as e:
        _project(tmp_path, text, **files)
    for w in words:
        assert w in str(e.value), str(e.value)


def test_include_depth_is_capped(tmp_path):
    chain = {f"i{k}.qci": f'$include "i{k + 1}.qci"\n' for k in range(qc.MAX_INCLUDE_DEPTH + 1)}
    with pytest.raises(FormatError, match="nests deeper than 16"):
        _project(tmp_path, '$include "i0.qci"\n', **chain)


def test_includes_are_counted(tmp_path):
    # each level includes the next twice: 2^9 reads without the cap
    chain = {f"i{k}.qci": f'$include "i{k + 1}.qci"\n$include "i{k + 1}.qci"\n' for k in range(9)}
    with pytest.raises(FormatError, match=f"more than {qc.MAX_INCLUDES} \\$include files"):
        _project(tmp_path, '$include "i0.qci"\n', **chain, **{"i9.qci": "$scale 1\n"})


def test_written_qc_reads_back(tmp_path):
    for name in ("Fox.smd", "Fox.vta", "Run.smd", "Walk.smd"):
        (tmp_path / name).write_text("version 1\n")
    text = qc.write_text("Fox.mdl", [("Fox", "Fox.smd", "Fox.vta")],
                         [("Run", "Run.smd", 120.0, False), ("Walk", "Walk.smd", 23.976, True)], ["a note"])
    (tmp_path / "Fox.qc").write_text(text)
    p = qc.read(str(tmp_path / "Fox.qc"))
    assert text.startswith("// a note\n") and not p.others
    assert qc.write_text('a"b\nc', [], []) == "$modelname \"a'b_c\"\n"
    assert [(b.name, pathlib.Path(b.file).name, pathlib.Path(b.flex_file).name) for b in p.bodies] == \
        [("Fox", "Fox.smd", "Fox.vta")]
    assert [(s.name, s.fps, s.loop) for s in p.sequences] == [("Run", 120.0, False), ("Walk", 23.976, True)]
    rates = qc.sequence_rates(str(tmp_path))
    assert rates[str((tmp_path / "Run.smd").resolve())] == (120.0, False)


def _anim(times: list[float], length: float) -> cm.Animation:
    t = np.array(times)
    rot = np.tile([0.0, 0.0, 0.0, 1.0], (len(t), 1))
    return cm.Animation("a", length, [cm.Track("b", t, np.zeros((len(t), 3)), t, rot)])


def test_sequence_rate():
    # Run of Fox.glb: keys at 24 fps frames 0-16 and 20.8-27.8; 120 fps is the first that holds 20.8 / 24 s
    run = [k / 24 for k in range(17)] + [(20.8 + k) / 24 for k in range(8)]
    assert convert.sequence_rate(_anim(run, 27.8 / 24), 24.0) == 120.0
    assert convert.sequence_rate(_anim([0, 0.5, 1.0], 1.0), 24.0) == 24.0
    assert convert.sequence_rate(_anim([0, 0.5, 1.0], 1.0), 30.0) == 30.0  # the scene's rate first
    assert convert.sequence_rate(_anim([0, 0.1], 0.1), 24.0) == 30.0  # 2.4 frames at 24, 3 at 30
    assert convert.sequence_rate(_anim([0, 1 / 7], 1 / 7), 24.0) == 24.0  # none holds it: the scene's
    assert convert.off_frame_warning(_anim([0, 1 / 7], 1 / 7), 24.0) is not None
