"""The add-on's UI in Simplified Chinese, Traditional Chinese and Japanese (docs/blender.md §12).

The tables (`i18n/*.tsv`, read by core/i18n.py) go to `bpy.app.translations`, which translates labels,
tooltips, enum items and whole report strings itself. A report with values is formatted before Blender sees
it, so the operators pass such a message through `translate`, which turns the English message into the UI
language through the table's placeholder templates (`{name}: {count} bones`). (An operator class cannot
override `report`: Blender finds its own RNA function on the instance first.)
"""
from __future__ import annotations

import bpy

from ..core import i18n

OPERATOR_CONTEXT = "Operator"  # the context Blender looks operator names up in
DOC_INDENT = "    "  # a class body's indentation: Python 3.11 keeps it in a docstring's later lines, 3.13 removes it

_registered: list[str] = []  # the module name the tables are registered under
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
            if "\n" in msgid:  # a class docstring as Python < 3.13 keeps it: its later lines indented
                for context in {ctx, OPERATOR_CONTEXT} if ctx == i18n.DEFAULT_CONTEXT else {ctx}:
                    rows.setdefault((context, msgid.replace("\n", "\n" + DOC_INDENT)), text)
        out[language] = rows
    return out


def translate(message: str, language: str | None = None, *, interface: bool = False) -> str:
    """`message` (English, values formatted in) in `language`, by default the UI's when Blender is set to
    translate reports (`interface`: a panel's text, when it translates the interface); unchanged when no table
    row matches."""
    language = _ui_language("use_translate_interface" if interface else "use_translate_reports") \
        if language is None else language
    if language not in i18n.LANGUAGES:
        return message
    if language not in _translators:
        _translators[language] = i18n.Translator(i18n.load_table(language))
    return _translators[language](message)


def _ui_language(option: str) -> str | None:
    """The language Blender shows reports or the interface in (`option` of the preferences), None when it
    leaves them English."""
    preferences = getattr(bpy.context, "preferences", None)
    if preferences is None or not getattr(preferences.view, option, True):
        return None
    return bpy.app.translations.locale


def register(package: str) -> None:
    bpy.app.translations.register(package, translations_dict())
    _registered.append(package)


def unregister() -> None:
    while _registered:
        bpy.app.translations.unregister(_registered.pop())
    _translators.clear()
