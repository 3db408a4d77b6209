"""The registry of formats: every spec that the format packages declare, and the lookup of a file's format.

Each `io_*` package of this add-on declares `FORMATS` (a tuple of `core.formatspec.FormatSpec`) in its
`__init__.py`; they are collected here in package-name order. Tests and scripts may add a spec in code with
`register()` (never from paths or environment variables).

The content of a file decides its format: the specs' sniffers look at its first bytes. The extension (case
does not matter) only breaks a tie between specs whose content tests both match, or names the format of a file
whose content no sniffer claims but whose spec has no sniffer (the content says nothing).
"""
from __future__ import annotations

import importlib
import os
import pkgutil

from .core.errors import FormatError
from .core.fileio import read_bytes, read_head
from .core.formatspec import CAPABILITIES, DemoRow, FormatSpec, Option  # noqa: F401  (re-exported)

_SPECS: dict[str, FormatSpec] = {}
_LOADED = False
# "module:function" of the archive readers format packages declare (`MEMBER_READER` in their __init__.py): each
# takes an input path and gives the bytes of the archive member it names ("pack.hak:head.mdb"), or None when
# the path names no member of its archives
_MEMBER_READERS: list[str] = []


def _load() -> None:
    global _LOADED
    if _LOADED:
        return
    _LOADED = True
    here = os.path.dirname(os.path.abspath(__file__))
    for info in sorted(pkgutil.iter_modules([here]), key=lambda m: m.name):
        if info.ispkg and info.name.startswith("io_"):
            package = importlib.import_module(f"{__package__}.{info.name}")
            for spec in getattr(package, "FORMATS", ()):
                register(spec)
            if getattr(package, "MEMBER_READER", None):
                _MEMBER_READERS.append(package.MEMBER_READER)


def register(spec: FormatSpec) -> FormatSpec:
    """Add a spec (a second spec of the same name replaces the first)."""
    _SPECS[spec.name] = spec
    return spec


def unregister(name: str) -> None:
    _SPECS.pop(name, None)


def all_specs() -> list[FormatSpec]:
    _load()
    return list(_SPECS.values())


def get(name: str) -> FormatSpec:
    _load()
    try:
        return _SPECS[name]
    except KeyError:
        raise KeyError(f"unknown format {name!r}; known: {', '.join(_SPECS)}") from None


def with_capability(capability: str) -> list[FormatSpec]:
    return [s for s in all_specs() if s.has(capability)]


def targets() -> dict[str, FormatSpec]:
    """`convert --to` names and their specs."""
    return {s.target: s for s in all_specs() if s.target}


def extensions(capability: str | None = None) -> list[str]:
    out: list[str] = []
    for s in all_specs():
        if capability is None or s.has(capability):
            out += [e for e in s.extensions if e not in out]
    return out


def shared_extensions() -> set[str]:
    """Extensions that more than one spec claims (the drop handler reads the content of those files)."""
    seen: dict[str, int] = {}
    for s in all_specs():
        for e in s.extensions:
            seen[e] = seen.get(e, 0) + 1
    return {e for e, n in seen.items() if n > 1}


def head_size() -> int:
    return max([s.head for s in all_specs()] + [64])


def _describe(head: bytes) -> str:
    text = head[:16]
    printable = text[: len(text) - len(text.lstrip(bytes(range(32, 127))))]
    if len(printable) >= 4:
        return f"'{printable.decode('ascii')}' ({head[:8].hex(' ')})"
    return head[:8].hex(" ") if head else "(empty file)"


def identify(head: bytes, path: str = "") -> FormatSpec:
    """The spec of a file whose first bytes are `head` (at least `head_size()` of them, or the whole file)."""
    ext = os.path.splitext(path)[1].lower()
    strong, weak, silent = [], [], []
    for spec in all_specs():
        if spec.sniff is None:
            if ext in spec.extensions:
                silent.append(spec)
            continue
        try:
            matched = bool(spec.sniff(bytes(head[: spec.head])))
        except Exception:  # a sniffer that trips over odd bytes does not claim the file
            matched = False
        if matched:
            (weak if spec.weak else strong).append(spec)
    for group in (strong, weak, silent):
        if len(group) == 1:
            return group[0]
        if group:
            by_ext = [s for s in group if ext in s.extensions]
            if len(by_ext) >= 1:
                return by_ext[0]
            return group[0]
    raise FormatError(f"no format we know has this content (extension '{ext or '(none)'}', first bytes "
                      f"{_describe(head)})", 0, "magic")


def _member(path: str) -> bytes | None:
    """The bytes of the archive member `path` names ("pack.hak:head.mdb", when no file has that name); None when
    it names none."""
    if os.path.lexists(path):
        return None
    _load()
    for ref in _MEMBER_READERS:
        module, _, attr = ref.partition(":")
        data = getattr(importlib.import_module(f"{__package__}.{module}"), attr)(path)
        if data is not None:
            return data
    return None


def read_input(path: str | os.PathLike) -> bytes:
    """The bytes of an input: the file at `path` (core.fileio.read_bytes), or the archive member it names."""
    path = os.fspath(path)
    data = _member(path)
    return read_bytes(path) if data is None else data


def input_exists(path: str | os.PathLike) -> bool:
    """A file is at `path`, or an archive member our formats read is named by it."""
    path = os.fspath(path)
    return os.path.exists(path) or _member(path) is not None


def input_stem(path: str | os.PathLike) -> str:
    """The name an input gives its outputs: the file's, or the member's for "pack.hak:head.mdb"."""
    path = os.fspath(path)
    name = os.path.basename(path)
    if not os.path.lexists(path) and ":" in name and _member(path) is not None:
        name = name.rsplit(":", 1)[1]
    return os.path.splitext(name)[0]


def identify_file(path: str | os.PathLike) -> FormatSpec:
    """The spec of the file (or archive member) at `path`, reading only the bytes the sniffers need. OSError when
    unreadable."""
    path = os.fspath(path)
    data = _member(path)
    return identify(read_head(path, head_size()) if data is None else data[:head_size()], path)


def file_kind(path: str | os.PathLike, spec: FormatSpec | None = None) -> str:
    """"model", "motion", "texture" or, for a spec whose files are of several kinds, what its codec says this
    file is (an SMD: "model", "motion" or "flex")."""
    spec = spec or identify_file(path)
    if not spec.has("kind_of"):
        return spec.kind

    return spec.get("kind_of")(read_input(path))


# -- the options of convert targets ---------------------------------------------------------------------------

def option_takers() -> dict[str, tuple[Option, list[str]]]:
    """Every option a target declares: its record (the first target's, where several declare one name) and the
    `--to` names that take it, in registry order."""
    out: dict[str, tuple[Option, list[str]]] = {}
    for target, spec in targets().items():
        for o in spec.options:
            takers = out.setdefault(o.name, (o, []))[1]
            for t in (targets() if o.reading else (target,)):
                if t not in takers:
                    takers.append(t)
    return out


def _shown(value) -> str:
    return str(value).lower() if isinstance(value, bool) else f"{value:g}" if isinstance(value, float) else str(value)


def option_text(o: Option) -> str:
    """The option's help with what it takes and its default: "bones per geometry (1 to 255, default 64)"."""
    extra = [o.range_text()] if o.low is not None else []
    if o.unit and o.low is None:
        extra.append(o.unit)
    if o.default_from is not None:
        extra.append(f"default: as --{o.default_from.replace('_', '-')}")
    elif o.default is not None and (o.type is not bool or o.default):
        extra.append(f"default {_shown(o.default)}")
    return o.help + (f" ({', '.join(extra)})" if extra else "")


def _texts(name: str) -> dict[str, list[str]]:
    """Option `name`'s words (`option_text`) → the targets that declare it with them, in registry order."""
    option, takers = option_takers()[name]
    texts: dict[str, list[str]] = {}
    for target in takers:
        own = next((o for o in targets()[target].options if o.name == name), option)
        texts.setdefault(option_text(own), []).append(target)
    return texts


def option_help(name: str) -> str:
    """What the flag of option `name` says: "pmx or wepuppet: TEXT" where the targets declare it alike, else each
    target's own ("pmx: TEXT; wepuppet: TEXT": one name, one unit, each target its default and words)."""
    return "; ".join(f"{' or '.join(ts)}: {text}" for text, ts in _texts(name).items())


def options_table() -> str:
    """The Markdown table of the targets' options, as README.md shows it between its `options` markers."""
    lines = ["| option | `--to` | meaning |", "|---|---|---|"]
    for o, takers in option_takers().values():
        value = "\\|".join(o.values()) if o.choices else (o.metavar or "VALUE") if o.type is not bool else ""
        flag = f"`{o.cli_flag}{' ' + value if value else ''}`"
        if o.type is bool and o.default:
            flag += f" / `--no-{o.cli_flag[2:]}`"
        flag += "".join(f" (or `--{a.replace('_', '-')}`)" for a in o.aliases)
        texts = _texts(o.name)
        meaning = (next(iter(texts)) if len(texts) == 1 else option_help(o.name)).replace("|", "\\|")
        if o.blender_only:
            meaning += " (File › Export in Blender only: `convert` refuses it)"
        lines.append(f"| {flag} | {', '.join(f'`{t}`' for t in takers)} | {meaning} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":  # python -m skinbridge.formats options-table: the README's table, regenerated
    import sys

    if sys.argv[1:] != ["options-table"]:
        sys.exit("usage: python -m skinbridge.formats options-table")
    sys.stdout.write(options_table())
