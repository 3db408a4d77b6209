"""Where and what the animation tests compare: the times to sample a clip at (its keys and points between them)
and the world positions of a mesh as Blender evaluates it at a time."""
from __future__ import annotations

import numpy as np


def sample_times(key_times: np.ndarray, fractions=(0.25, 0.5, 0.75)) -> np.ndarray:
    """The key times and, between each two, the points at `fractions` of the way."""
    k = np.asarray(key_times, np.float64)
    parts = [k] + [k[:-1] + f * np.diff(k) for f in fractions]
    return np.unique(np.concatenate(parts))


def evaluated_positions(ob, time: float, fps: float) -> np.ndarray:
    """World positions of the vertices of mesh object `ob` as Blender evaluates them at `time` seconds."""
    import bpy  # only here: sample_times needs no Blender

    frame = time * fps
    base = int(np.floor(frame))
    bpy.context.scene.frame_set(base, subframe=float(frame - base))
    ev = ob.evaluated_get(bpy.context.evaluated_depsgraph_get())
    m = ev.to_mesh()
    co = np.empty(len(m.vertices) * 3, np.float32)
    m.vertices.foreach_get("co", co)
    ev.to_mesh_clear()
    world = np.array(ob.matrix_world, dtype=np.float64)
    co = co.reshape(-1, 3).astype(np.float64)
    return co @ world[:3, :3].T + world[:3, 3]
