"""Core Scenes from and to UrhoX / Urho3D files without Blender: the registry's `load` (what `compare` reads)
and `write_scene` (what benchmarks and tests feed the importers)."""
from __future__ import annotations

import os
from typing import Iterable

from ..core import model as cm
from ..core.fileio import read_bytes, write_atomic
from .model import convert as model_convert
from .model import umd2
from .motion import convert as motion_convert
from .motion import uani


def _stem(path: str) -> str:
    return os.path.splitext(os.path.basename(path))[0]


def load_model(path: str, data: bytes, with_animations: bool, motions: Iterable[str] = ()):
    """The model as a core Scene; `motions` (.ani files, e.g. an output folder's Animations/) mapped onto its
    skeleton with the model's axes."""
    scene, warnings = model_convert.to_scene(umd2.read(data), _stem(path), "auto")
    if with_animations:
        profile = scene.extras.get("urho", {}).get("profile", "urhox")
        roots = {b.name for b in scene.skeleton.bones if b.parent < 0} if scene.skeleton else set()
        for motion in motions:
            anim, more = motion_convert.to_core(uani.read(read_bytes(motion)), _stem(motion), profile, roots)
            scene.animations.append(anim)
            warnings += [f"{os.path.basename(motion)}: {w}" for w in more]
    return scene, warnings


def load_animation(path: str, data: bytes, with_animations: bool, motions: Iterable[str] = ()):
    """A `.ani` alone, as a core Scene with no skeleton and one animation (for comparing two motions): read
    with the axes its variant implies, the first track taken as the root."""
    anim = uani.read(data)
    profile = "urho3d" if anim.variant != uani.VARIANT_URHOX else "urhox"
    roots = {anim.tracks[0].name} if anim.tracks else set()
    core_anim, warnings = motion_convert.to_core(anim, _stem(path), profile, roots)
    return cm.Scene(name=_stem(path), animations=[core_anim]), warnings


def write_scene(scene, folder: str, name: str) -> list[str]:
    """The core Scene as files without Blender (benchmarks, tests): NAME.mdl under the urho3d profile (255 bones
    per geometry) and one classic `.ani` per animation."""
    model, _ = model_convert.from_scene(scene, "urho3d", max_bones=255)
    paths = [os.path.join(folder, name + ".mdl")]
    write_atomic(paths[0], umd2.write(model))
    roots = {b.name for b in scene.skeleton.bones if b.parent < 0} if scene.skeleton else set()
    for anim in scene.animations:
        records, _ = motion_convert.from_core(anim, "urho3d", "urho3d", roots)
        paths.append(os.path.join(folder, anim.name + ".ani"))
        write_atomic(paths[-1], uani.write(records))
    return paths
