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
