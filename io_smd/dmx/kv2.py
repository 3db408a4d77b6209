"""DMX keyvalues2 (the text encoding): text ⇄ `DmxFile`.

The text is a list of elements, each a quoted type name and a braced list of attributes `"name" "type" value`:
`"id" "elementid" "<uuid>"` and `"name" "string" "<name>"` are the element's own id and name; a value is one
quoted token (a vector's numbers inside it, space-separated), an array `[ "a", "b" ]`, an element reference
`"element" "<uuid>"` ("" for null), or an element written inline (`"attr" "DmeTransform" { ... }`, or inside an
element array `"DmeTransform" { ... }`). Elements used once are usually written inline, others at the top level.

What makes the write-back the same text: each attribute keeps its tokens as read and reuses them while its value
is unchanged (numbers are not reformatted); which elements stood inline is kept; and the text between tokens
(whitespace and // comments) is kept and reused while the file's tokens keep the same kinds in the same order.
"""
from __future__ import annotations

import re
import uuid
from typing import Any, Callable, Generator

import numpy as np

from ...core.budget import Budget
from ...core.errors import FormatError
from .records import (FIXED, TIME_TICKS, AttrType, Attribute, DmxFile, Element, Stub, element_refs,
                          reachable)

TYPE_NAMES = {"element": AttrType.ELEMENT, "int": AttrType.INT, "float": AttrType.FLOAT, "bool": AttrType.BOOL,
              "string": AttrType.STRING, "binary": AttrType.BINARY, "time": AttrType.TIME,
              "color": AttrType.COLOR, "vector2": AttrType.VECTOR2, "vector3": AttrType.VECTOR3,
              "vector4": AttrType.VECTOR4, "qangle": AttrType.QANGLE, "quaternion": AttrType.QUATERNION,
              "vmatrix": AttrType.VMATRIX, "uint64": AttrType.UINT64, "uint8": AttrType.UINT8,
              "objectid": AttrType.OBJECTID}
ALIASES = {"angle": AttrType.QANGLE, "matrix": AttrType.VMATRIX, "void": AttrType.BINARY}  # older spellings
NAME_OF = {t: n for n, t in TYPE_NAMES.items()}
MAX_DEPTH = 200  # nested inline elements (a deeper file is refused rather than overflowing the stack)
TOKEN_STEP = 4096  # tokens scanned, and counted against the file's budget, at a time

# possessive quantifiers: no backtracking, so odd input (long runs of slashes, quotes) costs linear time
# (trivia)(a quoted string | punctuation | a bare word | the end of the text): one scan over a run of trivia
_TOKEN = re.compile(r'((?:\s++|//[^\n]*+)*+)(?:("(?:[^"\\]++|\\.)*+")|([{}\[\],])|([^\s"{}\[\],]++)|\Z)', re.S)
_TRIVIA = re.compile(r'(?:\s++|//[^\n]*+)*+', re.S)
_ESCAPE = re.compile(r"\\(.)", re.S)
_UNESCAPE = {"n": "\n", "t": "\t", "v": "\v", "b": "\b", "r": "\r", "f": "\f", "a": "\a"}
_INT_RANGE = {"<i4": (-2**31, 2**31 - 1), "<u8": (0, 2**64 - 1), "u1": (0, 255)}


def kind(raw: str) -> str:
    """q (quoted), w (a bare word) or the punctuation itself."""
    return "q" if raw[0] == '"' else raw if raw in "{}[]," else "w"


def unquote(raw: str) -> str:
    if raw[0] != '"':
        return raw
    return _ESCAPE.sub(lambda m: _UNESCAPE.get(m.group(1), m.group(1)), raw[1:-1])


def quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t") + '"'


class _Tokens:
    """The text's tokens, scanned as the parser asks for them, `TOKEN_STEP` at a time, each step counted against
    the file's budget before it is scanned: text that is not kv2 (a megabyte of braces) costs no more than a step
    past its first fault. Each token's text, the text before it (and, once the scan is done, after the last as
    one more entry), its position and its kind."""

    def __init__(self, text: str, start: int, budget: Budget):
        self.text, self.pos, self.budget = text, start, budget
        self.raws: list[str] = []
        self.trivia: list[str] = []
        self.where: list[int] = []
        self.kinds: list[str] = []
        self.done = False

    def has(self, i: int) -> bool:
        """Whether token `i` exists, scanning up to it."""
        while len(self.raws) <= i and not self.done:
            self.scan()
        return i < len(self.raws)

    def scan(self) -> None:
        """The next `TOKEN_STEP` tokens, or those up to the end of the text (FormatError on an unterminated
        quoted string, or when the step would take the file over its budget)."""
        text, raws, trivia, where, kinds = self.text, self.raws, self.trivia, self.where, self.kinds
        try:
            self.budget.objects(TOKEN_STEP, None, None)
        except FormatError as e:
            raise FormatError(f"line {text.count(chr(10), 0, self.pos) + 1}: {e}", None, "token count") from None
        match, pos, end = _TOKEN.match, self.pos, len(raws) + TOKEN_STEP
        while len(raws) < end:
            m = match(text, pos)
            if m is None:  # neither a token nor the end after the trivia: a quote without its closing one
                at = _TRIVIA.match(text, pos).end()
                raise FormatError(f"line {text.count(chr(10), 0, at) + 1}: unterminated quoted string", None,
                                  "token")
            group = m.lastindex  # 2 quoted, 3 punctuation, 4 a bare word, 1 (trivia alone) the end
            trivia.append(m.group(1))
            if group == 1:
                self.done = True
                break
            raw = m.group(group)
            raws.append(raw)
            where.append(m.start(group))
            kinds.append("q" if group == 2 else raw if group == 3 else "w")
            pos = m.end()
        self.pos = pos

    def finish(self) -> None:
        while not self.done:
            self.scan()


class _Parser:
    def __init__(self, text: str, tokens: _Tokens):
        self.text, self.tokens = text, tokens
        self.raws, self.where, self.kinds = tokens.raws, tokens.where, tokens.kinds
        self.i = 0
        self.elements: list[Element] = []
        self.fixups: list[tuple[Attribute, int | None, str]] = []
        self.linked: list[Attribute] = []  # element attributes: their value key is known once resolved

    def fail(self, message: str, field: str, token: int | None = None) -> FormatError:
        """An error on the line of token `token` (default: the next one)."""
        token = self.i if token is None else token
        at = self.where[min(token, len(self.where) - 1)] if self.where else 0
        return FormatError(f"line {self.text.count(chr(10), 0, at) + 1}: {message}", None, field)

    def take(self, kinds: str, field: str) -> str:
        if self.i >= len(self.raws) and not self.tokens.has(self.i):
            raise self.fail(f"the text ends where {field} should be", field)
        if self.kinds[self.i] not in kinds:
            raise self.fail(f"expected {field}, found {self.raws[self.i][:40]}", field)
        self.i += 1
        return self.raws[self.i - 1]

    def peek(self) -> str:
        return self.kinds[self.i] if self.i < len(self.raws) or self.tokens.has(self.i) else ""

    def element(self, type_raw: str, depth: int) -> Element:
        """The element whose type token was just taken, read with a stack of generators rather than recursion:
        an element waits on the stack while one nested inline in it is read, so depth costs no Python frames."""
        return _trampoline(self._element(type_raw, depth), self._element)

    def _element(self, type_raw: str, depth: int) -> Generator[tuple, Element, Element]:
        if depth > MAX_DEPTH:
            raise self.fail(f"elements nested deeper than {MAX_DEPTH}", "element")
        self.take("{", "'{' opening an element")
        e = Element(unquote(type_raw), None, None)
        self.elements.append(e)
        id_raw = name_raw = None
        while self.peek() != "}":
            name_tok = self.take("qw", "an attribute name")
            type_tok = self.take("qw", "an attribute type")
            name, tname = unquote(name_tok), unquote(type_tok)
            if name == "id" and tname == "elementid" and id_raw is None:
                id_raw = self.take("qw", "an element id")
                e.id = self.uuid(unquote(id_raw), "element id")
            elif name == "name" and tname == "string" and name_raw is None:
                name_raw = "" if self.absent(type_tok) else self.take("qw", "an element name")
                e.name, e.name_at = unquote(name_raw) if name_raw else "", len(e.attributes)
            else:
                e.attributes.append((yield from self._attribute(name_tok, type_tok, depth)))
        self.i += 1
        e.raw = (type_raw, id_raw, name_raw)
        return e

    def absent(self, type_tok: str) -> bool:
        """Whether the attribute whose type token was just taken has no value: Blender Source Tools writes an
        empty name or a null element as its type unquoted with nothing after it (`"name" string`), the next
        attribute on the next line."""
        return kind(type_tok) == "w" and (self.peek() in ("}", "") or "\n" in self.tokens.trivia[self.i])

    def uuid(self, text: str, field: str) -> uuid.UUID:
        try:
            return uuid.UUID(text)
        except ValueError:
            raise self.fail(f"{text[:40]!r} is not an element id", field) from None

    def _attribute(self, name_tok: str, type_tok: str, depth: int) -> Generator[tuple, Element, Attribute]:
        name, tname = unquote(name_tok), unquote(type_tok)
        array = tname.endswith("_array")
        base = tname[:-6] if array else tname
        t = TYPE_NAMES.get(base) or ALIASES.get(base)
        if t is None:
            if array or self.peek() != "{":
                raise self.fail(f"attribute {name!r} has unknown type {tname!r}", "attribute type")
            a = Attribute(name, AttrType.ELEMENT, False, None, inline=True, raw=(name_tok, type_tok, None))
            a.value = yield (type_tok, depth + 1)
            self.linked.append(a)
            return a
        a = Attribute(name, t, array, None)
        if not array and t != AttrType.ELEMENT and self.absent(type_tok):
            if t != AttrType.STRING:  # on the line that lacks the value, not where the misreading would end
                raise self.fail(f"attribute {name!r} ({tname}) has no value", "value", self.i - 1)
            a.value, a.raw = "", (name_tok, type_tok)  # an empty string, as the name above
            a.seen = value_key(a)
            return a
        if t == AttrType.ELEMENT:
            a.raw = (name_tok, type_tok)
            if not array and (self.absent(type_tok) or self.peek() == "}"):  # a null element, as BST writes it
                a.inline = False
                self.linked.append(a)
                return a
            yield from self._elements_of(a, depth)
            self.linked.append(a)
            return a
        items = self.items() if array else [self.take("qw", f"the value of {name!r}")]
        a.value = values(t, array, [unquote(x) for x in items], self.fail)
        a.raw = (name_tok, type_tok, *items)
        a.seen = value_key(a)
        return a

    def items(self) -> list[str]:
        self.take("[", "'['")
        out = []
        while self.peek() != "]":
            out.append(self.take("qw", "an array item"))
            self.separator()
        self.take("]", "']'")
        return out

    def separator(self) -> None:
        """After an array item: ']' next, or one ',' followed by another item (the writer puts a comma between
        each pair and none after the last, so any other spelling would not write back as read)."""
        if self.peek() == "]":
            return
        self.take(",", "',' between array items")
        if self.peek() == "]":
            raise self.fail("a ',' after the last array item", "','")

    def _elements_of(self, a: Attribute, depth: int) -> Generator[tuple, Element, None]:
        if not a.array:
            tok = self.take("qw", f"the element id of {a.name!r}")
            self.fixups.append((a, None, unquote(tok)))
            a.inline, a.raw = False, (a.raw[0], a.raw[1], tok)
            return
        self.take("[", "'['")
        a.value, a.inline = [], []
        while self.peek() != "]":
            tok = self.take("qw", "an array item")
            if self.peek() == "{":
                a.value.append((yield (tok, depth + 1)))
                a.inline.append(True)
                a.raw += (None,)
            else:
                if unquote(tok) != "element":
                    raise self.fail(f"expected \"element\" or an element type, found {tok[:40]}", "array item")
                tok = self.take("qw", "an element id")
                self.fixups.append((a, len(a.value), unquote(tok)))
                a.value.append(None)
                a.inline.append(False)
                a.raw += (tok,)
            self.separator()
        self.i += 1

    def resolve(self) -> None:
        by_id: dict[str, Element] = {}
        for e in self.elements:
            if e.id is not None:
                by_id.setdefault(str(e.id), e)
        for a, index, text in self.fixups:
            if text == "":
                target = None
            else:
                target = by_id.get(_id_key(text)) or Stub(id=text)
            if index is None:
                a.value = target
            else:
                a.value[index] = target
        for a in self.linked:
            a.seen = value_key(a)


def _trampoline(first: Generator, make: Callable[..., Generator]) -> Any:
    """Run `first` to its end, where each value a generator yields is the arguments of a nested one (`make`) run
    first, its result sent back: recursion as a loop over a stack, so nesting costs no Python frames."""
    stack, value = [first], None
    while True:
        try:
            request = stack[-1].send(value)
        except StopIteration as done:
            stack.pop()
            if not stack:
                return done.value
            value = done.value
            continue
        stack.append(make(*request))
        value = None


def _id_key(text: str) -> str:
    """An id's text as `str(uuid)` spells it, so that references match ids in any case or brace style."""
    try:
        return str(uuid.UUID(text))
    except ValueError:
        return text


def values(t: AttrType, array: bool, texts: list[str], fail) -> Any:
    """The value of one attribute from the text of its items."""
    if t == AttrType.STRING:
        return texts if array else texts[0]
    if t == AttrType.BINARY:
        try:
            blobs = [bytes.fromhex("".join(x.split())) for x in texts]
        except ValueError:
            raise fail("a binary value is not hexadecimal digits", "binary value") from None
        return blobs if array else blobs[0]
    dtype, shape = FIXED[t]
    if t == AttrType.OBJECTID:
        try:
            out = np.array([list(uuid.UUID(x).bytes_le) for x in texts], "u1").reshape(-1, 16)
        except ValueError:
            raise fail("an object id is not a UUID", "value") from None
        return out if array else out[0]
    words = " ".join(texts).split()
    k = int(np.prod(shape, dtype=np.int64))
    if len(words) != len(texts) * k:
        raise fail(f"{len(texts)} {NAME_OF[t]} values need {len(texts) * k} numbers, found {len(words)}", "value")
    try:
        if t == AttrType.BOOL:
            words = [{"true": "1", "false": "0"}.get(w.lower(), w) for w in words]
        if dtype == "<f4" or t == AttrType.TIME:
            numbers = np.array(words, np.float64)
        else:
            numbers = np.array([int(w) for w in words], object)
    except (ValueError, OverflowError):
        raise fail(f"a {NAME_OF[t]} value is not a number", "value") from None
    if t == AttrType.TIME:
        numbers = np.round(numbers * TIME_TICKS)
    if dtype != "<f4":
        low, high = _INT_RANGE[dtype]
        bad = ~np.isfinite(numbers) if t == AttrType.TIME else np.zeros(len(numbers), bool)
        if bad.any() or (len(numbers) and (numbers[~bad].min() < low or numbers[~bad].max() > high)):
            raise fail(f"a {NAME_OF[t]} value is outside {low} to {high}", "value")
    out = numbers.astype(dtype).reshape((len(texts),) + shape)
    return out if array else out[0]


def value_key(a: Attribute) -> Any:
    """What the attribute's tokens as read stand for: equal while the value is unchanged."""
    if a.type == AttrType.ELEMENT:
        targets = a.value if a.array else [a.value]
        return (a.name, a.type, a.array, tuple(e.id if isinstance(e, Element) else e for e in targets))
    if a.type in FIXED:
        v = np.asarray(a.value)
        return (a.name, a.type, a.array, v.shape, np.ascontiguousarray(v, FIXED[a.type][0]).tobytes())
    return (a.name, a.type, a.array, tuple(a.value) if a.array else a.value)


def read(data: bytes, start: int, fields: dict, budget: Budget | None = None) -> DmxFile:
    """The elements of the text after the header (`start`); `budget`: the file's (dmx.read), else one of
    `data`'s size."""
    text = data.decode("utf-8", "surrogateescape")
    tokens = _Tokens(text, start, budget or Budget(len(data), "DMX file"))
    p = _Parser(text, tokens)
    top = []
    while p.peek():
        top.append(p.element(p.take("qw", "an element type"), 0))
    tokens.finish()
    p.resolve()
    dmx = DmxFile(fields["encoding"], fields["encoding_version"], fields["format"], fields["format_version"],
                  p.elements, unicode=fields["unicode"], top_level=top, layout=("".join(tokens.kinds), tokens.trivia))
    if not top:
        dmx.warnings.append("the file holds no element")
    return dmx


# -- write ------------------------------------------------------------------------------------------------------

def _number(x: float) -> str:
    """A float32 as Blender Source Tools spells it (the shortest text of the float64 it widens to)."""
    return repr(float(x))


def format_item(t: AttrType, v: Any) -> str:
    """One item of a value as the text inside its quotes."""
    if t == AttrType.STRING:
        return v or ""
    if t == AttrType.BINARY:
        return bytes(v).hex()
    if t == AttrType.OBJECTID:
        return str(uuid.UUID(bytes_le=np.asarray(v, "u1").tobytes()))
    if t == AttrType.TIME:
        return _number(int(v) / TIME_TICKS)
    flat = np.asarray(v).reshape(-1)
    if FIXED[t][0] == "<f4":
        return " ".join(_number(x) for x in flat)
    return " ".join(str(int(x)) for x in flat)


def _users(elements: list[Element]) -> dict[int, int]:
    users: dict[int, int] = {}
    for e in elements:
        for child in element_refs(e):
            users[id(child)] = users.get(id(child), 0) + 1
    return users


class _Writer:
    """Emits tokens with the text before each as this writer lays it out (tabs, Blender Source Tools' style)."""

    def __init__(self, dmx: DmxFile, nl: str):
        self.nl = nl
        self.raws: list[str] = []
        self.trivia: list[str] = []
        self.elements = reachable(dmx)
        self.users = _users(self.elements)
        self.top = list(dmx.top_level) if dmx.top_level is not None else [
            e for k, e in enumerate(self.elements) if k == 0 or self.users.get(id(e), 0) != 1]
        self.top_ids = {id(e) for e in self.top}
        self.written: set[int] = set()
        self.depth = 0
        self.total = len({id(e) for e in self.elements})
        self.unwritten = 0  # elements before this index are written (the scan for the next one never goes back)

    def tok(self, raw: str, before: str) -> None:
        self.raws.append(raw)
        self.trivia.append(before)

    def run(self) -> None:
        queue = list(self.top)
        k = 0
        while k < len(queue) or len(self.written) < self.total:
            if k == len(queue):  # an element no written one holds inline: it goes to the top level
                while id(self.elements[self.unwritten]) in self.written:
                    self.unwritten += 1
                queue.append(self.elements[self.unwritten])
            e = queue[k]
            k += 1
            if id(e) in self.written:
                continue
            self.tok(e.raw[0] if e.raw and e.raw[0] else quote(e.type or ""), self.nl + self.nl if k > 1 else self.nl)
            self.element(e, "")
        self.trivia.append(self.nl + self.nl)

    def element(self, e: Element, indent: str) -> None:
        """The braces and attributes of `e` (its type token already written), braces at `indent`; elements
        written inline in it go through a stack of generators, never recursion (as the reader's)."""
        _trampoline(self._element(e, indent), self._element)

    def _element(self, e: Element, indent: str) -> Generator[tuple, None, None]:
        self.written.add(id(e))
        self.depth += 1
        inner = indent + "\t"
        self.tok("{", self.nl + indent)
        raw = e.raw or (None, None, None)
        if e.id is not None:
            self.line(inner, '"id"', '"elementid"', raw[1] or quote(str(e.id)))
        name_at = e.name_at if e.name_at is not None else 0
        for k, a in enumerate(e.attributes + [None]):
            if k == name_at and e.name is not None:
                if raw[2] == "" and e.name == "":  # no value, as read (`"name" string`)
                    self.line(inner, '"name"', "string")
                else:
                    self.line(inner, '"name"', '"string"', raw[2] if raw[2] and unquote(raw[2]) == e.name
                              else quote(e.name))
            if a is not None:
                yield from self._attribute(a, inner)
        self.tok("}", self.nl + indent)
        self.depth -= 1

    def line(self, indent: str, *raws: str) -> None:
        self.tok(raws[0], self.nl + indent)
        for r in raws[1:]:
            self.tok(r, " ")

    def _attribute(self, a: Attribute, indent: str) -> Generator[tuple, None, None]:
        same = a.raw is not None and a.seen == value_key(a)
        name_tok = a.raw[0] if same else quote(a.name)
        if a.type != AttrType.ELEMENT:
            type_tok = a.raw[1] if same else quote(NAME_OF[a.type] + ("_array" if a.array else ""))
            items = list(a.raw[2:]) if same else [
                quote(format_item(a.type, v)) for v in (a.value if a.array else [a.value])]
            if not a.array:
                self.line(indent, name_tok, type_tok, *items[:1])  # no item: an empty value written as read
                return
            self.line(indent, name_tok, type_tok)
            self.tok("[", " ")
            for k, item in enumerate(items):
                if k:
                    self.tok(",", "")
                self.tok(item, " " if k else "")
            self.tok("]", "" if items else " ")
            return
        yield from self._element_attribute(a, indent, name_tok, same)

    def inline(self, a: Attribute, k: int | None, child: Any) -> bool:
        if not isinstance(child, Element) or id(child) in self.written or id(child) in self.top_ids \
                or self.depth >= MAX_DEPTH:
            return False
        flag = a.inline if k is None or a.inline is None else (a.inline[k] if k < len(a.inline) else None)
        return bool(flag) if flag is not None else self.users.get(id(child), 0) == 1

    def reference(self, child: Any, a: Attribute, k: int, same: bool) -> str:
        if same and 2 + k < len(a.raw) and a.raw[2 + k] is not None:
            return a.raw[2 + k]
        if child is None:
            return '""'
        if isinstance(child, Stub):
            return quote(child.id or "")
        return child.raw[1] if child.raw and child.raw[1] else quote(str(child.id or ""))

    def _element_attribute(self, a: Attribute, indent: str, name_tok: str, same: bool) -> Generator[tuple, None, None]:
        if not a.array:
            if self.inline(a, None, a.value):
                self.line(indent, name_tok, a.value.raw[0] if a.value.raw else quote(a.value.type or ""))
                yield (a.value, indent)
            elif same and len(a.raw) == 2:  # a null element written as read (no value)
                self.line(indent, *a.raw)
            else:
                self.line(indent, name_tok, '"element"', self.reference(a.value, a, 0, same))
            return
        self.line(indent, name_tok, '"element_array"')
        if not a.value:
            self.tok("[", " ")
            self.tok("]", " ")
            return
        self.tok("[", " " + self.nl + indent)
        inner = indent + "\t"
        for k, child in enumerate(a.value):
            if k:
                self.tok(",", "")
            if self.inline(a, k, child):
                self.tok(child.raw[0] if child.raw else quote(child.type or ""), self.nl + inner)
                yield (child, inner)
            else:
                self.line(inner, '"element"', self.reference(child, a, k, same))
        self.tok("]", self.nl + indent)


def write(dmx: DmxFile, header: str) -> bytes:
    nl = "\r\n" if dmx.layout and dmx.layout[1] and dmx.layout[1][0].startswith("\r\n") else "\n"
    w = _Writer(dmx, nl)
    w.run()
    trivia = w.trivia
    if dmx.layout is not None and dmx.layout[0] == "".join(kind(r) for r in w.raws):
        trivia = dmx.layout[1]
    text = header + "".join(t + r for t, r in zip(trivia, w.raws)) + trivia[-1]
    return text.encode("utf-8", "surrogateescape")
