"""Wallpaper Engine material documents (`materials/<name>.json`: the passes that draw a model, each naming its
textures, `materials/<texture>.tex`) and the JSON every Wallpaper Engine document is read with.

Where they sit in a project: docs/wallpaper_engine.md §7. The reader sits with the textures, the lowest part of
this family, because a material is what leads from a model (puppet) or a layer (project) to its `.tex`.
"""
from __future__ import annotations

import json
import re
from typing import Any

from ...core.budget import load_json
from ...core.errors import FormatError

# a whole string (kept as it is; one left open runs to the end, so no text is scanned twice); a comma after an
# opening bracket or another comma (kept: no value precedes it, and the strict parse refuses it again); or a
# comma after a value whose next non-space character closes an array or object (dropped)
_STRING_OR_TRAILING_COMMA = re.compile(r'("(?:[^"\\]|\\.)*(?:"|\\?\Z)|[\[{,]\s*,)|,(?=\s*[\]}])', re.S)


def loads(text: str, what: str = "json") -> Any:
    """JSON as Wallpaper Engine reads it: a comma after the last item of an array or object is allowed (the
    public Shift_Hue and hueshift effect projects ship scene.json files with one). Strict JSON first; the
    comma is dropped only when that fails, and the file's bytes are still what is written back. Nesting
    deeper than `core.budget.MAX_NESTING` is a FormatError naming `what`, checked before parsing (never a
    RecursionError); dropping commas changes no nesting."""
    try:
        return load_json(text, what)
    except json.JSONDecodeError:
        relaxed = _STRING_OR_TRAILING_COMMA.sub(lambda m: m.group(1) or "", text)
        if relaxed == text:
            raise
        return json.loads(relaxed)


def document(data: bytes, what: str) -> dict:
    """A JSON object read as `loads` reads it (a UTF-8 byte order mark allowed); FormatError naming `what` for
    anything else."""
    try:
        doc = loads(data.decode("utf-8-sig"), what)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise FormatError(f"{what} is not JSON: {e}", getattr(e, "pos", 0), what) from None
    if not isinstance(doc, dict):
        raise FormatError(f"{what} holds a {type(doc).__name__}, not an object", 0, what)
    return doc


def first_texture(doc: Any) -> str | None:
    """The texture a material document's first pass names first (`passes[0].textures[0]`, the stem of
    `materials/<stem>.tex`); None when it names none."""
    try:
        name = doc["passes"][0]["textures"][0]
    except (TypeError, KeyError, IndexError):
        return None
    return name if isinstance(name, str) else None


def material_doc(texture: str) -> dict:
    """The material our exports write for a puppet or model drawn with one texture: an unlit, translucent,
    two-sided image pass, as the material files of public puppet projects have it."""
    return {"passes": [{"blending": "translucent", "cullmode": "nocull", "depthtest": "disabled",
                        "depthwrite": "disabled", "shader": "genericimage2", "textures": [texture]}]}


BLENDINGS = ("translucent", "normal", "disabled", "additive", "translucent_pa", "alphatocoverage")
DEFAULT_BLENDING = "translucent"  # a pass without `blending` (Wallpaper Engine's default)


def blending(doc: Any) -> str:
    """How a material document's first pass is put over what is behind it (`passes[0].blending`): one of
    `BLENDINGS`, `DEFAULT_BLENDING` when the pass names none, else the unknown value (a name in lower case,
    anything else as JSON)."""
    try:
        value = doc["passes"][0].get("blending", DEFAULT_BLENDING)
    except (TypeError, KeyError, IndexError, AttributeError):
        return DEFAULT_BLENDING
    return value.strip().lower() if isinstance(value, str) else json.dumps(value)
