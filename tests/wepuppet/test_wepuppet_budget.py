"""Issue 45, Wallpaper Engine: hostile projects and sprite sheets each test builds in its own folder, run as the
user runs them (`skinbridge info`, `convert --to weproject`) in a child under an address-space and a time limit
(tests/support/limited.py): links leaving a project are never copied, a sheet of a few hundred KB claiming
gigabytes of frames is refused before it is decoded, deep JSON is one line, a missing layer model is a warning
naming it and its layers. Blender starts only in the children of the `blender` tests."""
from __future__ import annotations

import os
import pathlib
import sys

import pytest

from support import limited
from support import wepuppet_hostile as h

from skinbridge.core.errors import FormatError
from skinbridge.io_wepuppet.project import files, project
from skinbridge.io_wepuppet.puppet.project_docs import layer_doc
from skinbridge.io_wepuppet.texture import sheet, tex

LIMIT_S = 10.0


def _python(tmp_path, code: str):
    """`code` in a child under the codec limit, with this checkout as `skinbridge` (limited.python's prelude takes
    the package the venv links, which in a worktree is another checkout)."""
    link = tmp_path / "pkg"
    link.mkdir()
    (link / "skinbridge").symlink_to(limited.ROOT, target_is_directory=True)
    prelude = (f"import sys\nsys.path.insert(0, {str(link)!r})\nfrom skinbridge.core.errors import FormatError\n"
               "from skinbridge.io_wepuppet.texture import tex\n")
    return limited.run_limited([sys.executable, "-c", prelude + code], limited.CODEC_LIMIT, LIMIT_S)


def _outputs(folder: pathlib.Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def _warnings(outcome) -> list[str]:
    return [ln for ln in outcome.stderr.splitlines() if ln.startswith("warning:")]


# ------------------------------------------------------------------------------------------------------------
# 4 and 9: what a project export copies (no Blender: the walk and the streamed copy)

def test_the_walk_keeps_regular_files_inside_and_names_every_link_it_skips(tmp_path):
    path, _ = h.linked_project(tmp_path, pipe=True)
    root = os.path.dirname(path)
    found, warnings = files.project_files(root)
    assert sorted(found) == ["materials/alias.json", "materials/picture.json", "materials/picture.tex",
                             "models/picture.json", "project.json", "scene.json"]
    # a link to a file inside the project is copied as a regular file holding that file's bytes
    assert found["materials/alias.json"] == os.path.realpath(os.path.join(root, "materials", "picture.json"))
    assert all(f.startswith(os.path.realpath(root) + os.sep) for f in found.values())
    for name, why in [("hostname_link", "leading out of the project (/etc/hostname)"),
                      ("materials/secret.txt", "leading out of the project (../../outside/secret.txt)"),
                      ("models/outside_dir", "leading out of the project"),
                      ("materials/pipe.tex", "a pipe (FIFO), not a regular file")]:
        assert len([w for w in warnings if w.startswith(f"{name}: ") and why in w]) == 1, (name, warnings)
    assert len(warnings) == 4


def test_a_copy_is_streamed_in_pieces_and_refuses_a_file_swapped_for_a_pipe(tmp_path):
    big = tmp_path / "big.bin"
    big.write_bytes(b"x" * (files.CHUNK * 3 + 5))
    sizes = [len(p) for p in files.pieces(str(big), "big.bin")]
    assert sizes == [files.CHUNK] * 3 + [5]  # never more than one piece held
    os.unlink(big)
    os.mkfifo(big)
    with pytest.raises(FormatError, match="big.bin is no longer a regular file|big.bin cannot be read"):
        list(files.pieces(str(big), "big.bin"))


# ------------------------------------------------------------------------------------------------------------
# 7: sprite sheets

def test_a_sheet_of_frames_claiming_gigabytes_is_refused_before_decoding(tmp_path):
    """50 frames each cut as a whole 4096² image: 265 KB of file, 3.2 GB of frames."""
    data = h.sheet(50, 4096)
    assert len(data) < 300_000
    path = tmp_path / "bomb.tex"
    path.write_bytes(data)
    code = (f"t = tex.read(open({str(path)!r}, 'rb').read())\n"
            "try:\n    tex.sprite_frames(t)\nexcept FormatError as e:\n"
            "    print(f'error: {e}', file=sys.stderr)\n    sys.exit(1)\n")
    out = _python(tmp_path, code)
    assert limited.one_line_refusal(out), out
    assert f"more than {tex.MAX_FRAME_PIXELS} pixels" in out.stderr and "frame 4 rectangle" in out.stderr
    assert out.seconds < LIMIT_S


def test_frame_pixels_and_frame_times_are_checked_before_they_multiply(monkeypatch):
    monkeypatch.setattr(tex, "MAX_FRAME_PIXELS", 16 * 256)  # the cap scaled down: 16 frames of 16² exactly
    t = tex.read(h.sheet(16, 16))
    assert len(tex.sprite_frames(t)) == 16
    t = tex.read(h.sheet(17, 16))
    with pytest.raises(FormatError, match="frame 16 rectangle"):
        tex.sprite_frames(t)
    t.frames[3] = tex.Frame(0, t.frames[3].time, (float("nan"), 0.0, 16.0, 0.0, 0.0, 16.0))  # found by bench/fuzz
    with pytest.raises(FormatError, match="frame 3 rectangle"):
        tex.sprite_frames(tex.read(tex.write(t)))
    # a frame time of 1e9 s would be 2.4e10 scene frames at 24 fps: refused before any list is made
    with pytest.raises(FormatError, match="frame 0 time"):
        sheet.schedule([1e9], 24.0, 10000)
    with pytest.raises(FormatError, match="frame 2 time"):
        sheet.schedule([0.1, 0.1, float("nan")], 24.0, 10000)
    assert sheet.schedule([0.5] * 3, 24.0, 36) == [list(range(0, 12)), list(range(12, 24)), list(range(24, 36))]
    with pytest.raises(FormatError, match="more than 35 scene frames"):
        sheet.schedule([0.5] * 3, 24.0, 35)


# ------------------------------------------------------------------------------------------------------------
# 12: deep JSON

@pytest.mark.parametrize("which", ["scene.json", "project.json"])
def test_deep_json_in_a_project_is_one_line(tmp_path, which):
    h.image_project(tmp_path)
    deep = h.deep_json(100_000) if which == "scene.json" else \
        b'{"file": "scene.json", "title": "deep", "type": "scene", "general": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    (tmp_path / which).write_bytes(deep)
    out = limited.cli("info", tmp_path / "project.json", address_space=limited.CODEC_LIMIT, timeout=LIMIT_S)
    assert limited.one_line_refusal(out), out
    assert "JSON nested" in out.stderr and "RecursionError" not in out.stderr


def test_a_deep_layer_model_is_a_warning_naming_it(tmp_path):
    h.image_project(tmp_path)
    (tmp_path / "models" / "picture.json").write_bytes(b'{"material": ' + b"[" * 50_000 + b"]" * 50_000 + b"}")
    out = limited.cli("info", tmp_path / "project.json", address_space=limited.CODEC_LIMIT, timeout=LIMIT_S)
    assert out.returncode == 0, out
    assert "model 'models/picture.json' of image layer 'picture': " in out.stdout
    assert "JSON nested 50001 levels deep" in out.stdout


# ------------------------------------------------------------------------------------------------------------
# 14: a layer naming a model that is not there

def test_a_missing_layer_model_is_named_with_its_layers_not_an_errno(tmp_path):
    layers = [layer_doc("image", "models/util/solidlayer.json", k, f"solid {k}", (0, 0, 0)) for k in (1, 2, 3)]
    layers.append(layer_doc("image", "models", 4, "a folder", (0, 0, 0)))
    h.image_project(tmp_path, layers=layers)
    _, _, warnings = project.read_path(str(tmp_path / "project.json"))
    assert warnings == [
        "model 'models/util/solidlayer.json' of image layer 'solid 1' and 2 more: not in the project folder "
        "(a Wallpaper Engine built-in file?)",
        "model 'models' of image layer 'a folder': not a regular file"]
    out = limited.cli("info", tmp_path / "project.json", address_space=limited.CODEC_LIMIT, timeout=LIMIT_S)
    assert out.returncode == 0 and "Errno" not in out.stdout + out.stderr and "solid 1" in out.stdout


def test_a_scene_file_linked_from_outside_the_project_is_not_read(tmp_path):
    h.image_project(tmp_path / "p")
    (tmp_path / "p" / "scene.json").rename(tmp_path / "scene.json")
    os.symlink("../scene.json", tmp_path / "p" / "scene.json")
    p, scene, warnings = project.read_path(str(tmp_path / "p" / "project.json"))
    assert scene is None and warnings == ["scene project has no scene file (scene.json): a link leading out of "
                                          "the project folder: not followed"]


# ------------------------------------------------------------------------------------------------------------
# through Blender, in a child

def _convert(src, out, limit=limited.BLENDER_LIMIT, timeout=LIMIT_S):
    return limited.cli("convert", src, "--to", "weproject", "-o", out, address_space=limit, timeout=timeout)


@pytest.fixture(scope="module")
def baseline(tmp_path_factory):
    """`convert --to weproject` of a good project (one image layer, an 8×8 texture): the peak memory the
    hostile cases are measured against."""
    folder = tmp_path_factory.mktemp("good")
    h.image_project(folder / "project")
    res = _convert(folder / "project" / "project.json", folder / "out", timeout=60)
    assert res.returncode == 0, res
    return res


@pytest.mark.blender
@pytest.mark.slow  # Blender starts in the child: 2-7 s
def test_convert_copies_nothing_from_outside_the_project(tmp_path):
    path, secret = h.linked_project(tmp_path)
    out = tmp_path / "out"
    res = _convert(path, out)
    assert res.returncode == 0 and not res.timed_out and "Traceback" not in res.stderr, res
    got = _outputs(out)
    assert sorted(got) == ["materials/alias.json", "materials/picture.json", "materials/picture.tex",
                           "models/picture.json", "project.json", "scene.json"]
    assert not any(p.is_symlink() for p in out.rglob("*"))
    assert all(h.SECRET not in data for data in got.values())
    hostname = pathlib.Path("/etc/hostname").read_bytes() if os.path.isfile("/etc/hostname") else b""
    assert not any(data == hostname for data in got.values())
    assert got["materials/alias.json"] == (tmp_path / "project" / "materials" / "picture.json").read_bytes()
    warnings = _warnings(res)
    for name in ("hostname_link", "materials/secret.txt", "models/outside_dir"):
        assert len([w for w in warnings if f": {name}: " in w]) == 1, (name, warnings)
    assert res.seconds < LIMIT_S


@pytest.mark.blender
@pytest.mark.slow
def test_convert_streams_a_large_sparse_file_instead_of_reading_it_whole(tmp_path, baseline):
    """A 512 MiB sparse file in the project: copied, with the peak memory of the same project without it."""
    big = tmp_path / "big"
    h.image_project(big)
    size = 512 << 20
    with open(big / "sparse.bin", "wb") as f:
        f.truncate(size)
    res = _convert(big / "project.json", tmp_path / "big_out", timeout=60)
    assert res.returncode == 0, res
    assert os.path.getsize(tmp_path / "big_out" / "sparse.bin") == size
    assert res.peak_rss <= baseline.peak_rss + (128 << 20), (res.peak_rss >> 20, baseline.peak_rss >> 20)


@pytest.mark.blender
@pytest.mark.slow  # Blender starts in the child: 2-7 s
@pytest.mark.parametrize("frames,side,time,field", [(1024, 1024, 0.1, "frame 64 rectangle"),
                                                    (1, 4, 1e9, "frame 0 time")], ids=["frame pixels", "frame time"])
def test_a_hostile_sheet_in_a_project_comes_in_as_its_image_with_one_warning(tmp_path, baseline, frames, side, time,
                                                                             field):
    """1024 frames each a whole 1024² image (4 GiB of frames from a file of about 50 KB; the whole image, what
    comes in instead, is small enough to import within the limit), and a frame shown for 1e9 s."""
    bomb = tmp_path / "bomb"
    h.image_project(bomb, h.sheet(frames, side, time))
    assert (bomb / "materials" / "picture.tex").stat().st_size < 60_000
    res = _convert(bomb / "project.json", tmp_path / "bomb_out")
    assert res.returncode == 0 and not res.timed_out and "Traceback" not in res.stderr, res
    sheet_lines = [w for w in _warnings(res) if "sprite sheet shown as its whole image" in w]
    assert len(sheet_lines) == 1, res.stderr
    assert field in sheet_lines[0]
    assert res.peak_rss <= baseline.peak_rss + (1 << 30), (res.peak_rss >> 20, baseline.peak_rss >> 20)
    assert (tmp_path / "bomb_out" / "materials" / "picture.tex").read_bytes() == \
        (bomb / "materials" / "picture.tex").read_bytes()


@pytest.mark.blender
@pytest.mark.slow  # Blender starts in the child: 2-7 s
def test_deep_json_through_blender_is_one_line(tmp_path):
    h.image_project(tmp_path / "p")
    (tmp_path / "p" / "scene.json").write_bytes(h.deep_json(100_000))
    res = _convert(tmp_path / "p" / "project.json", tmp_path / "out")
    assert limited.one_line_refusal(res), res
    assert "JSON nested" in res.stderr and not (tmp_path / "out").exists()


@pytest.mark.blender
@pytest.mark.slow  # Blender starts in the child: 2-7 s
def test_a_project_scaled_to_zero_compares_with_itself(tmp_path):
    """BlacRyu's PS2 menu project scales its script-module and helper layers to 0 ("0.00000 0.00000 0.00000");
    its compare with itself failed with "Singular matrix" (the mesh's normal matrix was inverted)."""
    path = h.image_project(tmp_path, layers=h.zero_scale_layers())
    res = limited.cli("compare", path, path, address_space=limited.BLENDER_LIMIT, timeout=LIMIT_S)
    assert res.returncode == 0 and "result: same" in res.stdout and "Singular" not in res.stderr, res
    out = tmp_path / "out"
    res = _convert(path, out)
    assert res.returncode == 0, res
    assert _outputs(out) == {k: v for k, v in _outputs(tmp_path).items() if not k.startswith("out/")}

