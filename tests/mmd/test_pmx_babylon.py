"""An independent reader: babylon-mmd 1.3.0 (npm, installed by tools/run into tools/node_modules) parses the files
our writer produced, with no warnings and the same counts; and agrees with our reader on the real samples.
How to run it in Node 20: docs/mmd.md §7."""
from __future__ import annotations

import numpy as np
import pytest

from skinbridge.io_pmx.model import pmx
from support.babylon import babylon_parse
from support.pmx_samples import SAMPLES, build_full_model


def expected_counts(m: pmx.PmxModel) -> dict:
    return {
        "vertices": len(m.vertices), "indices": len(m.indices), "textures": len(m.textures),
        "materials": len(m.materials), "bones": len(m.bones), "morphs": len(m.morphs),
        "displayFrames": len(m.display_frames), "rigidBodies": len(m.rigid_bodies), "joints": len(m.joints),
        "softBodies": len(m.soft_bodies),
        "deformTypes": np.bincount(m.vertices["deform"], minlength=5).tolist(),
        "morphTypes": [mo.kind for mo in m.morphs], "jointTypes": [j.kind for j in m.joints],
        "boneNames": [b.name for b in m.bones], "boneFlags": [int(b.flags) for b in m.bones],
        "softBodyAnchors": [len(s.anchors) for s in m.soft_bodies],
        "softBodyPins": [len(s.pins) for s in m.soft_bodies],
    }


def test_babylon_parses_what_we_write(tmp_path):
    models = {
        "full21_utf16.pmx": build_full_model(pmx.ENCODING_UTF16),
        "full21_utf8.pmx": build_full_model(pmx.ENCODING_UTF8),
        "full20_utf16.pmx": build_full_model(pmx21=False),
    }
    for name, model in models.items():
        (tmp_path / name).write_bytes(pmx.write(model))
    results = babylon_parse([tmp_path / name for name in models])
    for name, model in models.items():
        r = results[str(tmp_path / name)]
        assert "error" not in r, f"{name}: {r.get('error')}"
        assert r["warnings"] == [], name
        assert {k: r[k] for k in expected_counts(model)} == expected_counts(model), name
        assert r["encoding"] == model.encoding
        assert r["additionalVec4Count"] == 2
        assert r["version"] == pytest.approx(2.1 if name.startswith("full21") else 2.0, abs=1e-6)
        (ik,) = r["ik"]
        assert (ik["bone"], ik["target"], ik["iteration"]) == ("左足ＩＫ", 3, 40)
        knee, thigh = ik["links"]
        assert knee["bone"] == 2 and thigh == {"bone": 1, "lower": None, "upper": None}
        np.testing.assert_array_equal(np.float32(knee["lower"]), np.float32([-np.pi, 0, 0]))
        np.testing.assert_array_equal(np.float32(knee["upper"]), np.float32([-0.0087266, 0, 0]))
    full = results[str(tmp_path / "full21_utf16.pmx")]
    assert full["deformTypes"] == [2, 2, 2, 2, 2]  # BDEF1, BDEF2, BDEF4, SDEF, QDEF
    assert sorted(full["morphTypes"]) == list(range(11))  # group ... impulse
    assert (full["softBodies"], full["softBodyAnchors"], full["softBodyPins"]) == (1, [2], [3])


def test_babylon_agrees_with_our_reader_on_the_samples(testdata, tmp_path):
    paths = []
    for name in SAMPLES:
        written = tmp_path / name  # what our writer produces from what our reader kept
        written.write_bytes(pmx.write(pmx.read_file(testdata / "pmx" / name)))
        paths += [testdata / "pmx" / name, written]
    results = babylon_parse(paths)
    for name in SAMPLES:
        ours = expected_counts(pmx.read_file(testdata / "pmx" / name))
        for path in (testdata / "pmx" / name, tmp_path / name):
            r = results[str(path)]
            assert "error" not in r and r["warnings"] == [], path
            assert {k: r[k] for k in ours} == ours, path
