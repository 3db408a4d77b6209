"""Untrusted inputs (issue 28): special files through the one guarded reader (core/fileio.py), glTF files
checked before Blender's importer sees them, missing textures never written as placeholders, names that are not
valid in their format's encoding."""
from __future__ import annotations

import os
import pathlib
import time

import pytest
import untrusted_files as u
from conftest import run_cli

from skinbridge.core.errors import FormatError
from skinbridge.core.fileio import read_bytes, read_head
from skinbridge.formats import identify_file


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
@pytest.mark.parametrize("command,status", [("info", 1), ("check", 2), ("convert", 1)])
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
    _refused_at_once(["render", fifo, "-o", tmp_path / "r.png"], 2, tmp_path)
    _refused_at_once(["compare", gltf, fifo], 2, tmp_path)
