"""Custom properties holding JSON: how the bridge and the format packages keep a file's exact values on Blender
data (a bone's bind, an action's kept keys, a packet's raw fields) so that they survive a save and reload."""
from __future__ import annotations

import json

# On an object that is model data of its own (a rigid body's collision shape, a joint), never a mesh to export:
# set by the format package that builds it; the bridge only reads it.
MODEL_DATA_PROP = "skinbridge_model_data"


def json_prop(idblock, prop: str) -> dict:
    """A JSON object kept in a custom property ({} when absent, unreadable or not an object)."""
    raw = idblock.get(prop) if idblock is not None else None
    if not raw:
        return {}
    try:
        data = json.loads(raw)
    except (TypeError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}
