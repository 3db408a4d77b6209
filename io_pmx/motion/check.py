"""`skinbridge check FILE.vmd`: non-finite key values (with the offset and field of each), the reader's
warnings, and whether the codec writes the file back byte-identical."""
from __future__ import annotations

from typing import Callable

import numpy as np

from ...core.errors import FormatError
from ...core.findings import Finding, first_difference
from . import vmd

MAX_PER_FIELD = 10  # faulty keys listed one by one per group and field before a summary line

# group label, keys attribute, the float fields that must be finite
_GROUPS = (("bone key", "bone_keys", ("position", "rotation")), ("morph key", "morph_keys", ("weight",)),
           ("camera key", "camera_keys", ("distance", "position", "rotation")),
           ("light key", "light_keys", ("color", "direction")), ("self-shadow key", "shadow_keys", ("distance",)))
# tail_groups a file needs to hold the group at that position of _GROUPS (the first two are always there)
_NEEDED = (vmd.TAIL_NONE, vmd.TAIL_NONE, vmd.TAIL_CAMERA_LIGHT, vmd.TAIL_CAMERA_LIGHT, vmd.TAIL_SHADOW)


def non_finite_findings(m: vmd.Motion) -> list[Finding]:
    """One error per key whose float field holds NaN or infinity, at the field's offset in the file."""
    findings: list[Finding] = []
    at = vmd.SIGNATURE_SIZE + vmd.MODEL_NAME_SIZE
    for (label, attr, fields), needed in zip(_GROUPS, _NEEDED):
        if m.tail_groups < needed:
            break
        keys = getattr(m, attr)
        first = at + 4  # after the group's key count
        size = keys.dtype.itemsize
        for name in fields if len(keys) else ():
            values = np.asarray(keys[name], np.float64).reshape(len(keys), -1)
            bad = np.flatnonzero(~np.isfinite(values).all(axis=1))
            for k in bad[:MAX_PER_FIELD]:
                who = f" ({vmd.decode_name(bytes(keys['name'][k]))})" if "name" in keys.dtype.names else ""
                findings.append(Finding("error", f"{label} {k}{who} frame {int(keys['frame'][k])}",
                                        first + int(k) * size + keys.dtype.fields[name][1], name,
                                        "value is not finite (NaN or infinity)"))
            if len(bad) > MAX_PER_FIELD:
                k = int(bad[MAX_PER_FIELD])
                findings.append(Finding("error", f"{label} {k}", first + k * size, name,
                                        f"and {len(bad) - MAX_PER_FIELD} more with the same fault"))
        at = first + len(keys) * size
    return findings


def check(path: str, data: bytes, out: Callable[[str], None] = print) -> int:
    """Print the findings of one VMD file through `out(line)`; 1 when there is an error finding, else 0."""
    findings: list[Finding] = []
    try:
        m = vmd.read(data)
    except FormatError as e:
        findings.append(Finding("error", "file", e.offset, e.field or "", str(e)))
        m = None
    if m is not None:
        findings += [Finding("warning", "file", None, "file", w) for w in m.warnings]
        findings += non_finite_findings(m)
    for f in findings:
        out(str(f))
    errors = sum(f.severity == "error" for f in findings)
    out(f"{errors} error(s), {len(findings) - errors} warning(s)")
    if m is None:
        out("roundtrip: not attempted (unreadable)")
    else:
        written = vmd.write(m)
        out("roundtrip: identical" if written == data else
            f"roundtrip: differs at offset {first_difference(data, written)}")
    return 1 if errors else 0
