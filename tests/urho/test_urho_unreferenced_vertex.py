"""Issue 29, item 4: a vertex no primitive references (HoverBike has one inside its buffer) survives import and
export in its place, so the indices after it do not shift and an unchanged model comes back byte-identical."""
from __future__ import annotations

import numpy as np
import pytest

from skinbridge.io_urhox.model import umd2

pytestmark = pytest.mark.blender


def _with_unreferenced(testdata, at: int) -> bytes:
    """Box.mdl with one more vertex at `at` (inside the box, so its bounds stay), used by no triangle."""
    m = umd2.read((testdata / "urho3d" / "Box.mdl").read_bytes())
    vb = m.vertex_buffers[0]
    extra = vb.vertices[:1].copy()
    extra["POSITION0"] *= 0.5
    vb.vertices = np.concatenate([vb.vertices[:at], extra, vb.vertices[at:]])
    ib = m.index_buffers[0]
    idx = ib.indices.astype(np.int64)
    idx[idx >= at] += 1
    ib.indices = idx.astype(ib.indices.dtype)
    assert at not in set(ib.indices.tolist())
    return umd2.write(m)


@pytest.mark.parametrize("at", [10, 24])
def test_an_unreferenced_vertex_keeps_its_place(addon, testdata, tmp_path, at):
    from skinbridge.app import pipeline  # imports bpy: after the addon fixture set the user folder

    src = tmp_path / "box.mdl"
    src.write_bytes(_with_unreferenced(testdata, at))
    written, _ = pipeline.convert_file(str(src), str(tmp_path / "out"), "box",
                                       pipeline.ConvertOptions(target="urhox", profile="urho3d"))
    [out] = [p for p in written if p.endswith(".mdl")]
    assert open(out, "rb").read() == src.read_bytes()
