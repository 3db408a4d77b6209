"""The house in layers (docs/architecture.md §1–§3, README "Layout"): every module of the add-on is parsed
and each import is checked to go down, never up a layer and never from one format package into another.

    core ← blender ← io_* (format packages) ← formats ← app, cli ← __init__ (registration)
"""
from __future__ import annotations

import ast
import pathlib

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

_BLENDER_MODULES = {"bpy", "bpy_extras", "mathutils", "bmesh", "gpu", "blf"}


def _parts_order(root: pathlib.Path, package: str) -> tuple[str, ...]:
    """The `PARTS` tuple a format package declares in its __init__.py (bottom part first), read without importing."""
    tree = ast.parse((root / package / "__init__.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "PARTS" for t in node.targets):
            return tuple(ast.literal_eval(node.value))
    return ()


def _part_level(parts: tuple[str, ...], rel: pathlib.PurePath) -> float:
    """A module's level inside its format package: the index of its part; a module directly in the package sits
    above every part but the Blender ones (it may use them all, and the Blender parts may use it)."""
    if len(rel.parts) > 2 and rel.parts[1] in parts:
        return parts.index(rel.parts[1])
    blender_parts = [i for i, p in enumerate(parts) if p.startswith("blender_")]
    return (min(blender_parts) if blender_parts else len(parts)) - 0.5


def _module_of_import(rel: pathlib.PurePath, node: ast.ImportFrom) -> list[str]:
    """The package-relative dotted targets of a relative import (a `from . import a, b` names modules a and b)."""
    base = _package_parts(rel)
    base = base[: len(base) - (node.level - 1)] if node.level > 1 else base
    target = base + (node.module.split(".") if node.module else [])
    if node.module:
        return [".".join(target)]
    return [".".join(target + [alias.name]) for alias in node.names]


def _bpy_allowed(rel: pathlib.PurePath) -> bool:
    """bpy may be imported by the bridge, the application and the entry points; inside a format package only by
    its operators (`ops.py`) and its `blender_*.py` modules, wherever they sit (a module's name says it needs
    Blender, also inside a Blender part such as io_pmx/blender_side/)."""
    if rel.parts[0] in ("blender", "app") or rel.parts[0] in ("cli.py", "__init__.py"):
        return True
    if not rel.parts[0].startswith("io_"):
        return False
    return rel.name == "ops.py" or rel.name.startswith("blender_")


def _part_violations(root: pathlib.Path = ROOT) -> list[str]:
    bad = []
    for rel in _modules(root):
        tree = ast.parse((root / rel).read_text(encoding="utf-8"), str(rel))
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                names = [node.module]
            if any(n.split(".")[0] in _BLENDER_MODULES for n in names) and not _bpy_allowed(rel):
                bad.append(f"{rel}:{node.lineno}: imports {names[0]} outside the Blender parts")
        package = rel.parts[0]
        if not package.startswith("io_") or rel.name == "__init__.py" and len(rel.parts) == 2:
            continue
        parts = _parts_order(root, package)
        if not parts:
            continue
        own = _part_level(parts, rel)
        for node in ast.walk(tree):
            if not (isinstance(node, ast.ImportFrom) and node.level):
                continue
            for target in _module_of_import(rel, node):
                pieces = target.split(".")
                if pieces[0] != package or len(pieces) < 2:
                    continue
                level = _part_level(parts, pathlib.PurePath(*pieces[:2], "x.py") if pieces[1] in parts
                                    else pathlib.PurePath(package, pieces[1] + ".py"))
                if level > own:
                    bad.append(f"{rel}:{node.lineno}: imports {target}, a part above its own")
    return bad


def test_parts_of_a_format_package_import_only_downward():
    assert _parts_order(ROOT, "io_pmx"), "io_pmx declares its PARTS"
    bad = _part_violations()
    assert not bad, "\n".join(bad)


def test_the_checker_sees_a_part_importing_upward(tmp_path):
    """A bpy-free part importing a Blender part, a lower part importing a higher one, and bpy in a codec."""
    pkg = tmp_path / "io_fake"
    for part in ("model", "motion", "blender_side"):
        (pkg / part).mkdir(parents=True)
        (pkg / part / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text('PARTS = ("model", "motion", "blender_side")\n')
    (pkg / "model" / "codec.py").write_text("from ..blender_side import ops\nfrom ..motion import keys\nimport bpy\n")
    (pkg / "motion" / "keys.py").write_text("from ..model import codec\n")
    (pkg / "blender_side" / "ops.py").write_text("import bpy\nfrom ..model import codec\n")
    bad = _part_violations(tmp_path)
    assert len(bad) == 3, bad
    assert any("imports bpy outside" in b for b in bad)
    assert sum("a part above its own" in b for b in bad) == 2


def test_a_blender_part_holds_only_modules_named_for_blender(tmp_path):
    """Inside a Blender part (io_pmx/blender_side/) a module that imports bpy still needs a `blender_*.py` name."""
    pkg = tmp_path / "io_fake"
    (pkg / "blender_side").mkdir(parents=True)
    (pkg / "__init__.py").write_text('PARTS = ("blender_side",)\n')
    (pkg / "blender_side" / "__init__.py").write_text("")
    (pkg / "blender_side" / "physics.py").write_text("import bpy\n")
    (pkg / "blender_side" / "blender_physics.py").write_text("import bpy\n")
    bad = _part_violations(tmp_path)
    assert bad == ["io_fake/blender_side/physics.py:1: imports bpy outside the Blender parts"], bad
