"""One option for the written unit: File › Export's `units_per_metre` and `convert --to pmx --units-per-metre`
(the same `Option` of the pmx spec) reach the same writer, so that both give the same bytes; its earlier id
`scale` still sets it on the operator, and 0 (the operator's start) writes in the model's own import unit."""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.blender

LUKA = "mmdtools_megurine_luka.pmx"


@pytest.fixture
def luka(clean_scene, testdata):
    import bpy

    from skinbridge import formats
    from skinbridge.app.options import ConvertOptions

    formats.get("pmx").get("blender_import")(bpy.context, str(testdata / "pmx" / LUKA), ConvertOptions(target="pmx"))
    return bpy.context


def _heights(path) -> float:
    from skinbridge.io_pmx.model import pmx

    y = pmx.read(path.read_bytes()).vertices["position"][:, 1]
    return float(y.max() - y.min())


def test_the_operator_and_convert_write_the_same_bytes(luka, tmp_path):
    import bpy

    from skinbridge import formats
    from skinbridge.app.options import ConvertOptions

    by_operator = tmp_path / "operator" / "luka.pmx"
    by_operator.parent.mkdir()
    assert bpy.ops.export_scene.skinbridge_pmx(filepath=str(by_operator), units_per_metre=10.0) == {"FINISHED"}
    written, _ = formats.get("pmx").get("export_target")(luka, str(tmp_path / "convert"), "luka",
                                                         ConvertOptions(target="pmx", units_per_metre=10.0))
    by_convert = tmp_path / "convert" / "luka.pmx"
    assert str(by_convert) == written[0]
    assert by_operator.read_bytes() == by_convert.read_bytes()


def test_the_earlier_id_and_the_model_unit(luka, tmp_path):
    import bpy

    paths = {name: tmp_path / f"{name}.pmx" for name in ("new", "old", "own", "default")}
    op = bpy.ops.export_scene.skinbridge_pmx
    assert op(filepath=str(paths["new"]), units_per_metre=10.0) == {"FINISHED"}
    assert op(filepath=str(paths["old"]), scale=10.0) == {"FINISHED"}
    assert op(filepath=str(paths["own"]), units_per_metre=0.0) == {"FINISHED"}
    assert op(filepath=str(paths["default"])) == {"FINISHED"}
    assert paths["old"].read_bytes() == paths["new"].read_bytes()
    assert paths["own"].read_bytes() == paths["default"].read_bytes() != paths["new"].read_bytes()
    # imported at MMD's 8 cm (12.5 units per metre): written at 10, the model is 10/12.5 as tall
    assert _heights(paths["new"]) == pytest.approx(_heights(paths["own"]) * 10.0 / 12.5, rel=1e-5)
