"""Issue 12, item 3: every Blender importer and exporter made to fail at every stage; afterwards the scene
fingerprint (`blender/fingerprint.py`) equals the one before and no partial output file exists.

One table row per bridge. Stages are found by running the bridge once with a recording `fail_hook`
(`blender/scene.py` `_stage`), so a stage added later is attacked too; each row also names the stages it must
report. Where a bridge has no `_stage` call yet (the UANI actions importer and exporter), the failure is
injected by making one of its steps raise on its n-th call (`patches`): see the report of issue 12 for
where `_stage` calls belong there. Rows whose module does not exist yet are skipped with the reason.
"""
from __future__ import annotations

import importlib
import os
import pathlib
from dataclasses import dataclass
from typing import Any, Callable

import pytest

bpy = pytest.importorskip("bpy")

from skinbridge.blender import scene as bscene  # noqa: E402
from support.fingerprint import diff_fingerprints, scene_fingerprint  # noqa: E402

TESTDATA = pathlib.Path(__file__).resolve().parents[2] / "shared" / "testdata"
NINJA = TESTDATA / "urho3d" / "Ninja.mdl"
CLIPS = [TESTDATA / "urho3d" / f"{c}.ani" for c in ("Ninja_Walk", "Ninja_Idle1")]
PMX = TESTDATA / "pmx" / "babylonmmd_constraint_test.pmx"  # 48 vertices, 2 bones, 2 materials, 2 rigid bodies


class Injected(RuntimeError):
    """The failure this module injects (not a ValueError, so no bridge turns it into a FormatError)."""


@dataclass
class Bridge:
    name: str
    modules: tuple[str, ...]  # the row is skipped while one of these does not import
    setup: Callable[[], Any]  # builds the user's scene (after a factory reset); returns what `run` needs
    run: Callable[[Any, pathlib.Path], Any]  # imports, or exports into the given folder
    required_stages: tuple[str, ...] = ()
    patches: tuple[tuple[str, str, int], ...] = ()  # (module, attribute, call that raises), for stage-less steps
    reader: Callable[[bytes, str], Any] | None = None  # reads a written file back (is it complete?)


# -- scenes ------------------------------------------------------------------------------------------------

def _ninja():
    from skinbridge.io_urhox import blender_io

    return blender_io.import_mdl(bpy.context, str(NINJA), "urho3d").armature


def _ninja_with_actions():
    from skinbridge.io_urhox import blender_ani

    arm = _ninja()
    blender_ani.import_ani(bpy.context, [str(p) for p in CLIPS], arm, "urho3d")
    return arm


def _posed():
    from blender_scenes import build_posed_scene

    return build_posed_scene()


def _pmx_model():
    from skinbridge.io_pmx import blender_io

    blender_io.import_pmx(bpy.context, str(PMX))


# -- bridges -----------------------------------------------------------------------------------------------

def _import_mdl(_, out):
    from skinbridge.io_urhox import blender_io

    blender_io.import_mdl(bpy.context, str(NINJA), "urho3d")


def _export_mdl(_, out):
    from skinbridge.io_urhox import blender_io

    blender_io.export_mdl(bpy.context, str(out / "posed.mdl"))


def _import_ani(arm, out):
    from skinbridge.io_urhox import blender_ani

    blender_ani.import_ani(bpy.context, [str(p) for p in CLIPS], arm, "urho3d")


def _export_ani(arm, out):
    from skinbridge.io_urhox import blender_ani

    blender_ani.export_actions(bpy.context, str(out), arm, "urho3d", "urho3d")


def _import_pmx(_, out):
    from skinbridge.io_pmx import blender_io

    blender_io.import_pmx(bpy.context, str(PMX))


def _export_pmx(_, out):
    from skinbridge.io_pmx import blender_io

    blender_io.export_pmx(bpy.context, str(out / "model.pmx"))


VMD = TESTDATA / "pmx" / "babylonmmd_physics_toggle_test_yyb10th.vmd"


def _luka():
    from skinbridge.io_pmx import blender_io

    return blender_io.import_pmx(bpy.context, str(PMX)).armature


def _luka_with_motion():
    from skinbridge.io_pmx import blender_vmd

    arm = _luka()
    blender_vmd.import_vmd(bpy.context, [str(VMD)], arm)
    return arm


def _import_vmd(arm, out):
    from skinbridge.io_pmx import blender_vmd

    blender_vmd.import_vmd(bpy.context, [str(VMD)], arm)


def _export_vmd(arm, out):
    from skinbridge.io_pmx import blender_vmd

    out.mkdir(parents=True, exist_ok=True)
    blender_vmd.export_vmd(bpy.context, str(out / "motion.vmd"), arm)


def _read_with(module: str):
    def read(data: bytes, path: str):
        return importlib.import_module(module).read(data)
    return read


IMPORT_STAGES = ("armature", "materials", "mesh", "done")
EXPORT_STAGES = ("skeleton", "meshes", "write")

BRIDGES = [
    Bridge("UMD2 import", ("skinbridge.io_urhox.blender_io",), lambda: None, _import_mdl, IMPORT_STAGES),
    Bridge("UMD2 export", ("skinbridge.io_urhox.blender_io",), _posed, _export_mdl, EXPORT_STAGES,
           patches=(("skinbridge.core.fileio", "os.replace", 1),),
           reader=_read_with("skinbridge.io_urhox.umd2")),
    Bridge("UANI import (actions)", ("skinbridge.io_urhox.blender_ani",), _ninja, _import_ani,
           patches=(("skinbridge.blender.action", "build_action", 1), ("skinbridge.blender.action", "build_action", 2),
                    ("skinbridge.blender.action", "assign", 1))),
    Bridge("UANI export (actions)", ("skinbridge.io_urhox.blender_ani",), _ninja_with_actions, _export_ani,
           patches=(("skinbridge.blender.action", "read_action", 2),
                    ("skinbridge.io_urhox.blender_ani", "write_atomic", 1),
                    ("skinbridge.io_urhox.blender_ani", "write_atomic", 2),
                    ("skinbridge.core.fileio", "os.replace", 1)),
           reader=_read_with("skinbridge.io_urhox.uani")),
    Bridge("PMX import", ("skinbridge.io_pmx.blender_io",), lambda: None, _import_pmx, IMPORT_STAGES),
    Bridge("PMX export", ("skinbridge.io_pmx.blender_io",), _pmx_model, _export_pmx, EXPORT_STAGES,
           patches=(("skinbridge.core.fileio", "os.replace", 1),), reader=_read_with("skinbridge.io_pmx.pmx")),
    Bridge("VMD import", ("skinbridge.io_pmx.blender_vmd",), _luka, _import_vmd,
           patches=(("skinbridge.io_pmx.blender_vmd", "_fill_action", 1),
                    ("skinbridge.io_pmx.blender_vmd", "_plan", 1))),
    Bridge("VMD export", ("skinbridge.io_pmx.blender_vmd",), _luka_with_motion, _export_vmd,
           patches=(("skinbridge.io_pmx.blender_vmd", "_export_bones", 1),
                    ("skinbridge.io_pmx.blender_vmd", "_export_morphs", 1),
                    ("skinbridge.core.fileio", "os.replace", 1)),
           reader=_read_with("skinbridge.io_pmx.vmd")),
]


def _params():
    out = []
    for b in BRIDGES:
        missing = None
        for m in b.modules:
            try:
                importlib.import_module(m)
            except ImportError as e:
                missing = f"{m} does not exist yet ({e})"
                break
        out.append(pytest.param(b, id=b.name, marks=[pytest.mark.skip(reason=missing)] if missing else []))
    return out


def _reset(bridge: Bridge):
    bpy.ops.wm.read_factory_settings(use_empty=True)
    return bridge.setup()


def _files(folder: pathlib.Path) -> list[pathlib.Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file()) if folder.exists() else []


def _stages_of(bridge: Bridge, tmp_path: pathlib.Path, monkeypatch) -> list[str]:
    """The stages one successful run reports, in order (each once)."""
    seen: list[str] = []
    ctx = _reset(bridge)
    monkeypatch.setattr(bscene, "fail_hook", lambda s: seen.append(s) if s not in seen else None)
    bridge.run(ctx, tmp_path / "probe")
    monkeypatch.setattr(bscene, "fail_hook", None)
    return seen


def _failing_after(target, n: int, label: str):
    calls = []

    def wrapper(*args, **kwargs):
        calls.append(1)
        if len(calls) == n:
            raise Injected(f"injected failure in {label} (call {n})")
        return target(*args, **kwargs)
    return wrapper


@pytest.mark.parametrize("bridge", _params())
def test_failure_at_every_stage_leaves_the_scene_and_no_partial_file(bridge, addon, tmp_path, monkeypatch):
    stages = _stages_of(bridge, tmp_path, monkeypatch)
    missing = [s for s in bridge.required_stages if s not in stages]
    assert not missing, f"{bridge.name}: stages {missing} are never reported (reported: {stages})"
    attacks = [("stage", s) for s in stages] + [("patch", p) for p in bridge.patches]
    assert attacks, f"{bridge.name}: nothing to inject a failure into"
    problems = []
    for i, (kind, what) in enumerate(attacks):
        ctx = _reset(bridge)
        before = scene_fingerprint()
        out = tmp_path / f"out{i}"
        with monkeypatch.context() as mp:
            if kind == "stage":
                label = f"stage {what!r}"

                def fail(s, stage=what):
                    if s == stage:
                        raise Injected(f"injected failure at stage {s}")
                mp.setattr(bscene, "fail_hook", fail)
            else:
                module, attr, n = what
                label = f"{module}.{attr} call {n}"
                owner = importlib.import_module(module)
                *path, name = attr.split(".")
                for part in path:  # "os.replace": the module's `os`
                    owner = getattr(owner, part)
                mp.setattr(owner, name, _failing_after(getattr(owner, name), n, label))
            try:
                bridge.run(ctx, out)
                problems.append(f"{label}: the injected failure did not surface")
                continue
            except Injected:
                pass
        diff = diff_fingerprints(before, scene_fingerprint())
        if diff:
            problems.append(f"{label}: the scene changed: {diff[:5]}")
        for f in _files(out):
            if f.name.startswith(".skinbridge-") or f.suffix == ".part":
                problems.append(f"{label}: temporary file left: {f.relative_to(tmp_path)}")
            elif bridge.reader is not None:
                try:  # a file written before the failure must be complete (each file is renamed into place)
                    bridge.reader(f.read_bytes(), str(f))
                except Exception as e:
                    problems.append(f"{label}: {f.relative_to(tmp_path)} is partial: {e}")
            else:
                problems.append(f"{label}: an import wrote {f.relative_to(tmp_path)}")
    print(f"{bridge.name}: {len(attacks)} failures injected: stages {stages}, patches {list(bridge.patches)}")
    assert not problems, f"{bridge.name} (stages {stages}):\n" + "\n".join(problems)


@pytest.mark.parametrize("bridge", [p for p in _params() if "export" in p.id.lower() and "VMD" not in p.id])
def test_export_failing_before_its_first_write_leaves_no_file(bridge, addon, tmp_path, monkeypatch):
    """A failure anywhere before the first rename leaves the output folder empty (not only free of partial
    files): every exporter builds its bytes before writing."""
    stages = _stages_of(bridge, tmp_path, monkeypatch)
    for stage in [s for s in stages if s != "done"]:
        ctx = _reset(bridge)
        out = tmp_path / f"early-{stage}"
        with monkeypatch.context() as mp:
            mp.setattr(bscene, "fail_hook", lambda s, stage=stage: (_ for _ in ()).throw(Injected(s)) if s == stage
                       else None)
            with pytest.raises(Injected):
                bridge.run(ctx, out)
        assert _files(out) == [], f"{bridge.name}: failure at {stage!r} left {_files(out)}"


def test_every_bridge_of_the_issue_has_a_row():
    names = " ".join(b.name for b in BRIDGES)
    for fmt in ("UMD2 import", "UMD2 export", "UANI import", "UANI export", "PMX import", "PMX export", "VMD"):
        assert fmt in names
    assert os.path.isfile(NINJA) and all(p.is_file() for p in CLIPS) and PMX.is_file()
