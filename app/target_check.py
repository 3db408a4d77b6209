"""Check for a target: what an export to a `convert --to` target would refuse, warn about and write, found by
running that target's own exporter into a temporary folder that is removed afterwards, so that the list the
SkinBridge panel shows is the list the export prints (no rule is written twice).

The export is read-only on the scene (docs/architecture.md §7.3), so the dry run leaves the user's data as it
found it; nothing is written outside the temporary folder (the output session of core/fileio.py holds it there).
"""
from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass, field
from typing import Any

from .. import formats
from ..blender.ops_common import protect_scene_files
from ..blender.scene import export_scope
from ..blender.selection import NoTarget
from ..core.errors import ExportError, FormatError
from ..core.fileio import output_session
from ..core.naming import safe_file_name
from .options import ConvertOptions
from .pipeline import importable, load_motion, modes_not_kept, reset_scene

# What refuses an export: `convert` prints each as its one error line and exits 1 (cli.py `_convert_worker`, a
# writer's FormatError for a value it cannot write among them), so the check lists it as the refusal, never
# raises it out of the panel's operator.
REFUSALS = (ExportError, NoTarget, FormatError, OSError, RuntimeError)


@dataclass
class TargetCheck:
    target: str
    refused: str = ""                                   # the export's error, "" when it would succeed
    warnings: list[str] = field(default_factory=list)   # what it changes or warns about, as the export says it
    files: list[str] = field(default_factory=list)      # what it writes, relative to the chosen folder

    @property
    def findings(self) -> list[tuple[str, str]]:
        """(kind, text) in the order the panel lists them: "refuse", then "warn", then "file"."""
        return ([("refuse", self.refused)] if self.refused else []) + [("warn", w) for w in self.warnings] + [
            ("file", f) for f in self.files]


def _written(folder: str) -> list[str]:
    out = []
    for root, _, names in os.walk(folder):
        out += [os.path.relpath(os.path.join(root, n), folder).replace(os.sep, "/") for n in names]
    return sorted(out)


def check_target(context, target: str, values: dict[str, Any] | None = None, name: str = "model",
                 parent: str | None = None, collection: str | None = None, selected_only: bool = False,
                 options: ConvertOptions | None = None) -> TargetCheck:
    """Run the export of `convert --to target` with the options `values` (the target's own, from its spec;
    the others at their defaults) as `name` into a temporary folder made in `parent` (the system's when None),
    and remove the folder: what it refused, warned about and wrote. `collection` and `selected_only` scope
    the model as the export operator's do. `options`, when given, are used as they are instead of `values`
    (the command line's, built as `convert` builds them)."""
    spec = formats.targets()[target]
    options = options or ConvertOptions(target=target, **(values or {}))
    result = TargetCheck(target)
    folder = tempfile.mkdtemp(prefix="skinbridge-check-", dir=parent)
    try:
        with export_scope(collection, selected_only):
            with output_session(folder) as session:
                protect_scene_files(session)
                _, result.warnings = spec.get("export_target")(context, folder, safe_file_name(name), options)
        result.files = _written(folder)
    except REFUSALS as e:
        result.refused = str(e)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return result


def check_file(context, src: str, options: ConvertOptions, name: str) -> tuple[list[str], TargetCheck]:
    """What `convert src --to options.target -n name` would do, written nowhere: the file and its `--motion`
    files brought into an empty scene as `convert` brings them (app/pipeline.py), then `check_target`. Returns
    the import's warnings and the check, whose warnings end with the one `convert` adds after a successful
    export (clip play modes the target does not store), so that the lines equal `convert`'s; a file that cannot
    be imported raises FormatError or OSError as `convert` does."""
    spec = importable(src)
    reset_scene()
    warnings = spec.get("blender_import")(context, src, options)
    for motion in options.motions:
        if os.path.isdir(motion):  # convert's words for the same faults
            raise IsADirectoryError(f"--motion {motion} is a folder, not a motion file: give a file inside it")
        if not os.path.exists(motion):
            raise FileNotFoundError(f"--motion {motion}: no such file")
        warnings += load_motion(context, motion, options)
    result = check_target(context, options.target, name=name, options=options)
    if not result.refused:
        result.warnings += modes_not_kept(formats.targets()[options.target])
    return warnings, result
