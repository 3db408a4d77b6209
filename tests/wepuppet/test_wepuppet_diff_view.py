"""Issue 49: what `skinbridge diff` compares of two `.mdl` files (`check.diff_view`), so that the edit campaign
(docs/testing.md §6) can tell an edit from the rest: a clip's samples are one array per bone named as Blender names
the bone, a clip made longer adds rows, bones without a name are named as import names them, and the zero
padding is the size it pads the file to (the same when the model shrinks)."""
from __future__ import annotations

import copy

import numpy as np

from skinbridge.core.diff import diff_records
from skinbridge.io_wepuppet.puppet import check, mdl

GOOSE = "blacryu_goose_t_puppet.mdl"
HOOD = "blacryu_d2r_Hood_puppet.mdl"


def _diff(a: mdl.Model, b: mdl.Model):
    """The differences of `a` and `b` written as our writer writes them: padded to the file's size."""
    b.pad_to, b.tail = len(a.tail) + a.offsets["tail"], b""
    da, db = mdl.write(a), mdl.write(b)
    return diff_records(check.diff_view(mdl.read(da)), check.diff_view(mdl.read(db)), da, db, None).differences


def test_a_sample_is_named_after_its_bone_and_a_longer_clip_adds_rows(testdata):
    m = mdl.read((testdata / "wepuppet" / GOOSE).read_bytes())
    edited = copy.deepcopy(m)
    clip = edited.animations.clips[0]
    clip.samples = np.concatenate([clip.samples, clip.samples[:, -1:]], axis=1)
    clip.samples[1, 15, 0] += 10
    clip.length += 1
    found = sorted((d.record, d.field) for d in _diff(m, edited))
    clip = "sections[1].body.clips[0] (Animation 1)"
    assert found == sorted([(clip, "length"), (f"{clip}.bones[1] ({m.skeleton.bones[1].name})", "frames[15].[0]")]
                           + [(f"{clip}.bones[{i}] ({b.name})", "frames.count")
                              for i, b in enumerate(m.skeleton.bones)])


def test_bones_without_a_name_are_named_as_import_names_them(testdata):
    m = mdl.read((testdata / "wepuppet" / HOOD).read_bytes())
    assert m.skeleton.bones[1].name == ""
    edited = copy.deepcopy(m)
    edited.skeleton.bones[1].name = "bone_1_renamed"
    assert [(d.record, d.field, d.value_a, d.value_b) for d in _diff(m, edited)] == [
        ("sections[0].body.bones[1] (bone_1)", "name", "bone_1", "bone_1_renamed"),
        ("sections[0].body.bones[1] (bone_1)", "file name", "", "bone_1_renamed")] + [
        (f"sections[1].body.clips[{k}] ({c.name}).bones[1] (bone_1)", "name", "bone_1", "bone_1_renamed")
        for k, c in enumerate(m.animations.clips)]  # its tracks, named after it


def test_padding_is_the_size_it_pads_to(testdata):
    data = (testdata / "wepuppet" / GOOSE).read_bytes()
    m = mdl.read(data)
    assert len(data) == 1 << 20 and check.diff_view(m)["padding"] == {"zeros to size": 1 << 20}
    edited = copy.deepcopy(m)
    edited.meshes[0].indices = edited.meshes[0].indices[3:]  # one triangle fewer: more padding, the same size
    assert not [d for d in _diff(m, edited) if "padding" in d.record + d.field]
