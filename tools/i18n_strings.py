"""Every string the add-on shows a user, and which of them the translation tables (`i18n/*.tsv`) lack.

    PYTHONPATH=<folder holding the skinbridge package> python tools/i18n_strings.py [--tsv]

Two sources (docs/blender.md §12):
* the registered classes: with the add-on registered, every operator, panel, menu, UI list, file handler and
  property group of the package (bl_label, bl_description or docstring, each property's name and description,
  each enum item's name and description), and the properties the add-on adds to Blender's own types;
* the code: the literal messages passed to `report`, `report_outcome`, `ExportError`, `translate`, the marker
  `N_` (core/i18n.py) and a layout's `text=`, and the File › Import / Export menu texts given to `registrar`
  (an f-string becomes a msgid with named placeholders: `f"{arm.name} has {n} bones"` -> `{name} has {n} bones`).

Prints the missing (context, English) pairs per language; with --tsv, one row per missing string ready to be
translated and appended to each table. Exits 1 when something is missing.
"""
from __future__ import annotations

import ast
import inspect
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
NOT_ADDON = {"tests", "bench", "tools", ".git", ".ci", "dist", "node_modules"}
NOT_SHOWN = {"cli.py"}  # the command line's messages are read in a terminal, in English
OPERATOR_CONTEXT = "Operator"  # Blender looks operator names up in this context, the rest in "*"
_MESSAGE_CALLS = {"report": 1, "report_outcome": 1, "ExportError": 0, "translate": 0, "N_": 0}
_BASES = ("Operator", "Panel", "Menu", "UIList", "FileHandler", "PropertyGroup", "AddonPreferences")
# bpy_extras' file browser properties: Blender's own strings, translated by Blender
HELPER_PROPERTIES = {"filepath", "filter_glob", "files", "directory", "check_existing", "filename_ext"}
_BLENDER_TYPES = ("Scene", "Object", "Armature", "Bone", "PoseBone", "EditBone", "Mesh", "Action", "Material",
                  "WindowManager", "Collection", "Key", "ShapeKey")


def _expr_name(node: ast.expr) -> str:
    """A placeholder's name for a formatted value: the last name it reads (`len(arm.bones)` -> `bones`)."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Call):
        if node.args:
            return _expr_name(node.args[0])
        return _expr_name(node.func)
    if isinstance(node, ast.Subscript):
        return _expr_name(node.value)
    if isinstance(node, ast.BinOp):
        return _expr_name(node.left)
    return "value"


def _texts(node: ast.expr) -> list[str]:
    """The msgids a string expression can give: a constant, an f-string with named placeholders, or each branch
    of a conditional (`f"{n} file{'s' if n != 1 else ''}"` gives `{n} file` and `{n} files`)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.IfExp):
        return _texts(node.body) + _texts(node.orelse)
    if not isinstance(node, ast.JoinedStr):
        return []
    variants, used = [""], {}
    for part in node.values:
        choices = [part.value] if isinstance(part, ast.Constant) else _part_variants(part.value, used)
        variants = [v + c for v in variants for c in choices]
    return variants


def _part_variants(node: ast.expr, used: dict[str, int]) -> list[str]:
    """What one formatted value of an f-string can put in the msgid: the texts of a string it chooses between
    (a conditional, `a or b`, a nested f-string), else a named placeholder."""
    if isinstance(node, ast.IfExp):
        return _part_variants(node.body, used) + _part_variants(node.orelse, used)
    if isinstance(node, ast.BoolOp):
        return [t for value in node.values for t in _part_variants(value, used)]
    if isinstance(node, (ast.Constant, ast.JoinedStr)) and _texts(node):
        return _texts(node)
    name = _expr_name(node)
    used[name] = used.get(name, 0) + 1
    return ["{" + (name if used[name] == 1 else f"{name}{used[name]}") + "}"]


def _call_name(node: ast.Call) -> str:
    return node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")


def code_messages(root: pathlib.Path = ROOT) -> dict[str, str]:
    """{msgid: "file:line"} of the messages and layout texts written in the add-on's code."""
    out: dict[str, str] = {}
    for py in sorted(root.rglob("*.py")):
        rel = py.relative_to(root)
        if NOT_ADDON & set(rel.parts) or any(p.startswith(".venv") for p in rel.parts) or str(rel) in NOT_SHOWN:
            continue
        for node in ast.walk(ast.parse(py.read_text(encoding="utf-8"), str(rel))):
            if not isinstance(node, ast.Call):
                continue
            args = []
            index = _MESSAGE_CALLS.get(_call_name(node))
            if index is not None and len(node.args) > index:
                args.append(node.args[index])
            args += [k.value for k in node.keywords if k.arg in ("text", "headline", "message")]
            for k in node.keywords:  # registrar's File › Import / Export entries: (operator, menu text) pairs
                if k.arg in ("imports", "exports") and isinstance(k.value, (ast.List, ast.Tuple)):
                    args += [e.elts[1] for e in k.value.elts if isinstance(e, ast.Tuple) and len(e.elts) == 2]
            for arg in args:
                for text in _texts(arg):
                    if text.strip():
                        out.setdefault(text, f"{rel}:{node.lineno}")
    return out


def _subclasses(base: type) -> list[type]:
    out, todo = [], [base]
    while todo:
        for sub in todo.pop().__subclasses__():
            out.append(sub)
            todo.append(sub)
    return out


def _rna_strings(rna, inherited: set[str], where: str, out: dict[tuple[str, str], str]) -> None:
    """Each property's name and description and each enum item's, of a class's own properties."""
    for prop in rna.properties:
        if prop.identifier in inherited:
            continue
        for text in (prop.name, prop.description):
            if text and text != prop.identifier:  # a property without a name shows its identifier
                out.setdefault(("*", text), f"{where}.{prop.identifier}")
        for item in getattr(prop, "enum_items", ()):
            for text in (item.name, item.description):
                if text:
                    out.setdefault(("*", text), f"{where}.{prop.identifier}")


def class_strings(package: str) -> dict[tuple[str, str], str]:
    """{(context, msgid): where} of every class of `package` registered now, and of the properties it added to
    Blender's types. Needs Blender (bpy) and the add-on registered."""
    import bpy  # bpy: this tool's code walk runs without Blender

    out: dict[tuple[str, str], str] = {}
    classes = {c for base in _BASES for c in _subclasses(getattr(bpy.types, base))}
    for cls in sorted(classes, key=lambda c: c.__name__):
        if not cls.__module__.startswith(package + ".") or not getattr(cls, "is_registered", False):
            continue
        rna, where = cls.bl_rna, cls.__name__
        operator = issubclass(cls, bpy.types.Operator)
        if operator:  # an operator class's own RNA lists no properties; its operator type does
            group, _, name = cls.bl_idname.partition(".")
            rna = getattr(getattr(bpy.ops, group), name).get_rna_type()
        label = getattr(cls, "bl_label", "")
        if label and not issubclass(cls, (bpy.types.PropertyGroup, bpy.types.FileHandler)):
            out.setdefault((OPERATOR_CONTEXT if operator else "*", label), where)
        description = rna.description if operator else getattr(cls, "bl_description", "") or (
            (cls.__doc__ or "").strip() if issubclass(cls, bpy.types.Menu) else "")
        # Python 3.11 keeps a docstring's indentation (3.13 removes it): the table holds it removed, and the
        # registration adds the indented form (blender/translations.py)
        description = inspect.cleandoc(description) if description else description
        if description:
            out.setdefault(("*", description), where)
        base = next(getattr(bpy.types, b) for b in _BASES if issubclass(cls, getattr(bpy.types, b)))
        _rna_strings(rna, {"rna_type", "name"} | HELPER_PROPERTIES | {p.identifier for p in base.bl_rna.properties},
                     where, out)
    for name in _BLENDER_TYPES:
        rna = getattr(bpy.types, name).bl_rna
        for prop in rna.properties:
            if prop.is_runtime and "skinbridge" in prop.identifier.lower():
                for text in (prop.name, prop.description):
                    if text and text != prop.identifier:
                        out.setdefault(("*", text), f"{name}.{prop.identifier}")
    return out


def all_strings(package: str) -> dict[tuple[str, str], str]:
    """The registered classes' strings and the code's messages (context "*"), with where each comes from."""
    out = class_strings(package)
    for text, where in code_messages().items():
        out.setdefault(("*", text), where)
    return out


def missing(strings: dict[tuple[str, str], str], tables: dict[str, dict], english: set[str]) -> dict[str, list]:
    """Per language, the (context, msgid) pairs neither in its table nor a name that stays English, nor
    without words (`{path}: {error}`)."""
    from skinbridge.core import i18n  # the package is found on PYTHONPATH only when run as a tool

    out = {}
    for language, table in tables.items():
        out[language] = sorted(k for k in strings if k not in table and k[1] not in english and i18n.has_words(k[1]))
    return out


def main(argv: list[str]) -> int:
    import skinbridge  # the package is found on PYTHONPATH only when run as a tool
    from skinbridge.core import i18n  # likewise

    skinbridge.register()
    try:
        strings = all_strings("skinbridge")
    finally:
        skinbridge.unregister()
    gaps = missing(strings, i18n.load_tables(), i18n.keep_english())
    if "--tsv" in argv:
        for ctx, msgid in sorted(set().union(*gaps.values())):
            print(f"{ctx}\t{i18n.escape(msgid)}\t")
    else:
        for language, keys in gaps.items():
            print(f"{language}: {len(keys)} of {len(strings)} strings missing")
            for ctx, msgid in keys:
                print(f"  [{ctx}] {msgid!r}  ({strings[(ctx, msgid)]})")
    return 1 if any(gaps.values()) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
