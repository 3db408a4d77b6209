"""Texture paths from files are untrusted: what import may open, what export may write (core/paths.py)."""
from __future__ import annotations

import os

import pytest

from skinbridge.core.paths import texture_to_open, texture_to_write, why_unsafe

HOSTILE = [
    "\\\\server\\share\\x.png",  # UNC: MMD and Blender on Windows would fetch it over the network
    "//server/share/x.png",
    "\\\\?\\C:\\x.png",
    "C:\\Windows\\x.png",
    "c:x.png",
    "/etc/passwd",
    "\\rooted.png",
    "../up.png",
    "tex/../../up.png",
    "tex\\..\\..\\up.png",
    "file:///etc/passwd",
    "http://example.com/x.png",
    "",
    "a\x00b.png",
]


@pytest.mark.parametrize("raw", HOSTILE)
def test_hostile_paths_are_never_opened_and_never_written(raw, tmp_path):
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    assert why_unsafe(raw) is not None
    path, warning = texture_to_open(raw, str(model_dir))
    assert path is None and warning and "not opened" in warning
    written, warning = texture_to_write(raw)
    assert warning is not None
    assert "/" not in written and "\\" not in written and ".." != written and ":" not in written


@pytest.mark.parametrize("raw,parts", [
    ("skin.png", ["skin.png"]), ("tex\\skin.png", ["tex", "skin.png"]), ("tex/./a/../skin.png", ["tex", "skin.png"]),
    ("./toon01.bmp", ["toon01.bmp"]),
])
def test_relative_paths_inside_the_folder_are_kept(raw, parts, tmp_path):
    path, warning = texture_to_open(raw, str(tmp_path))
    assert warning is None and path == os.path.join(os.path.realpath(tmp_path), *parts)
    assert texture_to_write(raw, "\\") == ("\\".join(parts), None)


def test_an_absolute_path_inside_the_output_folder_is_written_relative(tmp_path):
    assert texture_to_write(str(tmp_path / "tex" / "a.png"), "\\", str(tmp_path)) == ("tex\\a.png", None)
    written, warning = texture_to_write(str(tmp_path.parent / "a.png"), "\\", str(tmp_path))
    assert written == "a.png" and "absolute" in warning


def test_a_link_out_of_the_model_folder_is_not_followed(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.png").write_bytes(b"x")
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    (model_dir / "tex").symlink_to(outside, target_is_directory=True)
    path, warning = texture_to_open("tex/secret.png", str(model_dir))
    assert path is None and "symbolic link" in warning


# -- the PMX importer and exporter through Blender -----------------------------------------------------------

def _pmx_with_texture(tmp_path, texture: str):
    from skinbridge.io_pmx.model import pmx

    from conftest import TESTDATA

    src = pmx.read((TESTDATA / "pmx" / "babylonmmd_constraint_test.pmx").read_bytes())
    src.textures = [texture]
    for mat in src.materials:
        mat.texture = 0
    folder = tmp_path / "models" / "m"
    folder.mkdir(parents=True)
    path = folder / "m.pmx"
    path.write_bytes(pmx.write(src))
    return path


@pytest.mark.blender
def test_pmx_import_does_not_open_a_texture_outside_the_model_folder(clean_scene, tmp_path):
    import bpy

    import numpy as np

    from skinbridge.core.png import encode_png

    (tmp_path / "models").mkdir(parents=True, exist_ok=True)
    (tmp_path / "models" / "up.png").write_bytes(encode_png(np.full((2, 2, 4), 200, np.uint8)))
    path = _pmx_with_texture(tmp_path, "../up.png")
    bpy.ops.import_scene.skinbridge_pmx(filepath=str(path))
    opened = [bpy.path.abspath(i.filepath) for i in bpy.data.images if i.filepath]
    assert not any("up.png" in p for p in opened), opened


@pytest.mark.parametrize("texture", ["\\\\server\\share\\tex.png", "C:\\Users\\x\\tex.png", "/etc/tex.png",
                                     "..\\..\\tex.png"])
@pytest.mark.blender
def test_pmx_texture_paths_from_a_file_are_written_as_safe_relative_names(texture, clean_scene, tmp_path):
    """A PMX whose texture table names a UNC, absolute or escaping path: imported (nothing opened, a warning)
    and exported, the written table holds the file's name alone, and the export warns naming the original."""
    import bpy

    from skinbridge.io_pmx.blender_side import blender_io
    from skinbridge.io_pmx.model import pmx

    path = _pmx_with_texture(tmp_path, texture)
    result = blender_io.import_pmx(bpy.context, str(path))
    assert any("not opened" in w for w in result.warnings), result.warnings
    assert not [i for i in bpy.data.images if i.filepath and "tex.png" in i.filepath]
    out = tmp_path / "out.pmx"
    warnings = blender_io.export_pmx(bpy.context, str(out))
    assert pmx.read(out.read_bytes()).textures == ["tex.png"]
    assert any(repr(texture) in w for w in warnings), warnings


def test_wallpaper_engine_material_path_never_leaves_the_project(tmp_path):
    """A puppet's material path (file content) that climbs out of the project folder is not opened."""
    from skinbridge.io_wepuppet.puppet.convert import find_texture

    project = tmp_path / "project"
    (project / "models").mkdir(parents=True)
    (tmp_path / "outside.json").write_text('{"passes": [{"textures": ["x"]}]}')
    (tmp_path / "materials").mkdir()
    (tmp_path / "materials" / "x.tex").write_bytes(b"TEXV0005")
    path, why = find_texture(str(project / "models" / "p_puppet.mdl"), "../outside.json")
    assert path is None and "not opened" in why
