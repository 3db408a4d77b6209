"""Every Blender importer and exporter made to fail at every stage; afterwards the scene fingerprint
(`tests/support/fingerprint.py`) equals the one before and no partial output file exists.

One table row per bridge: the format registry gives a row to every Blender import (on the smallest real file of
that format in ../shared/testdata), every convert target and every motion loader; hand-written rows add the
bridges that need more (actions imported and exported with failures injected into their steps). Stages are
found by running the bridge once with a recording `fail_hook` (`blender/scene.py` `failure_point`), so a stage added
later is attacked too; each row also names the stages it must report. Where a step has no `failure_point` call, the
failure is injected by making it raise on its n-th call (`patches`).
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

pytestmark = pytest.mark.blender

TESTDATA = pathlib.Path(__file__).resolve().parents[3] / "shared" / "testdata"
INTEROP = TESTDATA.parent / "interop"  # files other tools wrote (Blender Source Tools): an import row each family
NINJA = TESTDATA / "urho3d" / "Ninja.mdl"
CLIPS = [TESTDATA / "urho3d" / f"{c}.ani" for c in ("Ninja_Walk", "Ninja_Idle1")]
PMX = TESTDATA / "pmx" / "babylonmmd_constraint_test.pmx"  # 48 vertices, 2 bones, 2 materials, 2 rigid bodies


class Injected(RuntimeError):
    """The failure this module injects (not a ValueError, so no bridge turns it into a FormatError)."""


@dataclass
class Bridge:
    name: str
    modules: tuple[str, ...]  # the modules the row exercises
    setup: Callable[[], Any]  # builds the user's scene (after a factory reset); returns what `run` needs
    run: Callable[[Any, pathlib.Path], Any]  # imports, or exports into the given folder
    required_stages: tuple[str, ...] = ()
    patches: tuple[tuple[str, str, int], ...] = ()  # (module, attribute, call that raises), for stage-less steps
    reader: Callable[[bytes, str], Any] | None = None  # reads a written file back (is it complete?)


# -- scenes ------------------------------------------------------------------------------------------------

def _ninja():
    from skinbridge.io_urhox.model import blender_io

    return blender_io.import_mdl(bpy.context, str(NINJA), "urho3d").armature


def _ninja_with_actions():
    from skinbridge.io_urhox.motion import blender_io as motion_io

    arm = _ninja()
    motion_io.import_ani(bpy.context, [str(p) for p in CLIPS], arm, "urho3d")
    return arm


def _posed():
    from support.blender_scenes import build_posed_scene

    return build_posed_scene()


def _pmx_model():
    from skinbridge.io_pmx.blender_side import blender_io

    blender_io.import_pmx(bpy.context, str(PMX))


# -- bridges -----------------------------------------------------------------------------------------------

def _import_mdl(_, out):
    from skinbridge.io_urhox.model import blender_io

    blender_io.import_mdl(bpy.context, str(NINJA), "urho3d")


def _export_mdl(_, out):
    from skinbridge.io_urhox.model import blender_io

    blender_io.export_mdl(bpy.context, str(out / "posed.mdl"))


def _import_ani(arm, out):
    from skinbridge.io_urhox.motion import blender_io as motion_io

    motion_io.import_ani(bpy.context, [str(p) for p in CLIPS], arm, "urho3d")


def _export_ani(arm, out):
    from skinbridge.io_urhox.motion import blender_io as motion_io

    motion_io.export_actions(bpy.context, str(out), arm, "urho3d", "urho3d")


def _import_pmx(_, out):
    from skinbridge.io_pmx.blender_side import blender_io

    blender_io.import_pmx(bpy.context, str(PMX))


def _export_pmx(_, out):
    from skinbridge.io_pmx.blender_side import blender_io

    blender_io.export_pmx(bpy.context, str(out / "model.pmx"))


VMD = TESTDATA / "pmx" / "babylonmmd_physics_toggle_test_yyb10th.vmd"


def _luka():
    from skinbridge.io_pmx.blender_side import blender_io

    return blender_io.import_pmx(bpy.context, str(PMX)).armature


def _luka_with_motion():
    from skinbridge.io_pmx.blender_side import blender_motion_import as blender_vmd_import

    arm = _luka()
    blender_vmd_import.import_vmd(bpy.context, [str(VMD)], arm)
    return arm


def _import_vmd(arm, out):
    from skinbridge.io_pmx.blender_side import blender_motion_import as blender_vmd_import

    blender_vmd_import.import_vmd(bpy.context, [str(VMD)], arm)


def _export_vmd(arm, out):
    from skinbridge.io_pmx.blender_side import blender_motion_export as blender_vmd_export

    out.mkdir(parents=True, exist_ok=True)
    blender_vmd_export.export_vmd(bpy.context, str(out / "motion.vmd"), arm)


def _read_with(module: str):
    def read(data: bytes, path: str):
        return importlib.import_module(module).read(data)
    return read


IMPORT_STAGES = ("armature", "materials", "mesh", "done")
EXPORT_STAGES = ("skeleton", "meshes", "write")

BRIDGES = [
    Bridge("UMD2 export", ("skinbridge.io_urhox.model.blender_io",), _posed, _export_mdl, EXPORT_STAGES,
           patches=(("skinbridge.core.fileio", "os.replace", 1),),
           reader=_read_with("skinbridge.io_urhox.model.umd2")),
    Bridge("UANI import (actions)", ("skinbridge.io_urhox.motion.blender_io",), _ninja, _import_ani,
           patches=(("skinbridge.blender.action", "build_action", 1), ("skinbridge.blender.action", "build_action", 2),
                    ("skinbridge.blender.action", "assign", 1))),
    Bridge("UANI export (actions)", ("skinbridge.io_urhox.motion.blender_io",), _ninja_with_actions, _export_ani,
           patches=(("skinbridge.blender.action", "read_action", 2),
                    ("skinbridge.io_urhox.motion.blender_io", "write_atomic", 1),
                    ("skinbridge.io_urhox.motion.blender_io", "write_atomic", 2),
                    ("skinbridge.core.fileio", "os.replace", 1)),
           reader=_read_with("skinbridge.io_urhox.motion.uani")),
    Bridge("PMX export", ("skinbridge.io_pmx.blender_side.blender_io",), _pmx_model, _export_pmx, EXPORT_STAGES,
           patches=(("skinbridge.core.fileio", "os.replace", 1),), reader=_read_with("skinbridge.io_pmx.model.pmx")),
    Bridge("VMD import", ("skinbridge.io_pmx.blender_side.blender_motion_import",), _luka, _import_vmd,
           patches=(("skinbridge.io_pmx.blender_side.blender_motion_import", "_fill_action", 1),
                    ("skinbridge.io_pmx.blender_side.blender_motion_import", "_plan", 1))),
    Bridge("VMD export", ("skinbridge.io_pmx.blender_side.blender_motion_export",), _luka_with_motion, _export_vmd,
           patches=(("skinbridge.io_pmx.blender_side.blender_motion_export", "_export_bones", 1),
                    ("skinbridge.io_pmx.blender_side.blender_motion_export", "export_morphs", 1),
                    ("skinbridge.core.fileio", "os.replace", 1)),
           reader=_read_with("skinbridge.io_pmx.motion.vmd")),
]


# -- rows read from the format registry: every Blender import, convert target and motion loader ------------------

def _identified(path: pathlib.Path):
    from skinbridge import formats
    from skinbridge.core.errors import FormatError

    try:
        return formats.identify_file(path)
    except (FormatError, OSError):
        return None


def _kind(path: pathlib.Path) -> str | None:
    from skinbridge import formats

    spec = _identified(path)
    return formats.file_kind(path, spec) if spec is not None else None


def _samples(spec, kind: str | None = None, root: pathlib.Path = TESTDATA) -> list[pathlib.Path]:
    """Real files of ../shared/testdata (or `root`) whose content is this format (and of this kind), smallest
    first."""
    files = [p for p in root.rglob("*") if p.is_file() and _identified(p) is spec
             and (kind is None or _kind(p) == kind)]
    return sorted(files, key=lambda p: (p.stat().st_size, p.name))


def _models_for(motion: pathlib.Path) -> list[pathlib.Path]:
    """The models a sample motion may belong to, likeliest first: those in its folder whose name starts its
    name (longest first), then the others, largest first."""
    models = [p for p in motion.parent.iterdir() if p.is_file() and _kind(p) == "model"
              and _identified(p).has("blender_import")]
    named = sorted((p for p in models if motion.stem.startswith(p.stem)), key=lambda p: -len(p.stem))
    rest = sorted((p for p in models if p not in named), key=lambda p: (-p.stat().st_size, p.name))
    return named + rest


_MOTION_MODEL: dict[pathlib.Path, pathlib.Path] = {}


def _model_taking(motion: pathlib.Path, loader) -> pathlib.Path:
    """The first candidate model onto which the motion loads (found once, each try in a fresh scene)."""
    from skinbridge.app.options import ConvertOptions
    from skinbridge.blender.selection import find_armature

    if motion not in _MOTION_MODEL:
        for model in _models_for(motion):
            bpy.ops.wm.read_factory_settings(use_empty=True)
            try:
                _identified(model).get("blender_import")(bpy.context, str(model), ConvertOptions())
                loader(bpy.context, str(motion), find_armature(bpy.context, required=True), ConvertOptions())
            except Exception:
                continue
            _MOTION_MODEL[motion] = model
            break
        else:
            raise AssertionError(f"no model of {motion.parent} takes {motion.name}")
        bpy.ops.wm.read_factory_settings(use_empty=True)
    return _MOTION_MODEL[motion]


def _written_reader(data: bytes, path: str):
    """A file a convert target wrote must read back whole when it is one of our formats (textures and material
    files are not ours to read)."""

    spec = _identified(pathlib.Path(path))
    if spec is not None and spec.has("read"):
        spec.get("read")(data)


def _registry_bridges() -> list[Bridge]:
    from skinbridge import formats
    from skinbridge.app.options import ConvertOptions

    def options(spec):  # every option a target may require (NWN2 skinned meshes name their GR2 skeleton)
        return ConvertOptions(target=spec.target or spec.name, skeleton="test_skel")

    rows = []
    for spec in formats.all_specs():
        if spec.foreign_operators:
            continue  # another add-on's importer: its failures are not ours to inject
        samples = _samples(spec)
        others = _samples(spec, "model", INTEROP)[:1] if spec.has("blender_import") else []
        for sample in (samples[:1] if spec.has("blender_import") else []) + others:
            rows.append(Bridge(f"{spec.label} import ({sample.name})", (), lambda: None,
                               lambda _, out, spec=spec, sample=sample: spec.get("blender_import")(
                                   bpy.context, str(sample), ConvertOptions()), ("done",)))
        if spec.has("export_target"):
            rows.append(Bridge(f"{spec.label} convert target", (), _posed,
                               lambda _, out, spec=spec: spec.get("export_target")(
                                   bpy.context, str(out), "posed", options(spec)),
                               patches=(("skinbridge.core.fileio", "os.replace", 1),), reader=_written_reader))
        if spec.has("motion_loader"):
            for motion in _samples(spec, "motion"):
                if not _models_for(motion):
                    continue

                def setup(motion=motion, spec=spec):
                    from skinbridge.blender.selection import find_armature

                    model = _model_taking(motion, spec.get("motion_loader"))
                    _identified(model).get("blender_import")(bpy.context, str(model), ConvertOptions())
                    return find_armature(bpy.context, required=True)

                rows.append(Bridge(f"{spec.label} motion ({motion.name})", (), setup,
                                   lambda arm, out, spec=spec, motion=motion: spec.get("motion_loader")(
                                       bpy.context, str(motion), arm, ConvertOptions()),
                                   patches=(("skinbridge.blender.action", "assign", 1),)))
                break
    return rows


BRIDGES += _registry_bridges()


def _params():
    return [pytest.param(b, id=b.name) for b in BRIDGES]


def _reset(bridge: Bridge):
    bpy.ops.wm.read_factory_settings(use_empty=True)
    ctx = bridge.setup()
    bpy.context.view_layer.update()  # the matrices of objects the setup made, as the export will see them
    return ctx


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
@pytest.mark.slow
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


def test_every_registered_bridge_has_a_row():
    from skinbridge import formats

    names = " ".join(b.name for b in BRIDGES)
    for spec in formats.all_specs():
        if spec.foreign_operators:
            continue
        if spec.has("blender_import") and _samples(spec):
            assert f"{spec.label} import" in names
        for sample in _samples(spec, "model", INTEROP)[:1] if spec.has("blender_import") else []:
            assert f"{spec.label} import ({sample.name})" in names  # a file another tool wrote
        if spec.has("export_target"):
            assert f"{spec.label} convert target" in names
        if spec.has("motion_loader"):
            assert f"{spec.label} motion" in names
    assert os.path.isfile(NINJA) and all(p.is_file() for p in CLIPS) and PMX.is_file()
