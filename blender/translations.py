"""The add-on's UI in Simplified Chinese, Traditional Chinese and Japanese (docs/blender.md §11).

The tables (`i18n/*.tsv`, read by core/i18n.py) go to `bpy.app.translations`, which translates labels,
tooltips, enum items and whole report strings itself. A report with values is formatted before Blender sees
it, so the add-on's own operators get a `report` that first turns the English message into the UI language
through the table's placeholder templates (`{name}: {count} bones`).
"""
from __future__ import annotations

import bpy

from ..core import i18n

OPERATOR_CONTEXT = "Operator"  # the context Blender looks operator names up in

_registered: list[str] = []  # the module name the tables are registered under
_patched: list[type] = []  # operator classes given a translating `report`
_translators: dict[str, i18n.Translator] = {}


def translations_dict(tables: dict[str, dict[tuple[str, str], str]] | None = None) -> dict[str, dict]:
    """{locale: {(context, English): translation}} as `bpy.app.translations.register` takes it. A row of the
    default context is also given in the Operator context: a layout's `text=` on an operator button and an
    operator's own name are looked up there."""
    tables = i18n.load_tables() if tables is None else tables
    out = {}
    for language, table in tables.items():
        rows = dict(table)
        for (ctx, msgid), text in table.items():
            if ctx == i18n.DEFAULT_CONTEXT:
                rows.setdefault((OPERATOR_CONTEXT, msgid), text)
        out[language] = rows
    return out


def translate(message: str, language: str | None = None) -> str:
    """`message` (English, values formatted in) in `language`, by default the UI's when Blender is set to
    translate reports; unchanged when no table row matches."""
    if language is None:
        view = bpy.context.preferences.view
        if not getattr(view, "use_translate_reports", True):
            return message
        language = bpy.app.translations.locale
    if language not in i18n.LANGUAGES:
        return message
    if language not in _translators:
        _translators[language] = i18n.Translator(i18n.load_table(language))
    return _translators[language](message)


def _report(self, type, message):
    return bpy.types.Operator.report(self, type, translate(message))


def _operator_classes(package: str) -> list[type]:
    out, todo = [], [bpy.types.Operator]
    while todo:
        for sub in todo.pop().__subclasses__():
            todo.append(sub)
            if sub.__module__.startswith(package + ".") and "report" not in sub.__dict__:
                out.append(sub)
    return out


def register(package: str) -> None:
    """Call after the add-on's classes are registered (their operators get the translating `report`)."""
    bpy.app.translations.register(package, translations_dict())
    _registered.append(package)
    for cls in _operator_classes(package):
        cls.report = _report
        _patched.append(cls)


def unregister() -> None:
    while _patched:
        del _patched.pop().report
    while _registered:
        bpy.app.translations.unregister(_registered.pop())
    _translators.clear()
