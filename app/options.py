"""Options of `convert`, shared by the command line (without bpy) and the Blender pipeline."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class ConvertOptions:
    target: str = "urhox"
    profile: str = "urhox"
    max_bones: int = 64
    deform_only: bool = False
    ani_format: str = "urhox"
    motions: list[str] = field(default_factory=list)
    protected: set[str] = field(default_factory=set)  # real paths of the inputs: never written
    # --- PMX: MMD control rig (io_pmx/mmd_rig.py) ---
    mmd_rig: bool = False  # --mmd-rig: add 全ての親 ... 足ＩＫ to the armature
    bone_map: str | None = None  # --bone-map FILE.json: {"source bone": "MMD name" or null}
    arm_angle: float = 0.0  # --arm-angle θ: degrees the upper arms turn down about +Y before export
    # --- end PMX MMD control rig ---
    name: str | None = None  # -n/--name: the model's name as the user gave it (written into files that name it)
    import_profile: str | None = None  # axes of an imported UrhoX model (None: as the file implies)
    scale: float | None = None  # --scale: units per metre of the written file, where the target has units
    skeleton: str | None = None  # --skeleton NAME: the skeleton a skinned target file names (NWN2 MDB)
    limit_weights: bool = False  # --limit-weights: keep 4 weights a vertex, renormalised (NWN2 MDB)
