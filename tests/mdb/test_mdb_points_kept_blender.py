"""Issue 29, NWN2: a HOOK whose orientation is not a rotation (sheared: Blender's object makes a rotation and
scale of it; two files of the public nwn2-override collection have such hooks) comes back byte-identical while
its empty is where import put it, and is written from Blender once moved."""
from __future__ import annotations

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from skinbridge.io_mdb.mdb import mdb  # noqa: E402

pytestmark = pytest.mark.blender

SHEARED = np.array([[1.0, 0.3, 0.0], [0.0, 1.0, 0.0], [0.2, 0.0, 0.9]], np.float32)


@pytest.fixture
def hooked(testdata, tmp_path):
    f = mdb.read((testdata / "mdb" / "ovr_w_rapr221_b.mdb").read_bytes())
    f.packets.append(mdb.PointPacket("HOOK", b"hp_0".ljust(32, b"\0"), 1, 0,
                                     np.array([0.1, 0.02, 0.5], np.float32), SHEARED.copy()))
    path = tmp_path / "hooked.mdb"
    path.write_bytes(mdb.write(f))
    return path


def _export(tmp_path, name: str) -> bytes:
    out = tmp_path / name
    assert bpy.ops.export_scene.skinbridge_mdb(filepath=str(out)) == {"FINISHED"}
    return out.read_bytes()


def test_a_sheared_hook_comes_back_byte_identical_until_moved(clean_scene, hooked, tmp_path):
    assert bpy.ops.import_scene.skinbridge_mdb(filepath=str(hooked)) == {"FINISHED"}
    assert _export(tmp_path, "same.mdb") == hooked.read_bytes()
    hook = next(o for o in bpy.data.objects if o.type == "EMPTY" and o.name.startswith("hp_0"))
    hook.location.z += 0.25
    bpy.context.view_layer.update()
    moved = [p for p in mdb.read(_export(tmp_path, "moved.mdb")).packets if isinstance(p, mdb.PointPacket)]
    assert len(moved) == 1 and abs(float(moved[0].position[2]) - 0.75) < 1e-5
    assert not np.array_equal(moved[0].orientation, SHEARED)  # written from Blender: a rotation, not the shear
