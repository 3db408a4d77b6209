"""`skinbridge check FILE.pmx`: the semantic faults of `validate` (read from a file, so with offsets), the
reader's warnings, and whether the codec writes the file back byte-identical, naming the field of the first
difference (`check`: the pipeline of core/check.py with these steps)."""
from __future__ import annotations

import bisect
import dataclasses

import numpy as np

from ...core.check import Checker, Findings
from ...core import names
from ...core.findings import Finding
from . import pmx
from .pmx import PmxModel
from .validate import validate as _validate_records


def field_at(m: PmxModel, offset: int) -> str:
    """Name the field that holds byte `offset` of the file `m` was read from (best effort, for messages)."""
    marks: list[tuple[int, str]] = [(0, "magic"), (4, "version"), (8, "globals count"), (9, "globals")]
    marks += [(at, section) for section, at in m.at.items()]
    sections = (("material", m.materials), ("bone", m.bones), ("morph", m.morphs),
                ("display frame", m.display_frames), ("rigid body", m.rigid_bodies), ("joint", m.joints),
                ("soft body", m.soft_bodies))
    for label, items in sections:
        for i, item in enumerate(items):
            for name, at in item.at.items():
                marks.append((at, f"{label} {i} ({item.name}) {'name' if name == 'record' else name}"))
            links = item.ik.links if label == "bone" and item.ik else []
            for k, link in enumerate(links):
                for name, at in link.at.items():
                    marks.append((at, f"bone {i} ({item.name}) ik.links[{k}].{name}"))
    if m.vertex_offsets is not None and len(m.vertex_offsets):
        vo = m.vertex_offsets
        i = int(np.searchsorted(vo, offset, side="right")) - 1
        if 0 <= i < len(vo) and vo[0] <= offset < m.at.get("index count", offset + 1):
            layout = pmx.vertex_file_dtype(int(m.vertices["deform"][i]), m.additional_uvs, m.index_sizes.bone)
            inner = offset - int(vo[i])
            name = max((f for f in layout.names if layout.fields[f][1] <= inner), key=lambda f: layout.fields[f][1])
            return f"vertex {i} {name}"
    marks.sort()
    k = bisect.bisect_right([a for a, _ in marks], offset) - 1
    return marks[k][1] if k >= 0 else "?"


def validate(m: PmxModel) -> list[Finding]:
    """The reader's warnings (at the trailing bytes they are about), then every semantic fault."""
    out = Findings()
    out.warnings(m.warnings, m.at.get("trailing"))
    encoding = "UTF-8" if m.encoding == 1 else "UTF-16"
    out.items += names.findings([(f"bone {i}", b.name, b.at["record"] + 4 if "record" in b.at else None)
                                 for i, b in enumerate(m.bones)], "name", encoding)
    return out.items + _validate_records(m, for_export=False)


check = Checker(read=pmx.read, validate=validate, write=pmx.write, field_at=field_at)


@dataclasses.dataclass
class MorphView:
    """A morph as `skinbridge diff` walks it: its offsets under `values`, since diff leaves fields named
    `offsets` out (the byte offsets of other formats' records)."""
    name: str
    name_e: str
    panel: int
    kind: int
    values: np.ndarray


def diff_view(m: PmxModel) -> PmxModel:
    """What `skinbridge diff` walks of a PMX: the records, the morphs as `MorphView` (an edited bone morph
    then names its row and field: `morphs[3] (name).values[0]: translation`)."""
    return dataclasses.replace(m, morphs=[MorphView(x.name, x.name_e, x.panel, x.kind, x.offsets) for x in m.morphs])
