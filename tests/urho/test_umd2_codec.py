"""UMD2/UMDL codec without Blender: byte-identical round trips and bad input."""
from __future__ import annotations

import copy
import time

import numpy as np
import pytest

from skinbridge.core.errors import FormatError
from skinbridge.io_urhox.model import convert, umd2

from support.umd2_samples import posed_umd2
from support.bytes_compare import assert_same_bytes

URHO_SAMPLES = ["MaterialPreview.mdl", "Ninja.mdl", "Box.mdl", "Mushroom.mdl", "UnitX.mdl"]


@pytest.mark.parametrize("name", URHO_SAMPLES)
def test_samples_write_back_byte_identical(testdata, name):
    data = (testdata / "urho3d" / name).read_bytes()
    assert_same_bytes(umd2.write(umd2.read(data)), data, umd2.read)


@pytest.mark.blender
def test_fox_we_wrote_writes_back_byte_identical(fox_mdl):
    data = fox_mdl.read_bytes()
    assert_same_bytes(umd2.write(umd2.read(data)), data, umd2.read)


def test_material_preview_counts(testdata):
    """Counts from the testdata README: UMD2 static, 2 geometries, COLOR UBYTE4_NORM, TANGENT VECTOR4."""
    m = umd2.read((testdata / "urho3d" / "MaterialPreview.mdl").read_bytes())
    assert m.magic == "UMD2" and len(m.geometries) == 2 and not m.bones
    kinds = {(e.semantic_name, umd2.ELEMENT_TYPES[e.type][0]) for e in m.vertex_buffers[0].elements}
    assert ("COLOR", "UBYTE4_NORM") in kinds and ("TANGENT", "VECTOR4") in kinds


def test_ninja_bones_and_collision_masks(testdata):
    """README: Ninja is UMDL skinned, 28 bones, 2 geometries, collision masks 0 and 3."""
    m = umd2.read((testdata / "urho3d" / "Ninja.mdl").read_bytes())
    assert m.magic == "UMDL" and len(m.bones) == 28 and len(m.geometries) == 2
    assert {b.collision_mask for b in m.bones} == {0, 3}
    assert all((b.radius is not None) == bool(b.collision_mask & 1) for b in m.bones)


def test_missing_geometry_centers_read_with_a_warning(testdata):
    m = umd2.read((testdata / "urho3d" / "UnitX.mdl").read_bytes())
    assert len(m.centers) == 0 and any("geometry centers" in w for w in m.warnings)


def test_generated_model_round_trips():
    m = posed_umd2()
    data = umd2.write(m)
    assert_same_bytes(umd2.write(umd2.read(data)), data, umd2.read)


def test_semantic_faults_are_kept_by_the_reader_and_refused_by_the_mapping():
    m = posed_umd2()
    m.bones[2].parent = 99  # out of range: kept by the codec
    data = umd2.write(m)
    again = umd2.read(data)
    assert again.bones[2].parent == 99
    assert_same_bytes(umd2.write(again), data, umd2.read)
    with pytest.raises(FormatError, match="bone 2 .neck. parent"):
        convert.to_scene(again)
    m = posed_umd2()
    m.bones[4].parent, m.bones[2].parent = 2, 4  # spine ↔ neck cycle
    with pytest.raises(FormatError, match="cycle"):
        convert.to_scene(umd2.read(umd2.write(m)))


def test_structural_faults_name_offset_and_field():
    data = bytearray(umd2.write(posed_umd2()))
    data[8:12] = (10**6).to_bytes(4, "little")  # vertex count of VB 0, far beyond the file
    with pytest.raises(FormatError) as e:
        umd2.read(bytes(data))
    assert e.value.offset == 8 and "vertex buffer 0 vertex count" in str(e.value)
    with pytest.raises(FormatError, match="offset 0 .*magic"):
        umd2.read(b"UMDX" + bytes(40))
    with pytest.raises(FormatError, match="needs 4 bytes"):
        umd2.read(b"UMD2")


def _samples(testdata, fox_mdl):
    out = {n: (testdata / "urho3d" / n).read_bytes() for n in URHO_SAMPLES}
    out["Fox.mdl"] = fox_mdl.read_bytes()
    out["posed.mdl"] = umd2.write(posed_umd2())
    return out


def _read_or_format_error(data: bytes) -> None:
    try:
        m = umd2.read(data)
    except FormatError:
        return
    try:
        convert.to_scene(m)
    except FormatError:
        pass


@pytest.mark.blender
@pytest.mark.slow
def test_truncations_and_byte_flips_read_or_raise_format_error(testdata, fox_mdl):
    """Every 1/64 truncation and 1,000 random byte flips per sample: read, or FormatError; never another
    exception, a hang or more than 256 MiB."""
    from support.forked import run_forked

    def run() -> float:
        rng = np.random.default_rng(2026)
        slowest = 0.0
        for name, data in _samples(testdata, fox_mdl).items():
            cases = [data[: len(data) * k // 64] for k in range(64)]
            for _ in range(1000):
                b = bytearray(data)
                for pos in rng.integers(0, len(b), rng.integers(1, 5)):
                    b[pos] = int(rng.integers(0, 256))
                cases.append(bytes(b))
            for case in cases:
                t = time.perf_counter()
                _read_or_format_error(case)
                slowest = max(slowest, time.perf_counter() - t)
        return slowest

    slowest, grown = run_forked(run)  # the child's own peak: earlier tests' memory does not hide it
    assert grown < 256 << 20
    assert slowest < 2.0


def test_an_added_mesh_that_cannot_fill_the_files_elements_is_said(testdata):
    """A mesh added beside an imported one (no file values) without the UVs the file's TEXCOORD element needs:
    the vertex layout is computed again and a warning says so (the imported mesh alone keeps the file's)."""
    model = umd2.read((testdata / "urho3d" / "Box.mdl").read_bytes())
    scene, _ = convert.to_scene(model, "Box", "urho3d")
    alone, warnings = convert.from_scene(scene, "urho3d")
    assert [e.descriptor for e in alone.vertex_buffers[0].elements] == \
        [e.descriptor for e in model.vertex_buffers[0].elements] and not warnings
    added = copy.deepcopy(scene.meshes[0])
    added.name, added.extras, added.uvs = "Added", {}, []
    scene.meshes.append(added)
    _, warnings = convert.from_scene(scene, "urho3d")
    said = "Added: added in Blender without what the file's vertex elements need"
    assert any(w.startswith(said) for w in warnings), warnings
