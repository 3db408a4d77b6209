"""`skinbridge check-target` on every sample file (conftest.py `SAMPLE_ROOTS`: the test data and the files other
tools wrote) that a format claims, for
every target (README "check-target", docs/blender.md §10): it exits as `convert --to TARGET` does and prints
the warnings and files the export prints.

A Blender start per command would cost 54 files × 8 targets × 2 commands × 3-5 s, and even in one process an
import per command would spend about 2 minutes on imports; so one session imports each sample once, as both
commands do (app/pipeline.py), and for every target runs the check (`app/target_check.py`: the code the
command and the panel run) and then the target's export into a real folder the way `convert` runs it (one
output session with the input protected; NoTarget is an ExportError there). A file that cannot be imported
goes through both real commands for every target (the import fails at once, so these are cheap).
tests/cli/test_check_target.py runs both real commands for every target on one sample per family, which covers
what the commands add around this (their import, option handling and printing)."""
from __future__ import annotations

import os

import pytest

bpy = pytest.importorskip("bpy")

from skinbridge import cli, formats  # noqa: E402  (after the bpy check: these modules need Blender)
from skinbridge.app.options import ConvertOptions  # noqa: E402
from skinbridge.app.pipeline import importable, modes_not_kept, reset_scene  # noqa: E402
from skinbridge.app.target_check import check_target  # noqa: E402
from skinbridge.blender.ops_common import protect_scene_files  # noqa: E402
from skinbridge.blender.selection import NoTarget  # noqa: E402
from skinbridge.core.errors import ExportError, FormatError  # noqa: E402
from skinbridge.core.fileio import output_session  # noqa: E402
from skinbridge.core.naming import safe_file_name  # noqa: E402
from conftest import SAMPLE_ROOTS, TESTDATA  # noqa: E402

pytestmark = [pytest.mark.blender, pytest.mark.slow]

TARGETS = list(formats.targets())
# what `convert` turns into one error line and exit status 1 (cli.py `_convert_worker`)
CONVERT_FAULTS = (FormatError, ExportError, NoTarget, OSError, RuntimeError)


def _claimed() -> list:
    """Every sample file whose content a format claims, relative to the test data folder (the interop files as
    relative paths into INTEROP, in the default leg only: the other legs take one case per family)."""
    out = []
    for top in SAMPLE_ROOTS:
        for root, _, names in os.walk(top):
            for name in sorted(names):
                path = os.path.join(root, name)
                try:
                    formats.identify_file(path)
                except (FormatError, OSError):
                    continue
                rel = os.path.relpath(path, TESTDATA).replace(os.sep, "/")
                out.append(rel if top == TESTDATA else pytest.param(rel, marks=pytest.mark.default_leg))
    return sorted(out, key=lambda p: p if isinstance(p, str) else p.values[0])


SAMPLES = _claimed()


def _files(folder: str | os.PathLike) -> list[str]:
    out = []
    for root, _, names in os.walk(folder):
        out += [os.path.relpath(os.path.join(root, n), folder).replace(os.sep, "/") for n in names]
    return sorted(out)


def _run(capfd, *args: object) -> tuple[int, list[str], list[str]]:
    code = cli.main([str(a) for a in args])
    out, err = capfd.readouterr()
    return code, out.splitlines(), err.splitlines()


def _commands_agree(capfd, src, target: str, out) -> None:
    """`check-target` and `convert` of `src` for `target`: the same exit status, warning and error lines and
    files."""
    code, written, err = _run(capfd, "convert", src, "--to", target, "-o", out)
    said = [line for line in err if line.startswith(("warning: ", "error: "))]
    checked, lines, _ = _run(capfd, "check-target", src, "--to", target)
    assert (checked, [line for line in lines if not line.startswith("writes: ")]) == (code, said), target
    assert [line[len("writes: "):] for line in lines if line.startswith("writes: ")] == (
        sorted(os.path.relpath(p, out).replace(os.sep, "/") for p in written)), target


def _export_as_convert(src: str, target: str, folder, name: str) -> tuple[str, list[str], list[str]]:
    """(error, warnings, files) of the export `convert` runs after its import (app/pipeline.py `convert_file`),
    on the scene as it is."""
    options = ConvertOptions(target=target, protected={os.path.realpath(src)})
    try:
        with output_session(str(folder), [src, *options.protected]) as session:
            session.check(str(folder))
            protect_scene_files(session)
            _, warnings = formats.targets()[target].get("export_target")(bpy.context, str(folder), name, options)
    except CONVERT_FAULTS as e:
        return str(e), [], []
    return "", warnings + modes_not_kept(formats.targets()[target]), _files(folder)


def _imported(src: str) -> bool:
    """The sample in an empty scene as `convert` brings it; False when the import fails (as `convert`'s would)."""
    try:
        spec = importable(src)
        reset_scene()
        spec.get("blender_import")(bpy.context, src, ConvertOptions(target=TARGETS[0]))
    except CONVERT_FAULTS:
        return False
    return True


@pytest.mark.parametrize("sample", SAMPLES)
def test_check_target_of_every_sample_is_its_export(addon, tmp_path, capfd, sample):
    src = str(TESTDATA / sample)
    if not _imported(src):
        for target in TARGETS:
            _commands_agree(capfd, src, target, tmp_path / "cli" / target)
        return
    name = safe_file_name(os.path.splitext(os.path.basename(src))[0])
    checks = tmp_path / "checks"
    checks.mkdir()
    for target in TARGETS:
        options = ConvertOptions(target=target, protected={os.path.realpath(src)})
        check = check_target(bpy.context, target, name=name, options=options, parent=str(checks))
        assert list(checks.iterdir()) == []  # the check's temporary folder is gone
        if not check.refused:
            check.warnings += modes_not_kept(formats.targets()[target])  # as check-target adds them
        error, warnings, files = _export_as_convert(src, target, tmp_path / target, name)
        assert (check.refused, check.warnings, check.files) == (error, warnings, files), target
