"""Never lose a user's file: the output guard and the staged package writing of `convert` (core/fileio.py),
seen from the pipeline in this process and from the real command line."""
from __future__ import annotations

import hashlib
import os
import pathlib
import shutil

import pytest

from conftest import run_cli

from skinbridge.core import fileio
from skinbridge.core.fileio import OutputError, output_session, write_atomic


def snapshot(folder: pathlib.Path) -> dict[str, tuple[str, int]]:
    """Every file and folder under `folder`: content hash and inode (folders: "dir")."""
    out = {}
    for p in sorted(folder.rglob("*")):
        rel = str(p.relative_to(folder))
        out[rel] = ("dir", 0) if p.is_dir() else (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_ino)
    return out


# -- the guard and the staging, without Blender ----------------------------------------------------------------

def test_session_commits_only_when_complete_and_touches_nothing_else(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_bytes(b"user's")
    (out / "a.bin").write_bytes(b"old")
    before = snapshot(out)
    with pytest.raises(RuntimeError):
        with output_session(str(out)) as s:
            write_atomic(out / "a.bin", b"new")
            write_atomic(out / "sub" / "b.bin", b"b")
            # staged only: the targets are unchanged until the end
            assert (out / "a.bin").read_bytes() == b"old" and not (out / "sub" / "b.bin").exists()
            raise RuntimeError("late failure")
    assert snapshot(out) == before  # staged files and the folder made for them are gone
    with output_session(str(out)) as s:
        write_atomic(out / "a.bin", b"new")
        write_atomic(out / "sub" / "b.bin", b"b")
    assert s.written == [str(out / "a.bin"), str(out / "sub" / "b.bin")]
    assert (out / "a.bin").read_bytes() == b"new" and (out / "keep.txt").read_bytes() == b"user's"
    assert sorted(p.name for p in out.rglob("*")) == ["a.bin", "b.bin", "keep.txt", "sub"]


def test_a_writer_failing_half_way_through_its_pieces_leaves_nothing(tmp_path):
    """A file written as pieces (a generator): the pieces before the failure reach no target, alone or in a
    session; when all pieces come, the file is their concatenation."""
    from skinbridge.core.errors import FormatError

    def pieces(fail: bool):
        yield b"version 1\n"
        yield b"nodes\n"
        if fail:
            raise FormatError("material name cannot be written as a line", None, "material")
        yield b"end\n"

    out = tmp_path / "out"
    out.mkdir()
    (out / "a.smd").write_bytes(b"old")
    before = snapshot(out)
    with pytest.raises(FormatError):
        write_atomic(out / "a.smd", pieces(True))
    assert snapshot(out) == before
    with pytest.raises(FormatError):
        with output_session(str(out)):
            write_atomic(out / "b.smd", pieces(True))
    assert snapshot(out) == before
    write_atomic(out / "a.smd", pieces(False))
    with output_session(str(out)):
        write_atomic(out / "b.smd", pieces(False))
    assert (out / "a.smd").read_bytes() == (out / "b.smd").read_bytes() == b"version 1\nnodes\nend\n"
    assert sorted(p.name for p in out.iterdir()) == ["a.smd", "b.smd"]


def test_guard_refuses_inputs_by_path_link_and_inode_and_paths_outside(tmp_path):
    model = tmp_path / "m.bin"
    model.write_bytes(b"model")
    (tmp_path / "hard.bin").hardlink_to(model)
    (tmp_path / "soft.bin").symlink_to(model)
    folder_input = tmp_path / "tex"
    folder_input.mkdir()
    with pytest.raises(OutputError):
        with output_session(str(tmp_path)) as s:
            fileio.read_bytes(model)  # what a run reads is an input
            for target in ("m.bin", "hard.bin", "soft.bin"):
                with pytest.raises(OutputError, match="it is the input"):
                    write_atomic(tmp_path / target, b"x")
            s.protect(folder_input)
            with pytest.raises(OutputError, match="inside the input"):
                write_atomic(folder_input / "a.png", b"x")
            with pytest.raises(OutputError, match="outside the output folder"):
                write_atomic(tmp_path / ".." / "escaped.bin", b"x")
            write_atomic(tmp_path / "fine.bin", b"x")
            raise OutputError("abort")
    assert model.read_bytes() == b"model" and not (tmp_path / "fine.bin").exists()
    assert not (tmp_path.parent / "escaped.bin").exists()


def test_error_names_the_target_and_not_a_temporary_file(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_bytes(b"")
    with pytest.raises(OutputError) as e:
        write_atomic(blocker / "x.mdl", b"x")
    assert str(blocker / "x.mdl") in str(e.value) and ".part" not in str(e.value) and "Errno" not in str(e.value)
    with pytest.raises(OutputError) as e:
        write_atomic("/proc/x.mdl", b"x")
    assert "/proc/x.mdl" in str(e.value) and "skinbridge-" not in str(e.value)


# -- convert: failure at every write leaves the output folder as it was ------------------------------------------

def _motion_with_sidecar(testdata, folder: pathlib.Path) -> pathlib.Path:
    ani = folder / "Ninja_Walk.ani"
    shutil.copyfile(testdata / "urho3d" / "Ninja_Walk.ani", ani)
    (folder / "Ninja_Walk.xml").write_text('<animation><trigger time="0.5" type="String" value="Step"/>'
                                          '</animation>')
    return ani


def _convert(src, outdir, name, options):
    from skinbridge.app.pipeline import convert_file

    return convert_file(str(src), str(outdir), name, options)


CASES = {
    # Fox.glb (testdata README): one model, one embedded texture, one material, three animations
    "fox": ("gltf/Fox.glb", False, "urhox", ["Fox.mdl", "Textures/Image_0.png", "Materials/fox_material.xml",
                                             "Animations/Run.ani", "Animations/Survey.ani", "Animations/Walk.ani"]),
    # Ninja.mdl with a classic .ani and its trigger sidecar: model, materials, the animation and its sidecar
    "ninja": ("urho3d/Ninja.mdl", True, "urhox", None),
    # every other target: the same staging, whatever files the format lays out
    "fox-pmx": ("gltf/Fox.glb", False, "pmx", ["Fox.pmx", "Image_0.png", "Run.vmd", "Survey.vmd", "Walk.vmd"]),
    "fox-smd": ("gltf/Fox.glb", False, "smd", ["Fox.qc", "Fox.smd", "Run.smd", "Survey.smd", "Walk.smd"]),
    "fox-wepuppet": ("gltf/Fox.glb", False, "wepuppet", None),
    "fox-mdb": ("gltf/Fox.glb", False, "mdb", ["Fox.mdb"]),
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.blender
@pytest.mark.slow
def test_failure_at_every_write_of_convert_leaves_the_output_folder_as_it_was(case, addon, testdata, tmp_path,
                                                                                 monkeypatch):
    from skinbridge.app.options import ConvertOptions

    rel, with_motion, target, expected = CASES[case]
    src = testdata / rel
    motions = [str(_motion_with_sidecar(testdata, tmp_path))] if with_motion else []
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_bytes(b"the user's own file")
    stem = src.stem
    model_ext = {"urhox": ".mdl", "wepuppet": ".mdl"}.get(target, "." + target)
    (out / (stem + model_ext)).write_bytes(b"an older conversion")  # replaced only by a complete run
    (out / "Animations").mkdir()
    (out / "Animations" / "Old.ani").write_bytes(b"kept")

    def options():
        return ConvertOptions(target=target, ani_format="urho3d", motions=list(motions), skeleton="P_HHM_skel")

    # a clean run into a scratch folder names every write
    calls: list[str] = []
    monkeypatch.setattr(fileio, "fail_hook", calls.append)
    scratch = tmp_path / "scratch"
    written, _ = _convert(src, scratch, stem, options())
    rel_written = [os.path.relpath(p, scratch) for p in written]
    assert [os.path.relpath(p, scratch) for p in calls] == rel_written
    if expected is not None:
        assert sorted(rel_written) == sorted(expected)
    elif target == "wepuppet":
        assert len(rel_written) >= 2 and any(p.endswith(".mdl") for p in rel_written)
    else:
        assert rel_written[0] == "Ninja.mdl" and "Animations/Ninja_Walk.ani" in rel_written
        assert "Animations/Ninja_Walk.xml" in rel_written  # the trigger sidecar
        assert any(p.startswith("Materials/") for p in rel_written)
    assert sorted(str(p.relative_to(scratch)) for p in scratch.rglob("*") if p.is_file()) == sorted(rel_written)

    before = snapshot(out)
    inputs = [src, *map(pathlib.Path, motions), *(pathlib.Path(m).with_suffix(".xml") for m in motions)]
    input_state = [(hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_ino) for p in inputs]
    for n, failing in enumerate(rel_written):
        seen = []

        def fail_at(path, n=n):
            seen.append(path)
            if len(seen) == n + 1:
                raise OSError(28, "No space left on device")

        monkeypatch.setattr(fileio, "fail_hook", fail_at)
        with pytest.raises(OSError):
            _convert(src, out, stem, options())
        assert os.path.relpath(seen[-1], out) == failing
        assert snapshot(out) == before, f"failure writing {failing} changed the output folder"
        assert not list(tmp_path.glob("**/*.part"))
    assert [(hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_ino) for p in inputs] == input_state

    monkeypatch.setattr(fileio, "fail_hook", None)
    written, _ = _convert(src, out, stem, options())
    assert [os.path.relpath(p, out) for p in written] == rel_written
    assert (out / "notes.txt").read_bytes() == b"the user's own file"
    assert (out / "Animations" / "Old.ani").read_bytes() == b"kept"


@pytest.mark.blender
def test_motion_in_the_output_folder_is_never_rewritten(addon, testdata, tmp_path):
    """-o is the model's folder and the motion sits in its Animations/: the motion would be written back
    to its own path (classic → UANI v2); the run is refused and nothing changes."""
    from skinbridge.app.options import ConvertOptions

    folder = tmp_path / "pkg"
    (folder / "Animations").mkdir(parents=True)
    shutil.copyfile(testdata / "urho3d" / "Ninja.mdl", folder / "Ninja.mdl")
    motion = folder / "Animations" / "Ninja_Walk.ani"
    shutil.copyfile(testdata / "urho3d" / "Ninja_Walk.ani", motion)
    before = snapshot(folder)
    with pytest.raises((OSError, ValueError), match="Ninja_Walk.ani"):
        _convert(folder / "Ninja.mdl", folder, "Other", ConvertOptions(target="urhox", motions=[str(motion)]))
    assert snapshot(folder) == before


# -- the command line under wrong inputs, wrong values and colliding outputs ------------------------------------

def _one_error_line(r):
    lines = [ln for ln in r.stderr.splitlines() if ln.startswith(("error:", "skinbridge"))]
    assert r.returncode != 0, r.stdout + r.stderr
    assert "Traceback" not in r.stderr and "Traceback" not in r.stdout
    assert len(lines) == 1, r.stderr
    assert "Errno" not in r.stderr and ".part" not in r.stderr
    return lines[0]


@pytest.fixture
def workdir(tmp_path, testdata):
    """A user's folder: a model, a motion beside it in Animations/, a read-only VMD, and an output folder."""
    (tmp_path / "Animations").mkdir()
    shutil.copyfile(testdata / "urho3d" / "Ninja.mdl", tmp_path / "Ninja.mdl")
    shutil.copyfile(testdata / "urho3d" / "Ninja_Walk.ani", tmp_path / "Animations" / "Walk.ani")
    shutil.copyfile(testdata / "pmx" / "mlibgo_shagamu.vmd", tmp_path / "dance.vmd")
    os.chmod(tmp_path / "dance.vmd", 0o444)
    return tmp_path


def _state(folder: pathlib.Path):
    return snapshot(folder)


WRONG = {
    # command line → what the single error line names
    "convert missing input": (["convert", "{d}/missing.glb", "--to", "urhox", "-o", "{d}/out"], "missing.glb"),
    "convert folder input": (["convert", "{d}/Animations", "--to", "urhox", "-o", "{d}/out"], "is a folder"),
    "convert jobs 0": (["convert", "{d}/Ninja.mdl", "--to", "urhox", "-j", "0"], "-j/--jobs"),
    "convert jobs -1": (["convert", "{d}/Ninja.mdl", "--to", "urhox", "-j", "-1"], "-j/--jobs"),
    "convert arm angle": (["convert", "{d}/Ninja.mdl", "--to", "pmx", "--arm-angle", "1e9"], "--arm-angle"),
    "convert mmd rig to urhox": (["convert", "{d}/Ninja.mdl", "--to", "urhox", "--mmd-rig"], "--mmd-rig"),
    "convert max bones nan": (["convert", "{d}/Ninja.mdl", "--to", "urhox", "--max-bones", "nan"], "--max-bones"),
    "convert onto its input": (["convert", "{d}/Ninja.mdl", "--to", "urhox", "-o", "{d}"], "Ninja.mdl"),
    "convert motion onto itself": (["convert", "{d}/Ninja.mdl", "--motion", "{d}/Animations/Walk.ani",
                                    "--to", "urhox", "-o", "{d}", "-n", "Copy"], "Walk.ani"),
    "convert vmd onto itself": (["convert", "{d}/Ninja.mdl", "--motion", "{d}/dance.vmd", "--to", "pmx",
                                 "-o", "{d}", "-n", "dance"], "dance"),
    "convert output under a file": (["convert", "{d}/Ninja.mdl", "--to", "urhox", "-o", "{d}/Ninja.mdl/sub"],
                                    "Ninja.mdl"),
    "render onto the model": (["render", "{d}/Ninja.mdl", "-o", "{d}/Ninja.mdl"], ".png"),
    "render jpg": (["render", "{d}/Ninja.mdl", "-o", "{d}/out/x.jpg"], ".png"),
    "render frame out of range": (["render", "{d}/Ninja.mdl", "--frame", "1e9", "-o", "{d}/out/x.png"], "--frame"),
    "render folder": (["render", "{d}/Animations", "-o", "{d}/out/x.png"], "is a folder"),
    "compare tol -1": (["compare", "{d}/Ninja.mdl", "{d}/Ninja.mdl", "--tol", "-1"], "--tol"),
    "compare tol tiny": (["compare", "{d}/Ninja.mdl", "{d}/Ninja.mdl", "--tol", "1e-12"], "--tol"),
    "compare tol nan": (["compare", "{d}/Ninja.mdl", "{d}/Ninja.mdl", "--tol", "nan"], "--tol"),
    "compare missing": (["compare", "{d}/Ninja.mdl", "{d}/nothing.mdl"], "nothing.mdl"),
    "info folder": (["info", "{d}/Animations"], "is a folder"),
    "info missing": (["info", "{d}/gone.mdl"], "gone.mdl"),
    "check missing": (["check", "{d}/gone.mdl"], "gone.mdl"),
    "render missing": (["render", "{d}/gone.mdl", "-o", "{d}/out/x.png"], "gone.mdl"),
    "render views": (["render", "{d}/Ninja.mdl", "--views", "left", "-o", "{d}/out/x.png"], "left"),
    "check folder": (["check", "{d}/Animations"], "is a folder"),
    "demo under a file": (["demo", "-o", "{d}/Ninja.mdl/demo"], "Ninja.mdl"),
}


@pytest.mark.parametrize("case", sorted(WRONG))
@pytest.mark.blender
@pytest.mark.slow
def test_every_command_refuses_in_one_line_and_leaves_the_inputs(case, workdir):
    argv, named = WRONG[case]
    before = _state(workdir)
    r = run_cli(*[a.format(d=workdir) for a in argv])
    line = _one_error_line(r)
    assert named in line, line
    assert _state(workdir) == before  # inputs byte-identical (hash and inode), nothing written anywhere


@pytest.mark.blender
def test_render_never_overwrites_its_model_even_with_a_png_name(workdir):
    model = workdir / "Ninja.png"  # a model file that happens to be named .png
    shutil.copyfile(workdir / "Ninja.mdl", model)
    before = _state(workdir)
    r = run_cli("render", model, "-o", model)
    line = _one_error_line(r)
    assert "Ninja.png" in line and "input" in line
    assert _state(workdir) == before


@pytest.mark.blender
@pytest.mark.slow
def test_convert_stdout_lists_exactly_the_files_written_and_logs_go_to_stderr(testdata, tmp_path):
    out = tmp_path / "out"
    r = run_cli("convert", testdata / "gltf" / "Fox.glb", "--to", "urhox", "-o", out)
    assert r.returncode == 0, r.stderr
    listed = r.stdout.splitlines()
    on_disk = sorted(str(p) for p in out.rglob("*") if p.is_file())
    assert sorted(listed) == on_disk and len(listed) == 6
    assert "glTF import finished" in r.stderr  # Blender's glTF importer logs, kept off stdout
    # the same from -j worker processes
    r = run_cli("convert", testdata / "gltf" / "Fox.glb", testdata / "urho3d" / "Box.mdl", "--to", "urhox", "-j", "2",
                "-o", tmp_path / "jobs")
    assert r.returncode == 0, r.stderr
    assert sorted(r.stdout.splitlines()) == sorted(str(p) for p in (tmp_path / "jobs").rglob("*") if p.is_file())
    assert "glTF import finished" in r.stderr


@pytest.mark.blender
@pytest.mark.slow
def test_failed_motion_leaves_no_partial_package_and_lists_nothing(testdata, tmp_path):
    bad = tmp_path / "bad.ani"
    bad.write_bytes(b"UANI" + b"\xff" * 40)
    out = tmp_path / "out"
    r = run_cli("convert", testdata / "urho3d" / "Kachujin.mdl", "--motion", bad, "--to", "urhox", "-o", out)
    line = _one_error_line(r)
    assert "bad.ani" in line
    assert r.stdout == "" and not out.exists()


@pytest.mark.blender
@pytest.mark.slow
def test_no_temporary_folder_is_left_behind(testdata, tmp_path):
    import subprocess
    import sys

    from conftest import ROOT

    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "BLENDER_USER_RESOURCES"}
    env["TMPDIR"] = str(tmp)
    bad = tmp_path / "bad.mdl"
    bad.write_bytes(b"UMD2" + b"\xff" * 16)
    runs = [
        ["convert", testdata / "gltf" / "Fox.glb", "--to", "urhox", "-o", tmp_path / "a"],
        ["convert", testdata / "urho3d" / "Box.mdl", testdata / "urho3d" / "Mushroom.mdl", "--to", "urhox",
         "-j", "2", "-o", tmp_path / "b"],
        ["convert", bad, "--to", "urhox", "-o", tmp_path / "c"],
        ["demo", "-o", tmp_path / "d"],
    ]
    codes = []
    for argv in runs:
        r = subprocess.run([sys.executable, str(ROOT / "cli.py"), *map(str, argv)], capture_output=True, text=True,
                           env=env, timeout=600)
        codes.append(r.returncode)
    assert codes[:3] == [0, 0, 1] and codes[3] in (0, 1)
    assert sorted(os.listdir(tmp)) == []
    assert len(list((tmp_path / "b").rglob("*.mdl"))) == 2 and not (tmp_path / "c").exists()


@pytest.mark.blender
@pytest.mark.slow
def test_sidecar_errors_name_the_sidecar(testdata, tmp_path):
    motion = tmp_path / "Walk.ani"
    shutil.copyfile(testdata / "urho3d" / "Ninja_Walk.ani", motion)
    side = tmp_path / "Walk.xml"
    side.write_bytes(b"<animation>" + b" " * (5 << 20) + b"</animation>")  # above the sidecar limit
    r = run_cli("convert", testdata / "urho3d" / "Ninja.mdl", "--motion", motion, "--to", "urhox",
                "-o", tmp_path / "out")
    line = _one_error_line(r)
    assert "Walk.xml" in line and str(side.stat().st_size) in line
    assert str(motion.stat().st_size) not in line
    assert not (tmp_path / "out").exists()


@pytest.mark.blender
def test_demo_help_names_its_default_folder():
    r = run_cli("demo", "--help")
    assert r.returncode == 0 and "skinbridge-demo" in r.stdout and "temporary" not in r.stdout


def test_a_rename_failing_half_way_puts_the_replaced_files_back(tmp_path, monkeypatch):
    out = tmp_path / "out"
    out.mkdir()
    (out / "a.mdl").write_bytes(b"old a")
    (out / "b.png").write_bytes(b"old b")
    before = snapshot(out)
    real_replace = os.replace

    def replace(src, dst):
        if str(dst).endswith("c.xml") and str(src).endswith(".part"):
            raise OSError(5, "Input/output error")
        return real_replace(src, dst)

    monkeypatch.setattr(fileio.os, "replace", replace)
    with pytest.raises(OutputError, match="c.xml"):
        with output_session(str(out)):
            write_atomic(out / "a.mdl", b"new a")
            write_atomic(out / "b.png", b"new b")
            write_atomic(out / "c.xml", b"new c")
    assert snapshot(out) == before  # the same contents and the same inodes: the user's files themselves


@pytest.mark.blender
@pytest.mark.slow
def test_convert_refuses_a_motion_that_matches_no_bone(testdata, tmp_path):
    r = run_cli("convert", testdata / "urho3d" / "Ninja.mdl", "--motion", testdata / "pmx" / "mlibgo_shagamu.vmd",
                "--to", "urhox", "-o", tmp_path / "out")
    line = _one_error_line(r)
    assert "mlibgo_shagamu.vmd" in line and "none of its tracks" in line
    assert r.stdout == "" and not (tmp_path / "out").exists()
