"""The format registry: a format defined in one file alone (tests/support/registry_toy.py: a 16-byte magic, a
one-bone model, a codec of a few lines) is registered in-process and every part of SkinBridge that lists formats
handles it: the command line (`info`, `check`, `convert --to toy`, `compare`), the File › Import / Export
operators, the drag-and-drop handler, the hostile suite's generators and the fuzz target. And the content of a
file decides its format: two files both named `x.mdl` go to different formats; `X.MDB` and `x.mdb` to the same.
"""
from __future__ import annotations

import json
import random
import shutil

import pytest

from skinbridge import formats
from skinbridge.core.errors import FormatError
from skinbridge.core.formatspec import FormatSpec
from support.registry_toy import MAGIC, MDLV_64, TOY, cli, quad, toy_write

@pytest.fixture
def toy_file(tmp_path):
    path = tmp_path / "quad.toy"
    path.write_bytes(toy_write(quad()))
    return path


@pytest.fixture
def toy_registered():
    formats.register(TOY)
    yield TOY
    formats.unregister("toy")


# -- without Blender -------------------------------------------------------------------------------------------

def test_toy_through_info_check_and_compare(toy_registered, toy_file, tmp_path, capsys):
    code, out, _ = cli(capsys, "info", toy_file)
    assert code == 0 and json.loads(out)["vertices"] == 4 and json.loads(out)["triangles"] == 2
    code, out, _ = cli(capsys, "check", toy_file)
    assert code == 0 and "roundtrip: identical" in out
    same = tmp_path / "same.toy"
    shutil.copy(toy_file, same)
    code, out, _ = cli(capsys, "compare", toy_file, same, "--rest")
    assert code == 0, out
    moved = quad()
    moved.positions[2, 2] += 0.5
    other = tmp_path / "moved.toy"
    other.write_bytes(toy_write(moved))
    code, out, _ = cli(capsys, "compare", toy_file, other, "--rest")
    assert code == 1 and "difference" in out


def test_the_registry_is_code_only(toy_registered):
    assert formats.get("toy") is TOY
    assert formats.identify(MAGIC + bytes(8), "anything.bin") is TOY
    assert "toy" in formats.targets()
    formats.unregister("toy")
    with pytest.raises(FormatError, match="SKINBRIDGE-TOY"):
        formats.identify(MAGIC + bytes(8), "quad.toy")
    formats.register(TOY)


def test_toy_through_the_hostile_generators_and_the_fuzz_target(toy_registered, toy_file, monkeypatch):
    from support.hostile import hostile_registry
    from support.hostile.hostile_cases import exercise, generic_cases, problems

    monkeypatch.setattr(hostile_registry, "_testdata_of", lambda spec: [("quad", toy_file.read_bytes())])
    codec = hostile_registry.codec_for(TOY)
    cases = generic_cases(codec)
    assert len(cases) > 50
    for case in cases:
        out = exercise(codec, case.data)  # a crash (anything but FormatError) raises here
        assert not problems(case, out, has_semantic=True), case.name
    rng = random.Random(7)
    seed = bytearray(toy_file.read_bytes())
    rejected = 0
    for _ in range(2000):  # the fuzz target, in-process
        data = bytearray(seed)
        for _ in range(rng.randint(1, 4)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        if rng.random() < 0.3:
            data = data[: rng.randrange(len(data))]
        rejected += exercise(codec, bytes(data)).rejected is not None
    assert rejected > 0


# -- content decides -------------------------------------------------------------------------------------------

def test_two_files_named_x_mdl_go_to_their_own_formats(tmp_path, testdata):
    umd2_dir, we_dir = tmp_path / "a", tmp_path / "b"
    umd2_dir.mkdir()
    we_dir.mkdir()
    shutil.copy(testdata / "urho3d" / "Box.mdl", umd2_dir / "x.mdl")
    (we_dir / "x.mdl").write_bytes(MDLV_64)
    assert formats.identify_file(umd2_dir / "x.mdl").name == "umd2"
    puppet = formats.identify_file(we_dir / "x.mdl")
    assert puppet.name != "umd2" and ".mdl" in puppet.extensions


def test_an_mdlv_file_never_reaches_the_urhox_reader(tmp_path, capsys, monkeypatch):
    """With no puppet format registered: one line naming MDLV0013 and .mdl from info, check, convert, render
    and compare, and the UrhoX reader is never called."""
    from skinbridge.io_urhox.model import umd2

    path = tmp_path / "x.mdl"
    path.write_bytes(MDLV_64)
    for spec in [s for s in formats.all_specs() if s.sniff is not None and s.sniff(MDLV_64)]:
        monkeypatch.setattr(formats, "_SPECS", {k: v for k, v in formats._SPECS.items() if v is not spec})

    def never(*args, **kwargs):
        raise AssertionError("the UrhoX reader was called")

    monkeypatch.setattr(umd2, "read", never)
    for args in (("info", path), ("check", path), ("compare", path, path, "--rest")):
        code, out, err = cli(capsys, *args)
        text = out + err
        assert code != 0 and "MDLV0013" in text and ".mdl" in text and "Traceback" not in text, (args, text)


def test_upper_and_lower_case_extensions_get_the_same_spec(tmp_path, testdata):
    source = sorted((testdata / "mdb").iterdir())[0]
    upper, lower = tmp_path / "X.MDB", tmp_path / "y.mdb"
    shutil.copy(source, upper)
    shutil.copy(source, lower)
    assert formats.identify_file(upper) is formats.identify_file(lower)
    # and where content says nothing, the extension decides without regard to case
    silent = FormatSpec(name="silent", label="Silent", kind="model", extensions=(".zzq",))
    formats.register(silent)
    try:
        assert formats.identify(b"\0" * 64, "A.ZZQ") is silent
        assert formats.identify(b"\0" * 64, "a.zzq") is silent
    finally:
        formats.unregister("silent")


def test_unknown_content_names_its_extension_and_first_bytes():
    with pytest.raises(FormatError) as e:
        formats.identify(b"\x89WHAT\x00\x01\x02" + bytes(60), "thing.Bin")
    assert ".bin" in str(e.value) and "89 57 48 41 54" in str(e.value)
