"""The house in layers (docs/architecture.md §1–§3, README "Layout"): every module of the add-on is parsed
and each import is checked to go down, never up a layer and never from one format package into another.

    core ← blender ← io_* (format packages) ← formats ← app, cli ← __init__ (registration)
"""
from __future__ import annotations

import ast
import contextlib
import pathlib

import pytest
from support import house

ROOT = pathlib.Path(__file__).resolve().parents[2]
NOT_ADDON = {"tests", "bench", "tools", ".venv", ".git", ".ci", "dist", "node_modules"}


def _layer(top: str) -> int | None:
    """The layer of a top-level name of the package (None: not part of the add-on, e.g. a stdlib name)."""
    if top == "core":
        return 0
    if top == "blender":
        return 1
    if top.startswith("io_"):
        return 2
    if top == "formats":
        return 3
    if top in ("app", "cli"):
        return 4
    if top == "__init__":
        return 5
    return None


def _modules(root: pathlib.Path = ROOT) -> list[pathlib.Path]:
    out = []
    for py in sorted(root.rglob("*.py")):
        rel = py.relative_to(root)
        if rel.parts[0] in NOT_ADDON or rel.parts[0].startswith(".venv"):
            continue
        out.append(rel)
    return out


def _package_parts(rel: pathlib.PurePath) -> list[str]:
    parts = list(rel.with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
        return parts  # a package: relative imports resolve against itself
    return parts[:-1]


def _imports(root: pathlib.Path, rel: pathlib.Path) -> list[tuple[int, str]]:
    """(line, top-level name within the package) of every import of the add-on's own modules."""
    tree = ast.parse((root / rel).read_text(encoding="utf-8"), str(rel))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = _package_parts(rel)
                base = base[: len(base) - (node.level - 1)] if node.level > 1 else base
                target = base + (node.module.split(".") if node.module else [])
                if not target:  # `from .. import name` at the top: the names are modules or __init__'s
                    out += [(node.lineno, alias.name) if _layer(alias.name) is not None
                            else (node.lineno, "__init__") for alias in node.names]
                else:
                    out.append((node.lineno, target[0]))
            elif node.module and node.module.split(".")[0] == "skinbridge":
                parts = node.module.split(".")[1:]
                out.append((node.lineno, parts[0] if parts else "__init__"))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == "skinbridge":
                    out.append((node.lineno, parts[1] if len(parts) > 1 else "__init__"))
    return out


def _violations(root: pathlib.Path = ROOT) -> list[str]:
    bad = []
    for rel in _modules(root):
        own = "__init__" if rel == pathlib.Path("__init__.py") else rel.with_suffix("").parts[0]
        own_layer = _layer(own)
        assert own_layer is not None, f"{rel}: a module outside the layers (core, blender, io_*, formats, app, cli)"
        for line, target in _imports(root, rel):
            layer = _layer(target)
            if layer is None or target == own:
                continue
            if layer > own_layer:
                bad.append(f"{rel}:{line}: {own} (layer {own_layer}) imports {target} (layer {layer}), a layer above")
            elif layer == own_layer == 2 and target != own:
                bad.append(f"{rel}:{line}: format package {own} imports another format package, {target}")
    return bad


def test_imports_only_go_down():
    assert len(_modules()) > 50
    bad = _violations()
    assert not bad, "\n".join(bad)


def test_the_checker_sees_a_climbing_import(tmp_path):
    """The checker itself: a format module importing the application, and one importing another format."""
    fake = tmp_path / "io_fake"
    fake.mkdir()
    (fake / "__init__.py").write_text("")
    (fake / "up.py").write_text("from ..app import pipeline\nfrom ..io_urhox import umd2\nfrom ..core import model\n")
    bad = _violations(tmp_path)
    assert len(bad) == 2 and "layer above" in bad[0] and "another format package" in bad[1], bad


# -- inside a format package: parts import only downward, and bpy stays in the Blender parts -----------------
# (the checker lives in tests/support/house.py; each test below plants one violation in a temporary copy)


def test_parts_of_a_format_package_import_only_downward():
    assert house.parts_order(ROOT, "io_pmx"), "io_pmx declares its PARTS"
    bad = house.part_violations()
    assert not bad, "\n".join(bad)


def test_the_checker_sees_a_part_importing_upward(tmp_path):
    """A bpy-free part importing a Blender part, a lower part importing a higher one, and bpy in a codec."""
    pkg = tmp_path / "io_fake"
    for part in ("model", "motion", "blender_side"):
        (pkg / part).mkdir(parents=True)
        (pkg / part / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text('PARTS = ("model", "motion", "blender_side")\n')
    (pkg / "model" / "codec.py").write_text("from ..blender_side import blender_io\nfrom ..motion import keys\n"
                                            "import bpy\n")
    (pkg / "motion" / "keys.py").write_text("from ..model import codec\n")
    (pkg / "blender_side" / "blender_io.py").write_text("import bpy\nfrom ..model import codec\n")
    bad = house.part_violations(tmp_path)
    assert any("imports bpy outside" in b for b in bad), bad
    assert sum("a part above its own" in b for b in bad) == 2, bad
    assert any("a module without Blender imports io_fake.blender_side.blender_io" in b for b in bad), bad


def test_a_blender_part_holds_only_modules_named_for_blender(tmp_path):
    """Inside a Blender part (io_pmx/blender_side/) a module that imports bpy still needs a `blender_*.py` name."""
    pkg = tmp_path / "io_fake"
    (pkg / "blender_side").mkdir(parents=True)
    (pkg / "__init__.py").write_text('PARTS = ("blender_side",)\n')
    (pkg / "blender_side" / "__init__.py").write_text("")
    (pkg / "blender_side" / "physics.py").write_text("import bpy\n")
    (pkg / "blender_side" / "blender_physics.py").write_text("import bpy\n")
    bad = house.part_violations(tmp_path)
    assert bad == ["io_fake/blender_side/physics.py:1: imports bpy outside the Blender parts"], bad


# -- planted in a copy of this checkout: each kind of violation is seen where the tree itself is clean ----------

@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    return house.copy_tree(tmp_path_factory.mktemp("house") / "skinbridge")


@contextlib.contextmanager
def planted(tree: pathlib.Path, files: dict[str, str]):
    """`files` written into the copy for the block, removed again after it."""
    for rel, text in files.items():
        (tree / rel).write_text(text, encoding="utf-8")
    try:
        yield
    finally:
        for rel in files:
            (tree / rel).unlink()


def test_the_copy_is_clean(tree):
    assert not house.part_violations(tree) and not house.import_cycles(tree) and not _violations(tree)
    assert not house.parts_order(tree, "io_gltf"), "io_gltf is a flat package (the third case below)"


PLANTED = [  # (files planted, the checker, what it must report)
    ({"core/planted_a.py": "from . import planted_b\n",
      "core/planted_b.py": "from .planted_a import x  # noqa: F401\n"},
     house.import_cycles, [["core.planted_a", "core.planted_b"]]),
    ({"io_pmx/model/planted.py": "import skinbridge.io_pmx.rig.names\n"},
     house.part_violations, ["io_pmx/model/planted.py:1: imports io_pmx.rig.names, a part above its own"]),
    ({"io_gltf/planted.py": "from . import blender_io\n"},
     house.part_violations,
     ["io_gltf/planted.py:1: a module without Blender imports io_gltf.blender_io, a Blender module"]),
]


@pytest.mark.parametrize("files, checker, found", PLANTED, ids=["circle", "absolute climb", "flat bpy-free"])
def test_a_planted_violation_is_seen(tree, files, checker, found):
    with planted(tree, files):
        assert checker(tree) == found
    assert checker(tree) == [], "the copy is clean again"
