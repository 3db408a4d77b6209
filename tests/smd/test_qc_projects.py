"""A QC project's text edited where the scene changed its sequences, every other character kept (no Blender)."""
from __future__ import annotations

from skinbridge.io_smd.qc import qc

TEXT = """// a header comment
$modelname "x/y.mdl"
$sequence "idle" "idle.smd" fps 24 loop
$sequence walk {
\t"walk.smd"
\tFPS 30 // its own comment
\tactivity ACT_WALK 1
}
$Sequence run "run" activity ACT_RUN 1
$sequence "fps" "still.smd"
$collisionmodel "phys.smd" { $mass 3 }
"""


def test_nothing_changed_is_the_same_text():
    assert qc.edit_sequences(TEXT, "m.qc", {}, {}, set()) == TEXT


def test_rename_rate_remove_and_add_touch_only_their_tokens():
    out = qc.edit_sequences(TEXT, "m.qc", {"idle": "rest", "fps": "hold"}, {"walk": 60.0, "run": 23.976, "fps": 25},
                            set(), ['$sequence "new" "new.smd" fps 30'])
    expected = TEXT.replace('"idle" "idle.smd"', '"rest" "idle.smd"').replace("FPS 30", "FPS 60")
    expected = expected.replace('run "run" activity ACT_RUN 1', 'run "run" activity ACT_RUN 1 fps 23.976')
    expected = expected.replace('"fps" "still.smd"', '"hold" "still.smd" fps 25')  # a sequence named fps
    expected = expected.replace('still.smd" fps 25\n', 'still.smd" fps 25\n$sequence "new" "new.smd" fps 30\n')
    assert out == expected


def test_a_removed_sequence_takes_its_lines_and_block():
    out = qc.edit_sequences(TEXT, "m.qc", {}, {}, {"walk", "idle"})
    start = TEXT.index("$sequence walk")
    end = TEXT.index("}\n", start) + 2
    assert out == TEXT[:start].replace('$sequence "idle" "idle.smd" fps 24 loop\n', "") + TEXT[end:]


def test_added_sequences_end_a_file_without_any():
    text = '$modelname "a.mdl"\n$body b "b.smd"'  # no line end at the end
    assert qc.edit_sequences(text, "m.qc", {}, {}, set(), ["$sequence a a.smd fps 30"]) == \
        text + "\n$sequence a a.smd fps 30\n"


def test_command_spans_are_their_text():
    cmds = qc.commands(TEXT, "m.qc")
    assert TEXT[cmds[3].start:cmds[3].end] == '$Sequence run "run" activity ACT_RUN 1'
    walk = cmds[2]
    assert TEXT[walk.start:walk.end] == TEXT[TEXT.index("$sequence walk"):TEXT.index("}\n") + 1]
    assert [TEXT[a:b] for a, b in cmds[1].arg_spans] == ['"idle"', '"idle.smd"', "fps", "24", "loop"]
