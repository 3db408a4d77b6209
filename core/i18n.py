"""The add-on's translation tables (docs/blender.md §12): one tab-separated file per language in `i18n/`
(context, English source, translation), the glossary (`i18n/glossary.tsv`) and the names that stay English
(`i18n/keep_english.txt`). Plain Python: the tables are checked without Blender, and `blender/translations.py`
hands them to `bpy.app.translations`.

A message with values is one msgid with named placeholders (`{name}: {count} bones`); every language keeps the
same placeholders, and `translate` fills a translated template from an English message already formatted.
"""
from __future__ import annotations

import pathlib
import re

I18N_DIR = pathlib.Path(__file__).resolve().parents[1] / "i18n"
LANGUAGES = ("zh_HANS", "zh_HANT", "ja_JP")
DEFAULT_CONTEXT = "*"

_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
_ESCAPES = {"\\n": "\n", "\\t": "\t", "\\\\": "\\"}


def _unescape(text: str) -> str:
    return re.sub(r"\\[nt\\]", lambda m: _ESCAPES[m.group(0)], text)


def escape(text: str) -> str:
    """A cell of a table: a tab or line break in a message would split the row."""
    return text.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n")


def _rows(path: pathlib.Path) -> list[list[str]]:
    """The rows below the header line, cells unescaped; `#` lines are comments."""
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines()[1:]:
        if line.strip() and not line.startswith("#"):
            rows.append([_unescape(cell) for cell in line.split("\t")])
    return rows


def load_table(language: str, folder: pathlib.Path = I18N_DIR) -> dict[tuple[str, str], str]:
    """{(context, English): translation} of one language. Raises ValueError naming the line of a row that is
    not three cells or a source given twice, so a broken table fails its test rather than dropping rows."""
    table: dict[tuple[str, str], str] = {}
    for i, row in enumerate(_rows(folder / f"{language}.tsv"), 2):
        if len(row) != 3 or not row[1] or not row[2]:
            raise ValueError(f"{language}.tsv: row {i} is not context, English, translation: {row!r}")
        key = (row[0] or DEFAULT_CONTEXT, row[1])
        if key in table:
            raise ValueError(f"{language}.tsv: {key!r} given twice (second at row {i})")
        table[key] = row[2]
    return table


def load_tables(folder: pathlib.Path = I18N_DIR) -> dict[str, dict[tuple[str, str], str]]:
    return {language: load_table(language, folder) for language in LANGUAGES}


def load_glossary(folder: pathlib.Path = I18N_DIR) -> list[dict[str, str]]:
    """Each term as {"en": ..., "zh_HANS": ..., "zh_HANT": ..., "ja_JP": ...}."""
    header = (folder / "glossary.tsv").read_text(encoding="utf-8").splitlines()[0].split("\t")
    return [dict(zip(header, row)) for row in _rows(folder / "glossary.tsv")]


def keep_english(folder: pathlib.Path = I18N_DIR) -> set[str]:
    """Names every language shows as they are: file formats' and programs' own names."""
    lines = (folder / "keep_english.txt").read_text(encoding="utf-8").splitlines()
    return {line for line in lines if line and not line.startswith("#")}


def N_(text: str) -> str:
    """Marks a string the UI shows later, away from a `report` or `text=` (a panel's row labels):
    tools/i18n_strings.py collects it for the tables. Returns it unchanged."""
    return text


def placeholders(text: str) -> list[str]:
    """The named placeholders of a message, sorted (order may change between languages)."""
    return sorted(_PLACEHOLDER.findall(text))


def has_words(text: str) -> bool:
    """Whether a message has letters outside its placeholders (`{path}: {error}` has none: nothing to
    translate)."""
    return bool(re.search(r"[^\W\d_]", _PLACEHOLDER.sub("", text)))


def _pattern(msgid: str) -> re.Pattern:
    parts = _PLACEHOLDER.split(msgid)  # literal, name, literal, name, ...
    out = []
    for i, part in enumerate(parts):
        if i % 2:
            out.append(f"(?P<{part}>.*?)" if f"(?P<{part}>" not in "".join(out) else f"(?P={part})")
        else:
            out.append(re.escape(part))
    return re.compile("".join(out) + r"\Z", re.S)


class Translator:
    """English messages, formatted or not, to one language's text. Messages in a table with placeholders match
    the formatted English, the longest literal text first, and the values fill the translation (each value
    translated in turn when it is a message itself, e.g. an error's text after a file name)."""

    def __init__(self, table: dict[tuple[str, str], str]):
        # an operator's name (Operator context) stands in messages too, e.g. before the last operation's headline
        self.exact = {msgid: text for (ctx, msgid), text in sorted(table.items(), key=lambda r: r[0][0] == "*")}
        templates = [(msgid, text) for msgid, text in self.exact.items() if _PLACEHOLDER.search(msgid)]
        templates += [(m, m) for m in ("{name}: {text}", "{name}: {text}\n{more}") if m not in self.exact]
        templates.sort(key=lambda t: -len(_PLACEHOLDER.sub("", t[0])))
        self.templates = [(_pattern(msgid), text) for msgid, text in templates]
        self._done: dict[str, str] = {}

    def __call__(self, message: str, depth: int = 0) -> str:
        if message in self.exact:
            return self.exact[message]
        if depth == 0:  # a panel translates its texts on every redraw
            if message not in self._done:
                if len(self._done) > 4096:
                    self._done.clear()
                self._done[message] = self._translate(message, 0)
            return self._done[message]
        return self._translate(message, depth)

    def _translate(self, message: str, depth: int) -> str:
        if depth > 3:
            return message
        for pattern, text in self.templates:
            m = pattern.match(message)
            if m:
                values = {k: self(v, depth + 1) for k, v in m.groupdict().items()}
                return _PLACEHOLDER.sub(lambda p: values.get(p.group(1), p.group(0)), text)
        if "\n" in message:  # a report's warnings, one a line below its headline
            lines = message.split("\n")
            return "\n".join(line[:len(line) - len(line.lstrip())] + self(line.lstrip(), depth + 1) if line.strip()
                             else line for line in lines)
        return message
