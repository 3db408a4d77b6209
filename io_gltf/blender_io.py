"""glTF import through Blender's bundled importer (io_scene_gltf2), handed only a checked copy of the file
(io_gltf/untrusted.py): the importer itself trusts every URI and size in it."""
from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile

import bpy

from ..core.errors import FormatError
from .untrusted import checked_copy


def _importer_message(e: Exception) -> str:
    """The last line of what the importer raised that says something (bpy wraps a Python error of the importer
    in a traceback ending in "Location: …")."""
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    lines = [ln for ln in lines if not ln.startswith(("Location:", "File ", "Traceback", "Error: Python:"))]
    return lines[-1][:200] if lines else type(e).__name__


@contextlib.contextmanager
def _stderr_held():
    """Hold what is written to stderr (file descriptor 2) during the block: the importer prints its own
    traceback there when it fails, and its failure is reported as one line instead. Kept text is written back
    when the block ends without an error."""
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):  # no stderr to hold
        yield
        return
    with tempfile.TemporaryFile() as held:
        os.dup2(held.fileno(), 2)
        failed = True
        try:
            yield
            failed = False
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            if not failed:
                held.seek(0)
                os.write(2, held.read(1 << 20))


def blender_import(context, path: str, options) -> list[str]:
    folder = tempfile.mkdtemp(prefix="skinbridge-gltf-")
    try:
        checked = checked_copy(path, folder)
        known = set(bpy.data.images)
        try:
            with _stderr_held():
                result = bpy.ops.import_scene.gltf(filepath=checked.path)
        except Exception as e:  # the importer's own failure: one line naming the file, not its traceback
            raise FormatError(f"the glTF importer could not read {path}: {_importer_message(e)}") from None
        if result != {"FINISHED"}:
            raise FormatError(f"the glTF importer could not read {path}")
        for img in set(bpy.data.images) - known:  # the images name the user's files, not the checked copy's links
            linked = os.path.normpath(bpy.path.abspath(img.filepath)) if img.filepath else ""
            if linked in checked.originals:
                img.filepath_raw = checked.originals[linked]
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return checked.warnings
