"""Untrusted inputs (issue 28): special files through the one guarded reader (core/fileio.py), glTF files
checked before Blender's importer sees them, missing textures never written as placeholders, names that are not
valid in their format's encoding."""
from __future__ import annotations

import os
import pathlib
import resource
import subprocess
import sys
import time

import pytest
from support import untrusted_files as u
from conftest import run_cli

from skinbridge.core.errors import FormatError
from skinbridge.core.fileio import read_bytes, read_head
from skinbridge.formats import identify_file
from skinbridge.io_gltf.untrusted import checked_copy
from skinbridge.io_pmx.model import pmx


# -- 3: special files ------------------------------------------------------------------------------------------

@pytest.fixture
def fifo(tmp_path) -> pathlib.Path:
    path = tmp_path / "p.mdl"
    os.mkfifo(path)
    return path


def test_a_fifo_is_refused_by_type_without_blocking(fifo):
    for read in (read_bytes, lambda p: read_head(p, 16), identify_file):
        with pytest.raises(FormatError, match="pipe .FIFO., not a regular file"):
            read(fifo)


def test_a_pipe_given_as_dev_fd_is_refused_as_not_a_regular_file():
    r, w = os.pipe()
    try:
        os.write(w, b"UMD2" + b"\0" * 100)
        with pytest.raises(FormatError, match="not a regular file"):
            read_bytes(f"/dev/fd/{r}")
    finally:
        os.close(r)
        os.close(w)


def test_devices_are_refused_and_folders_named():
    with pytest.raises(FormatError, match="character device"):
        read_bytes("/dev/zero")
    with pytest.raises(IsADirectoryError, match="is a folder"):
        read_bytes("/tmp")


def test_the_cap_counts_bytes_read_when_the_size_reads_as_zero():
    assert os.path.getsize("/proc/self/status") == 0
    with pytest.raises(FormatError, match="above the 64-byte limit"):
        read_bytes("/proc/self/status", 64)
    assert len(read_bytes("/proc/self/status", 1 << 20)) > 64


def test_a_file_at_the_cap_is_read_and_one_byte_more_is_refused(tmp_path):
    path = tmp_path / "x.bin"
    path.write_bytes(b"a" * 100)
    assert read_bytes(path, 100) == b"a" * 100
    with pytest.raises(FormatError, match="100 bytes.*above the 99-byte limit"):
        read_bytes(path, 99)


def _refused_at_once(args, status: int, tmp_path) -> None:
    before = sorted(tmp_path.rglob("*"))
    t = time.monotonic()
    r = run_cli(*args, timeout=60)
    assert time.monotonic() - t < 30
    assert r.returncode == status, r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.startswith("error:")]
    assert len(lines) == 1 and "not a regular file" in lines[0], r.stderr
    assert "Traceback" not in r.stderr
    assert sorted(tmp_path.rglob("*")) == before  # nothing written


@pytest.mark.blender
@pytest.mark.parametrize("command,status", [("info", 1), ("check", 1), ("convert", 1)])
def test_cli_refuses_a_fifo_at_once(command, status, fifo, tmp_path):
    extra = ["--to", "pmx", "-o", tmp_path / "out"] if command == "convert" else []
    _refused_at_once([command, fifo, *extra], status, tmp_path)


@pytest.mark.blender
def test_cli_refuses_a_fifo_motion_render_and_compare(fifo, tmp_path):
    model = tmp_path / "m"
    model.mkdir()
    (model / "b.bin").write_bytes(u.triangle_buffer())
    gltf = u.write_gltf(model / "ok.gltf", u.gltf_doc("b.bin"))
    _refused_at_once(["convert", gltf, "--motion", fifo, "--to", "urhox", "-o", tmp_path / "out"], 1, tmp_path)
    _refused_at_once(["render", fifo, "-o", tmp_path / "r.png"], 1, tmp_path)
    _refused_at_once(["compare", gltf, fifo], 1, tmp_path)


# -- 2: glTF references and limits ------------------------------------------------------------------------------

def _model_dir(tmp_path) -> pathlib.Path:
    model = tmp_path / "model"
    model.mkdir(exist_ok=True)
    (model / "b.bin").write_bytes(u.triangle_buffer())
    return model


def _hostile_gltf(case: str, model: pathlib.Path, tmp_path) -> pathlib.Path:
    leak = tmp_path / "leak"
    leak.mkdir(exist_ok=True)
    (leak / "secret.bin").write_bytes(u.triangle_buffer())
    doc = u.gltf_doc("b.bin")
    if case == "parent":
        doc["buffers"][0]["uri"] = "../leak/secret.bin"
    elif case == "absolute":
        doc["buffers"][0]["uri"] = str(leak / "secret.bin")
    elif case == "dev_zero":
        doc["buffers"][0].update(uri="/dev/zero", byteLength=1 << 40)
    elif case == "proc":
        doc["buffers"][0]["uri"] = "/proc/self/environ"
    elif case == "symlink_out":
        os.symlink(leak / "secret.bin", model / "link.bin")
        doc["buffers"][0]["uri"] = "link.bin"
    elif case == "fifo_inside":
        os.mkfifo(model / "pipe.bin")
        doc["buffers"][0]["uri"] = "pipe.bin"
    elif case == "short_buffer":
        doc["buffers"][0]["byteLength"] = 1 << 20
    elif case == "huge_count":
        doc["accessors"][0]["count"] = 10 ** 9
    elif case == "deep":
        path = model / "deep.gltf"
        path.write_text('{"asset": {"version": "2.0"}, "x": ' + "[" * 100000 + "]" * 100000 + "}")
        return path
    return u.write_gltf(model / f"{case}.gltf", doc)


@pytest.mark.parametrize("case,why", [
    ("parent", "leads out of the model's folder"), ("absolute", "an absolute path"),
    ("dev_zero", "an absolute path"), ("proc", "an absolute path"),
    ("symlink_out", "leads out of the model's folder"), ("fifo_inside", "not a regular file"),
    ("short_buffer", "declares 1048576 bytes but 'b.bin' holds 168"), ("huge_count", "need 12000000000 bytes"),
    ("deep", "nests deeper than 64 levels")])
def test_checked_copy_refuses_buffers_and_limits_in_one_line(case, why, tmp_path):
    model = _model_dir(tmp_path)
    path = _hostile_gltf(case, model, tmp_path)
    copy = tmp_path / "copy"
    copy.mkdir()
    with pytest.raises(FormatError, match=why) as e:
        checked_copy(str(path), str(copy))
    assert "\n" not in str(e.value)


@pytest.mark.blender
@pytest.mark.parametrize("case", ["parent", "dev_zero"])
def test_convert_refuses_a_buffer_outside_the_model(case, tmp_path):
    model = _model_dir(tmp_path)
    path = _hostile_gltf(case, model, tmp_path)
    out = tmp_path / "out"
    r = run_cli("convert", path, "--to", "urhox", "-o", out, timeout=60)
    assert r.returncode == 1
    errors = [ln for ln in r.stderr.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1 and "buffer URI" in errors[0] and "Traceback" not in r.stderr
    assert not out.exists()


@pytest.mark.blender
def test_an_image_outside_the_model_is_left_out_with_a_warning(tmp_path):
    model = _model_dir(tmp_path)
    (tmp_path / "leak").mkdir()
    (tmp_path / "leak" / "secret.png").write_bytes(u.png((1, 2, 3)))
    path = u.write_gltf(model / "img.gltf", u.gltf_doc("b.bin", "../leak/secret.png"))
    out = tmp_path / "out"
    r = run_cli("convert", path, "--to", "urhox", "-o", out, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "image URI '../leak/secret.png' not opened (leads out of the model's folder)" in r.stderr
    secret = (tmp_path / "leak" / "secret.png").read_bytes()
    assert all(f.read_bytes() != secret for f in out.rglob("*") if f.is_file())
    assert not (out / "Textures").exists()


@pytest.mark.blender
def test_an_importer_failure_is_one_line_naming_the_file(tmp_path):
    model = _model_dir(tmp_path)
    doc = u.gltf_doc("b.bin")
    doc["meshes"][0]["primitives"][0]["attributes"]["POSITION"] = 99  # passes the checks, breaks the importer
    path = u.write_gltf(model / "bad.gltf", doc)
    r = run_cli("convert", path, "--to", "urhox", "-o", tmp_path / "out", timeout=60)
    assert r.returncode == 1
    errors = [ln for ln in r.stderr.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1 and str(path) in errors[0], r.stderr
    assert "Location:" not in r.stderr and "Traceback" not in r.stderr


@pytest.mark.blender
def test_an_external_image_is_written_beside_the_pmx_that_references_it(tmp_path):
    model = _model_dir(tmp_path)
    (model / "tex.png").write_bytes(u.png())
    path = u.write_gltf(model / "ok.gltf", u.gltf_doc("b.bin", "tex.png"))
    out = tmp_path / "out"
    r = run_cli("convert", path, "--to", "pmx", "-o", out, timeout=60)
    assert r.returncode == 0, r.stderr
    table = pmx.read((out / "ok.pmx").read_bytes()).textures
    assert table == ["tex.png"]
    assert (out / "tex.png").read_bytes() == (model / "tex.png").read_bytes()


def _memory_capped() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (4_000_000_000, 4_000_000_000))


def _five_commands(bad, ok, tmp_path) -> list[list]:
    """Every command that reads a model, given the input `bad`."""
    return [["convert", bad, "--to", "urhox", "-o", tmp_path / "out"], ["info", bad], ["check", bad],
            ["render", bad, "-o", tmp_path / "r.png"], ["compare", bad, ok]]


@pytest.mark.blender
@pytest.mark.slow
def test_a_dev_zero_buffer_a_fifo_and_an_endless_pipe_under_a_4_gb_cap(tmp_path):
    """Issue 28's matrix: three endless inputs × convert, info, check, render and compare: each refused within
    5 s (with room for a loaded machine starting Blender), one error line, exit 1, nothing written."""
    model = _model_dir(tmp_path)
    zero = _hostile_gltf("dev_zero", model, tmp_path)
    ok = u.write_gltf(model / "ok.gltf", u.gltf_doc("b.bin"))
    fifo = tmp_path / "p.glb"
    os.mkfifo(fifo)
    cli = pathlib.Path(__file__).resolve().parents[2] / "cli.py"
    cases = [(args, None) for bad in (zero, fifo) for args in _five_commands(bad, ok, tmp_path)]
    cases += [(args, "cat /dev/zero") for args in _five_commands("/dev/fd/0", ok, tmp_path)]
    ran = []
    for args, feed in cases:
        before = sorted(tmp_path.rglob("*"))
        stdin = subprocess.Popen(feed.split(), stdout=subprocess.PIPE).stdout if feed else subprocess.DEVNULL
        t = time.monotonic()
        r = subprocess.run([sys.executable, str(cli), *map(str, args)], stdin=stdin, capture_output=True, text=True,
                           timeout=30, preexec_fn=_memory_capped)
        assert time.monotonic() - t < 5 + 5, args
        assert r.returncode == 1, (args, r.stderr)
        # one error line: on stderr, or (check of a file it could read) the one error finding of its report
        said = r.stderr.splitlines() + [ln.strip() for ln in r.stdout.splitlines()]
        assert len([ln for ln in said if ln.startswith("error:")]) == 1, (args, r.stdout, r.stderr)
        assert "Traceback" not in r.stderr
        assert sorted(tmp_path.rglob("*")) == before, args
        if feed:
            stdin.close()
        ran.append((args[0], os.path.basename(str(args[1]))))
    assert len(set(ran)) == 15


# -- 1: a texture that is not found is never written as a placeholder -----------------------------------------

@pytest.fixture
def pmx_with_missing_texture(tmp_path) -> pathlib.Path:
    """A PMX (made by our writer from a one-triangle glTF) whose texture entry is `C:\\textures\\x.png`."""
    model = _model_dir(tmp_path)
    (model / "x.png").write_bytes(u.png())
    made = tmp_path / "made"
    r = run_cli("convert", u.write_gltf(model / "m.gltf", u.gltf_doc("b.bin", "x.png")), "--to", "pmx", "-o", made,
                timeout=60)
    assert r.returncode == 0, r.stderr
    records = pmx.read((made / "m.pmx").read_bytes())
    records.textures = ["C:\\textures\\x.png"]
    src = tmp_path / "src"
    src.mkdir()
    (src / "m.pmx").write_bytes(pmx.write(records))
    return src / "m.pmx"


@pytest.mark.blender
@pytest.mark.parametrize("target", ["pmx", "urhox", "wepuppet"])
def test_a_missing_texture_never_replaces_the_users_file(target, pmx_with_missing_texture, tmp_path):
    out = tmp_path / "out"
    mine = u.png((9, 9, 9)) + b"the user's own picture"
    for folder in (out, out / "Textures", out / "materials"):
        folder.mkdir(exist_ok=True)
        (folder / "x.png").write_bytes(mine)
    r = run_cli("convert", pmx_with_missing_texture, "--to", target, "-o", out, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "x.png" not in r.stdout.replace(str(pmx_with_missing_texture), "")  # not listed as written
    for folder in (out, out / "Textures", out / "materials"):
        assert (folder / "x.png").read_bytes() == mine
    pngs = [f for f in out.rglob("*.png") if f.name != "x.png"]
    assert pngs == []  # not written under another name either
    if target == "urhox":  # the material does not reference a texture that was not written
        assert all("x.png" not in f.read_text() for f in (out / "Materials").glob("*.xml"))
    if target == "wepuppet":
        assert not list(out.rglob("*.tex"))
