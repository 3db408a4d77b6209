"""The house in layers (DESIGN.md, README "Layout"): every module of the add-on is parsed and each import is
checked to go down, never up a layer and never from one format package into another.

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
