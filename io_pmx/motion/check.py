"""`skinbridge check FILE.vmd`: non-finite key values (with the offset and field of each), the reader's
warnings, and whether the codec writes the file back byte-identical (`check`: the pipeline of core/check.py
with these steps)."""
from __future__ import annotations

import numpy as np

from ...core.check import Checker, Findings
from ...core.findings import Finding
from . import vmd

# group label, keys attribute, the float fields that must be finite
_GROUPS = (("bone key", "bone_keys", ("position", "rotation")), ("morph key", "morph_keys", ("weight",)),
           ("camera key", "camera_keys", ("distance", "position", "rotation")),
           ("light key", "light_keys", ("color", "direction")), ("self-shadow key", "shadow_keys", ("distance",)))
# tail_groups a file needs to hold the group at that position of _GROUPS (the first two are always there)
_NEEDED = (vmd.TAIL_NONE, vmd.TAIL_NONE, vmd.TAIL_CAMERA_LIGHT, vmd.TAIL_CAMERA_LIGHT, vmd.TAIL_SHADOW)


def _key_label(label: str, keys: np.ndarray, k: int) -> str:
    who = f" ({vmd.decode_name(bytes(keys['name'][k]))})" if "name" in keys.dtype.names else ""
    return f"{label} {k}{who} frame {int(keys['frame'][k])}"


def non_finite_findings(m: vmd.Motion) -> list[Finding]:
    """One error per key whose float field holds NaN or infinity, at the field's offset in the file."""
    out = Findings()
    at = vmd.SIGNATURE_SIZE + vmd.MODEL_NAME_SIZE
    for (label, attr, fields), needed in zip(_GROUPS, _NEEDED):
        if m.tail_groups < needed:
            break
        keys = getattr(m, attr)
        first = at + 4  # after the group's key count
        size = keys.dtype.itemsize
        for name in fields if len(keys) else ():
            values = np.asarray(keys[name], np.float64).reshape(len(keys), -1)
            rel = keys.dtype.fields[name][1]
            out.rows("error", ~np.isfinite(values).all(axis=1), lambda k: _key_label(label, keys, k),
                     lambda k: first + k * size + rel, name, lambda k: "value is not finite (NaN or infinity)")
        at = first + len(keys) * size
    return out.items


def validate(m: vmd.Motion) -> list[Finding]:
    """The reader's warnings, then the non-finite keys."""
    out = Findings()
    out.warnings(m.warnings)
    return out.items + non_finite_findings(m)


check = Checker(read=vmd.read, validate=validate, write=vmd.write)
