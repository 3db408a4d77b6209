"""`skinbridge check-target FILE --to TARGET` (README "check-target", docs/blender.md §10): on one sample of
each family of ../shared/testdata that a model format imports, for every target, its exit status, its
warning and error lines and the files it says it writes equal those of a real `convert` of the same file, and it
writes nothing.

The samples, one per family (the smallest with a skeleton where the family has one, to keep the module under a
minute): gltf/Fox.glb, urho3d/Ninja.mdl, pmx/babylonmmd_constraint_test.pmx, mdb/ovr_P_HFM_Hair89.MDB,
gr2/ovr_P_HEF_head83.MDB (an NWN2 head beside its GR2 skeleton), smd/bst_Cube_Armature_ref.smd,
dmx/bst_Curve_Armature_BezierCurve.dmx, qc/health_charger001/health_charger001.qc and
wepuppet/blacryu_goose_t_puppet.mdl."""
from __future__ import annotations

import os

import pytest

pytest.importorskip("bpy")

from skinbridge import cli, formats  # noqa: E402  (after the bpy check: the command loads Blender)

pytestmark = [pytest.mark.blender, pytest.mark.slow]

SAMPLES = ["gltf/Fox.glb", "urho3d/Ninja.mdl", "pmx/babylonmmd_constraint_test.pmx", "mdb/ovr_P_HFM_Hair89.MDB",
           "gr2/ovr_P_HEF_head83.MDB", "smd/bst_Cube_Armature_ref.smd", "dmx/bst_Curve_Armature_BezierCurve.dmx",
           "qc/health_charger001/health_charger001.qc", "wepuppet/blacryu_goose_t_puppet.mdl"]


def _run(capfd, *args: str) -> tuple[int, list[str], list[str]]:
    code = cli.main([str(a) for a in args])
    out, err = capfd.readouterr()
    return code, out.splitlines(), err.splitlines()


def _files(folder: str) -> list[str]:
    out = []
    for root, _, names in os.walk(folder):
        out += [os.path.relpath(os.path.join(root, n), folder).replace(os.sep, "/") for n in names]
    return sorted(out)


@pytest.mark.parametrize("sample", SAMPLES)
def test_check_target_says_what_convert_does(addon, testdata, tmp_path, capfd, sample):
    src = testdata / sample
    before = sorted(os.listdir(src.parent))
    for target in formats.targets():
        out = tmp_path / target
        code, written, err = _run(capfd, "convert", src, "--to", target, "-o", out)
        said = [line for line in err if line.startswith(("warning: ", "error: "))]
        checked, lines, _ = _run(capfd, "check-target", src, "--to", target)
        assert checked == code, (target, lines, said)
        assert [line for line in lines if not line.startswith("writes: ")] == said, target
        assert [line[len("writes: "):] for line in lines if line.startswith("writes: ")] == (
            sorted(os.path.relpath(p, out).replace(os.sep, "/") for p in written)), target
        assert sorted(os.listdir(src.parent)) == before  # nothing written beside the input
    assert sorted(os.listdir(tmp_path)) == sorted(t for t in formats.targets() if (tmp_path / t).exists())


def test_check_target_refuses_an_option_of_another_target(addon, testdata, capfd):
    code, lines, err = _run(capfd, "check-target", testdata / "gltf/Fox.glb", "--to", "pmx", "--max-bones", "32")
    assert code == 2 and lines == []
    assert err == ["error: --max-bones applies to --to urhox only, not --to pmx"]


def test_check_target_takes_the_targets_options(addon, testdata, capfd):
    """A skinned NWN2 model names its GR2 skeleton: without --skeleton the MDB export of Fox refuses, with it the
    export writes Fox.mdb."""
    fox = testdata / "gltf/Fox.glb"
    code, lines, _ = _run(capfd, "check-target", fox, "--to", "mdb")
    assert code == 1 and len(lines) == 1 and "--skeleton NAME" in lines[0]
    code, lines, _ = _run(capfd, "check-target", fox, "--to", "mdb", "--skeleton", "P_HHM_skel")
    assert code == 0 and lines == ["writes: Fox.mdb"], lines
