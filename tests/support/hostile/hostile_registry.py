"""The codecs attacked by the hostile suite and the fuzzer, read from the format registry (`formats.py`).

Every registered format with a codec (`read`) is attacked: its `write` for the byte-exact write back, its `semantic`
step (what an import runs after the read), seeds made of the real files of ../shared/testdata and INTEROP
whose content the registry identifies as that format (read in place, never copied into the repository), and, where
`hostile_<format>.py` exists beside this file (a module of this package), that module's targeted `cases()`, extra
`seeds()`, `shrink(data)` (seeds above the fuzzing size cap made smaller with the codec itself, so the fuzzer
mutates every section of them) and the settings `BINARY`, `BYTE_EXACT` (False for a text format whose writer
formats), `MAX_LEN` and `KNOWN_CRASHES`.

The UANI trigger sidecars are no format of the registry (they travel with a `.ani`) and are added here by name.
"""
from __future__ import annotations

import importlib
import pathlib

from .hostile_cases import Case, Codec

from skinbridge import formats
from skinbridge.core.errors import FormatError

ROOT = pathlib.Path(__file__).resolve().parents[3]
TESTDATA = ROOT.parent / "shared" / "testdata"
INTEROP = ROOT.parent / "shared" / "interop"  # files other tools wrote (Blender Source Tools): seeds too
SHRINK_ABOVE = 8192


def _testdata_of(spec) -> list[tuple[str, bytes]]:
    out = []
    for root in (TESTDATA, INTEROP):
        out += _files_of(spec, root)
    return out


def _files_of(spec, root: pathlib.Path) -> list[tuple[str, bytes]]:
    out = []
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        try:
            if formats.identify_file(path).name == spec.name:
                out.append((f"{root.name}/{path.relative_to(root)}", path.read_bytes()))
        except (FormatError, OSError):
            continue
    return out


def _module_of(name: str):
    try:
        return importlib.import_module(f"{__package__}.hostile_{name}")
    except ModuleNotFoundError as e:
        if e.name != f"{__package__}.hostile_{name}":
            raise
        return None


def codec_for(spec) -> Codec:
    """The hostile-suite codec of a registry spec."""
    module = _module_of(spec.name)
    shrink = getattr(module, "shrink", None)

    def seeds() -> list[tuple[str, bytes]]:
        out, seen = [], set()
        for name, data in _testdata_of(spec) + (module.seeds() if module is not None else []):
            if shrink is not None and len(data) > SHRINK_ABOVE:
                name, data = f"{name} (shrunk)", shrink(data)
            if data not in seen:
                seen.add(data)
                out.append((name, data))
        return out

    def late(capability: str):  # resolved on first use: collecting the suite imports no codec
        return (lambda *args: spec.get(capability)(*args)) if spec.has(capability) else None

    exact = getattr(module, "BYTE_EXACT", True)  # text formats write canonical text, not the same bytes
    codec = Codec(spec.name, late("read"), late("write") if exact else None, late("semantic"), seeds,
                  module.cases if module is not None else (lambda: []),
                  binary=getattr(module, "BINARY", True), max_len=getattr(module, "MAX_LEN", 1 << 16))
    codec.known_crashes = dict(getattr(module, "KNOWN_CRASHES", {}))
    modules = sorted({v.partition(":")[0] for v in (spec.capabilities.get("read"), spec.capabilities.get("write"),
                                                     spec.capabilities.get("semantic")) if isinstance(v, str)})
    codec.modules = tuple(f"skinbridge.{m}" for m in modules) + (("skinbridge.core.binary",) if codec.binary else ())
    return codec


def _triggers() -> Codec:
    from . import hostile_triggers
    from skinbridge.io_urhox.motion import triggers

    codec = Codec("triggers", lambda data: triggers.read_triggers(bytes(data), 2.0), None, None,
                  hostile_triggers.seeds, hostile_triggers.cases, binary=False, record_warnings=lambda rec: [],
                  max_len=1 << 12)
    codec.modules = ("skinbridge.io_urhox.motion.triggers",)
    return codec


def _all() -> dict[str, Codec]:
    out = {spec.name: codec_for(spec) for spec in formats.with_capability("read")}
    out["triggers"] = _triggers()
    return out


CODECS: dict[str, Codec] = _all()


def get(name: str) -> Codec:
    if name not in CODECS:
        raise KeyError(f"{name}: unknown format; known: {', '.join(CODECS)}")
    return CODECS[name]


__all__ = ["CODECS", "Case", "Codec", "codec_for", "get"]
