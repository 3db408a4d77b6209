"""The house rules' checkers over a tree of the add-on (docs/testing.md §3): what tests/core runs on the
repository and on a temporary copy with one violation planted. No bpy."""
from __future__ import annotations

import ast
import pathlib
import shutil

ROOT = pathlib.Path(__file__).resolve().parents[2]
NOT_ADDON = {"tests", "bench", "tools", ".git", ".ci", "dist", "node_modules", "skinbridge-demo", "docs", "i18n"}
BLENDER_MODULES = {"bpy", "bpy_extras", "mathutils", "bmesh", "gpu", "blf"}


def addon_modules(root: pathlib.Path = ROOT) -> list[pathlib.Path]:
    """Every module of the add-on below `root`, relative to it (tests, benchmarks and tools are not the add-on)."""
    out = []
    for py in sorted(root.rglob("*.py")):
        rel = py.relative_to(root)
        if rel.parts[0] in NOT_ADDON or any(p.startswith(".venv") for p in rel.parts):
            continue
        out.append(rel)
    return out


def copy_tree(dst: pathlib.Path, root: pathlib.Path = ROOT) -> pathlib.Path:
    """A copy of the checkout's sources (no venvs, no git, no npm packages) in `dst`, to plant a violation in."""
    skip = shutil.ignore_patterns(".venv*", ".git", "node_modules", "__pycache__", "skinbridge-demo", "dist")
    shutil.copytree(root, dst, ignore=skip, symlinks=True)
    return dst


def module_name(rel: pathlib.PurePath) -> str:
    """The dotted name of a module inside the package (`io_pmx.model.pmx`; a package is its folder's name)."""
    parts = list(rel.with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts) or "__init__"


def _is_package(rel: pathlib.PurePath) -> bool:
    return rel.name == "__init__.py"


def imported_modules(rel: pathlib.PurePath, node: ast.AST, known: set[str]) -> list[str]:
    """The add-on modules (dotted, inside the package) an import statement of module `rel` names; a `from X import
    y` names X and, where y is a module of the add-on, X.y. Absolute `skinbridge.` imports count as well."""
    out: list[str] = []
    if isinstance(node, ast.Import):
        for alias in node.names:
            parts = alias.name.split(".")
            if parts[0] == "skinbridge":
                out.append(".".join(parts[1:]) or "__init__")
        return out
    if not isinstance(node, ast.ImportFrom):
        return out
    if node.level:
        base = module_name(rel).split(".") if _is_package(rel) else module_name(rel).split(".")[:-1]
        if module_name(rel) == "__init__":
            base = []
        base = base[: len(base) - (node.level - 1)] if node.level > 1 else base
        target = base + (node.module.split(".") if node.module else [])
    elif node.module and node.module.split(".")[0] == "skinbridge":
        target = node.module.split(".")[1:]
    else:
        return out
    name = ".".join(target) or "__init__"
    out.append(name)
    for alias in node.names:
        sub = f"{name}.{alias.name}" if target else alias.name
        if sub in known:
            out.append(sub)
    return out


def top_level_imports(tree: ast.Module) -> list[ast.AST]:
    """Imports that run when the module is imported: those outside function bodies."""
    out: list[ast.AST] = []

    def visit(node):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                continue
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                out.append(child)
            visit(child)

    visit(tree)
    return out


def import_graph(root: pathlib.Path = ROOT) -> dict[str, set[str]]:
    """Module → the add-on modules it imports when it is imported (the package __init__ of an imported module
    is not an edge: Python runs it first, but it imports nothing of its parts here)."""
    mods = addon_modules(root)
    known = {module_name(m) for m in mods}
    graph: dict[str, set[str]] = {}
    for rel in mods:
        tree = ast.parse((root / rel).read_text(encoding="utf-8"), str(rel))
        own = module_name(rel)
        graph[own] = {m for node in top_level_imports(tree) for m in imported_modules(rel, node, known)
                      if m in known and m != own}
    return graph


def import_cycles(root: pathlib.Path = ROOT) -> list[list[str]]:
    """Every circle of module-level imports (each once, starting at its smallest name)."""
    graph = import_graph(root)
    cycles: set[tuple[str, ...]] = set()
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                loop = stack[stack.index(nxt):]
                i = loop.index(min(loop))
                cycles.add(tuple(loop[i:] + loop[:i]))
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)
    return [list(c) for c in sorted(cycles)]


def bpy_allowed(rel: pathlib.PurePath) -> bool:
    """bpy may be imported by the bridge, the application and the entry points; inside a format package only by
    its operators (`ops.py`) and its `blender_*.py` modules, wherever they sit (a module's name says it needs
    Blender)."""
    if rel.parts[0] in ("blender", "app") or rel.parts[0] in ("cli.py", "__init__.py"):
        return True
    if not rel.parts[0].startswith("io_"):
        return False
    return rel.name == "ops.py" or rel.name.startswith("blender_")


def _path_of(name: str, known: dict[str, pathlib.PurePath]) -> pathlib.PurePath | None:
    return known.get(name)


def parts_order(root: pathlib.Path, package: str) -> tuple[str, ...]:
    """The `PARTS` tuple a format package declares in its __init__.py (bottom part first), read without importing."""
    init = root / package / "__init__.py"
    if not init.is_file():
        return ()
    for node in ast.parse(init.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "PARTS" for t in node.targets):
            return tuple(ast.literal_eval(node.value))
    return ()


def part_level(parts: tuple[str, ...], rel: pathlib.PurePath) -> float:
    """A module's level inside its format package: the index of its part; a module directly in the package sits
    above every part but the Blender ones (it may use them all, and the Blender parts may use it)."""
    if len(rel.parts) > 2 and rel.parts[1] in parts:
        return parts.index(rel.parts[1])
    blender_parts = [i for i, p in enumerate(parts) if p.startswith("blender_")]
    return (min(blender_parts) if blender_parts else len(parts)) - 0.5


def part_violations(root: pathlib.Path = ROOT) -> list[str]:
    """bpy outside the Blender modules; a bpy-free module importing a Blender one (it would load bpy with it);
    a part importing a part above its own, by a relative or an absolute (`skinbridge.`) import."""
    mods = addon_modules(root)
    known = {module_name(m): m for m in mods}
    bad = []
    for rel in mods:
        tree = ast.parse((root / rel).read_text(encoding="utf-8"), str(rel))
        package = rel.parts[0]
        parts = parts_order(root, package) if package.startswith("io_") else ()
        in_part = not (rel.name == "__init__.py" and len(rel.parts) == 2)
        for node in ast.walk(tree):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module] if node.module and not node.level else []
            if any(n.split(".")[0] in BLENDER_MODULES for n in names) and not bpy_allowed(rel):
                bad.append(f"{rel}:{node.lineno}: imports {names[0]} outside the Blender parts")
            targets = imported_modules(rel, node, set(known))
            # `from .part import module` names the part's package and the module: the module speaks for both
            targets = [t for t in targets if not any(o.startswith(t + ".") for o in targets)]
            for target in targets:
                path = known.get(target)
                if path is None or path == rel:
                    continue
                if not bpy_allowed(rel) and bpy_allowed(path) and path.name != "__init__.py":
                    bad.append(f"{rel}:{node.lineno}: a module without Blender imports {target}, a Blender module")
                if parts and in_part and path.parts[0] == package and len(path.parts) > 1 \
                        and not (path.name == "__init__.py" and len(path.parts) == 2) \
                        and part_level(parts, path) > part_level(parts, rel):
                    bad.append(f"{rel}:{node.lineno}: imports {target}, a part above its own")
    return sorted(set(bad))


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def private_name_uses(root: pathlib.Path = ROOT) -> list[str]:
    """`file:line: what` for each use of another add-on module's private name: `from .m import _x`, or `m._x`
    where `m` is an add-on module the file imported (the standard library's are not ours to judge)."""
    mods = addon_modules(root)
    known = {module_name(m) for m in mods}
    bad = []
    for rel in mods:
        tree = ast.parse((root / rel).read_text(encoding="utf-8"), str(rel))
        ours: set[str] = set()  # local names bound to modules of the add-on
        for node in ast.walk(tree):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            targets = imported_modules(rel, node, known)
            if not targets:
                continue
            if isinstance(node, ast.ImportFrom):
                for alias in node.names:
                    if _private(alias.name):
                        bad.append(f"{rel}:{node.lineno}: from {'.' * node.level}{node.module or ''} import "
                                   f"{alias.name}")
                    if f"{targets[0]}.{alias.name}" in known or alias.name in known:
                        ours.add(alias.asname or alias.name)
            else:
                ours.update((a.asname or a.name).split(".")[0] for a in node.names)
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and _private(node.attr) and isinstance(node.value, ast.Name) \
                    and node.value.id in ours:
                bad.append(f"{rel}:{node.lineno}: {node.value.id}.{node.attr}")
    return sorted(set(bad))


def _holder_name(node) -> str:
    """The name an extras mapping is reached by: `x.extras`, `extras`, `bone_extras(b)`, `(t.extras or {})`."""
    if isinstance(node, ast.BoolOp):
        return _holder_name(node.values[0])
    if isinstance(node, ast.Call):
        return _holder_name(node.func)
    return getattr(node, "attr", None) or getattr(node, "id", None) or ""


def extras_keys(root: pathlib.Path = ROOT) -> dict[str, set[str]]:
    """Each string key read or written on an `extras` mapping (`x.extras["k"]`, `extras.get("k")`, ...) → the
    top-level folders (io_pmx, core, app, ...) whose modules name it."""
    out: dict[str, set[str]] = {}
    for rel in addon_modules(root):
        for node in ast.walk(ast.parse((root / rel).read_text(encoding="utf-8"), str(rel))):
            holder = key = None
            if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
                holder, key = node.value, node.slice.value
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args \
                    and node.func.attr in ("get", "setdefault", "pop") and isinstance(node.args[0], ast.Constant):
                holder, key = node.func.value, node.args[0].value
            named = _holder_name(holder)
            if isinstance(key, str) and named.endswith("extras"):
                out.setdefault(key, set()).add(rel.parts[0])
    return out


def core_keys(root: pathlib.Path = ROOT) -> set[str]:
    """The extras keys the core defines for every format: its module constants `NAME_KEY = "text"`."""
    out = set()
    for py in sorted((root / "core").glob("*.py")):
        for node in ast.parse(py.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) \
                    and isinstance(node.value.value, str) and any(
                        getattr(t, "id", "").endswith("_KEY") for t in node.targets):
                out.add(node.value.value)
    return out


def foreign_extras(root: pathlib.Path = ROOT) -> list[str]:
    """Extras keys of one format package that a module outside it names: `key: folders`. The keys the core
    defines (`core_keys`) are every format's."""
    found = []
    shared_by_core = core_keys(root)
    for key, folders in sorted(extras_keys(root).items()):
        if key in shared_by_core:
            continue
        packages = {f for f in folders if f.startswith("io_")}
        shared = folders - packages
        if len(packages) == 1 and shared:
            found.append(f"{key}: {next(iter(packages))} and {', '.join(sorted(shared))}")
    return found
