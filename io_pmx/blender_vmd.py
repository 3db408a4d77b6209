"""Compatibility names for code that still imports `io_pmx.blender_vmd` (the registry's motion loader, the
failure-injection table, `bench/run`): the VMD Blender code lives in modules by job, `blender_vmd_model`
(what the armature offers), `blender_vmd_curves` (F-curves), `blender_vmd_import`, `blender_vmd_export` and
`blender_vmd_retarget` (motions for a rigged PMX). Import from those; this module goes once nothing uses it.
"""
from __future__ import annotations

from .blender_vmd_export import export_actions, export_motion, export_vmd, motion_actions  # noqa: F401
from .blender_vmd_import import import_vmd, load_motion  # noqa: F401
from .blender_vmd_retarget import export_rigged_motion, export_target_motions, rig_rest  # noqa: F401
