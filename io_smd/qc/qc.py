"""QC (the studiomdl project file) reader and writer, without bpy: the commands that say which SMD / DMX / VTA
files make the model, and how (docs/source.md §7).

Grammar as studiomdl's tokenizer reads it: a token is a quoted string (no escapes: `"models\\props\\"` ends at
the second quote), `{`, `}` or a run of other non-blank characters; `//`, `#` and `;` comment to the line's
end, `/* */` spans lines. A command is a `$` token with the tokens on its line, then an optional `{ }` block
(its opening brace may stand on the next line); a block holds lines of the same shape. Names are case-blind.

Every file a QC names is resolved inside the QC's folder tree (a name leaving it is refused); `$include` is
followed with cycles refused and a depth cap. Commands this reader does not interpret are kept in order
(`QcProject.others`) and reported, never dropped.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from ...core.errors import FormatError
from ...core.fileio import read_bytes

MAX_INCLUDE_DEPTH = 16
MAX_INCLUDES = 256  # files read per project: one .qci included twice per level would otherwise double per level
MAX_BLOCK_DEPTH = 64
# Source's own limits (studiomdl.h and studio.h of the Source SDK; docs/source.md §7.3): a project above them
# would not compile, and each placement costs a model in Blender, so it is refused in one line
MAX_BODY_PARTS = 32  # MAXSTUDIOBODYPARTS: $body, $model and $bodygroup each make one
MAX_BODY_CHOICES = 32  # MAXSTUDIOMODELS: the studio and blank lines of one $bodygroup
MAX_LODS = 8  # MAX_NUM_LODS
MAX_REPLACEMENTS = MAX_BODY_PARTS * MAX_BODY_CHOICES  # replacemodel lines of one $lod: one per model it can name
MAX_SEQUENCES = 1524  # MAXSTUDIOSEQUENCES
MAX_ANIMATIONS = 2000  # MAXSTUDIOANIMS
DEFAULT_FPS = 30.0  # studiomdl's rate of a sequence that gives none
SOURCE_EXTENSIONS = (".smd", ".dmx", ".vta")
_TOKEN = re.compile(r'"[^"\n]*"?|\{|\}|//[^\n]*|/\*.*?(?:\*/|\Z)|[#;][^\n]*|[^\s{}"]+', re.S)

# $sequence / $animation options and how many values follow each: their values are never taken for file names
SEQUENCE_OPTIONS = {
    "fps": 1, "loop": 0, "snap": 0, "delta": 0, "realtime": 0, "hidden": 0, "autoplay": 0, "post": 0,
    "frames": 2, "frame": 2, "activity": 2, "blend": 3, "blendwidth": 1, "blendref": 1, "blendcenter": 1,
    "calcblend": 3, "fadein": 1, "fadeout": 1, "node": 1, "transition": 2, "rtransition": 2, "exitphase": 1,
    "origin": 3, "rotate": 1, "angles": 3, "scale": 1, "weightlist": 1, "addlayer": 1, "blendlayer": 5,
    "numframes": 1, "startloop": 1, "subtract": 2, "presubtract": 1, "worldspace": 0, "noanimation": 0,
    "noautoik": 0, "autoik": 0, "alignto": 1, "align": 3, "alignboneto": 2, "walkframe": 1, "walkalignto": 2,
    "walkalign": 2, "rotateto": 1, "fixuploop": 2, "entrystate": 1, "exitstate": 1, "ikrule": 0, "event": 0,
}


@dataclass
class Token:
    text: str
    line: int
    quoted: bool
    first: bool  # first token of its line (a new command or block line starts here)
    start: int = 0  # where it stands in its file's text (a quoted token: its opening quote)
    end: int = 0


@dataclass
class Command:
    """One command as written: its name (lower case), the values on its line, its block's lines, where."""
    name: str
    args: list[str]
    block: list["Command"] | None
    line: int
    file: str
    start: int = 0  # its text in its file: from its name to its last value or its block's closing brace
    end: int = 0
    arg_spans: list[tuple[int, int]] = field(default_factory=list)  # each value's text (quotes included)

    def where(self) -> str:
        return f"{os.path.basename(self.file)} line {self.line}: {self.name}"


@dataclass
class Body:
    name: str
    file: str
    flex_file: str | None = None  # a $model's `flexfile` (VTA)


@dataclass
class BodyGroup:
    name: str
    choices: list[str | None]  # a file, or None for `blank`


@dataclass
class Lod:
    threshold: float
    replacements: list[tuple[str, str]]  # (model file, its stand-in at this LOD)


@dataclass
class Sequence:
    name: str
    files: list[str]
    fps: float = DEFAULT_FPS
    loop: bool = False
    options: list[str] = field(default_factory=list)  # what else its line and block say, as written
    animation: bool = False  # written as $animation (a building block of sequences)


@dataclass
class Collision:
    file: str
    joints: bool  # $collisionjoints: one convex piece per bone
    options: list[Command] = field(default_factory=list)


@dataclass
class DefineBone:
    name: str
    parent: str
    position: tuple[float, float, float]
    rotation: tuple[float, float, float]  # degrees, as the QC writes them


@dataclass
class QcProject:
    path: str
    model_name: str = ""
    bodies: list[Body] = field(default_factory=list)
    body_groups: list[BodyGroup] = field(default_factory=list)
    lods: list[Lod] = field(default_factory=list)
    sequences: list[Sequence] = field(default_factory=list)
    collision: Collision | None = None
    bones: list[DefineBone] = field(default_factory=list)
    scale: float = 1.0
    up_axis: str = "Z"
    origin: tuple[float, ...] = (0.0, 0.0, 0.0)
    cd_materials: list[str] = field(default_factory=list)
    includes: list[str] = field(default_factory=list)
    others: list[Command] = field(default_factory=list)  # not interpreted: kept and reported
    warnings: list[str] = field(default_factory=list)

    def files(self) -> list[str]:
        """Every file the project names (models, LODs, flex, sequences, collision), each once, in order."""
        out = [b.file for b in self.bodies] + [b.flex_file for b in self.bodies if b.flex_file]
        out += [c for g in self.body_groups for c in g.choices if c]
        out += [new for lod in self.lods for _, new in lod.replacements]
        out += [f for s in self.sequences for f in s.files]
        out += [self.collision.file] if self.collision else []
        return list(dict.fromkeys(out))


# -- tokens and commands ---------------------------------------------------------------------------------

def tokenize(text: str) -> list[Token]:
    out: list[Token] = []
    line, last_line, pos = 1, 0, 0
    for m in _TOKEN.finditer(text):
        line += text.count("\n", pos, m.start())
        pos = m.start()
        raw = m.group()
        if raw.startswith(("//", "/*", "#", ";")):
            continue
        if raw.startswith('"'):
            if len(raw) < 2 or not raw.endswith('"'):
                raise FormatError(f"line {line}: a quoted string is not closed on its line", None, "string")
            out.append(Token(raw[1:-1], line, True, line != last_line, m.start(), m.end()))
        else:
            out.append(Token(raw, line, False, line != last_line, m.start(), m.end()))
        last_line = line
    return out


def _command(tokens: list[Token], k: int, file: str, depth: int) -> tuple[Command, int]:
    head = tokens[k]
    args, k = [], k + 1
    while k < len(tokens) and not tokens[k].first and (tokens[k].quoted or tokens[k].text not in "{}"):
        args.append(tokens[k])
        k += 1
    block = None
    if k < len(tokens) and tokens[k].text == "{" and not tokens[k].quoted:
        block, k = _block(tokens, k + 1, file, depth + 1, head)
    name = head.text.lower() if not head.quoted else head.text
    return Command(name, [t.text for t in args], block, head.line, file, head.start, tokens[k - 1].end,
                   [(t.start, t.end) for t in args]), k


def _block(tokens: list[Token], k: int, file: str, depth: int, opener: Token) -> tuple[list[Command], int]:
    if depth > MAX_BLOCK_DEPTH:
        raise FormatError(f"line {opener.line}: {opener.text}: blocks nest deeper than {MAX_BLOCK_DEPTH}", None,
                          opener.text)
    lines: list[Command] = []
    while k < len(tokens):
        t = tokens[k]
        if t.text == "}" and not t.quoted:
            return lines, k + 1
        if t.text == "{" and not t.quoted:  # a block without a head ($texturegroup's skin families)
            inner, k = _block(tokens, k + 1, file, depth + 1, t)
            lines.append(Command("{", [], inner, t.line, file))
            continue
        cmd, k = _command(tokens, k, file, depth)
        lines.append(cmd)
    raise FormatError(f"line {opener.line}: {opener.text}: its block is not closed", None, opener.text)


def commands(text: str, file: str) -> list[Command]:
    """The top-level commands of one QC text; FormatError naming the line of a token outside any command."""
    tokens = tokenize(text)
    out: list[Command] = []
    k = 0
    while k < len(tokens):
        t = tokens[k]
        if t.quoted or not t.text.startswith("$"):
            after = f" (after {out[-1].name} of line {out[-1].line})" if out else ""
            raise FormatError(f"{os.path.basename(file)} line {t.line}: {t.text!r} is not a command{after}", None,
                              out[-1].name if out else "command")
        cmd, k = _command(tokens, k, file, 0)
        out.append(cmd)
    return out


# -- the project -----------------------------------------------------------------------------------------

class _Reader:
    def __init__(self, path: str):
        self.root = os.path.dirname(os.path.realpath(path))
        self.project = QcProject(path=path)
        self.animations: dict[str, Sequence] = {}
        self.counts: dict[str, int] = {}  # $sequence and $animation commands read
        self.stack: list[str] = []

    def fail(self, cmd: Command, message: str) -> FormatError:
        return FormatError(f"{cmd.where()}: {message}", None, cmd.name)

    def resolve(self, cmd: Command, name: str, extensions: tuple[str, ...] = SOURCE_EXTENSIONS,
                required: bool = True) -> str | None:
        """The file `name` of `cmd` inside the QC's folder tree (an extension added where the name has none);
        FormatError when it leaves the tree, or (`required`) when no such file exists."""
        rel = name.replace("\\", "/")
        if not rel or re.search(r"[\x00-\x1f]", rel):
            if not required:  # a sequence option's value, never a file
                return None
            raise self.fail(cmd, f"{name!r} is no file name (empty, or a control character in it)")
        if os.path.isabs(rel) or re.match(r"^[A-Za-z]:", rel):
            raise self.fail(cmd, f"{name!r} is an absolute path: files must lie in the QC's folder")
        has_ext = os.path.splitext(rel)[1].lower() in extensions
        # studiomdl looks beside the QC; an included file's own folder is tried first
        folders = list(dict.fromkeys([os.path.dirname(self.stack[-1]) if self.stack else self.root, self.root]))
        for here in folders:
            base = os.path.normpath(os.path.join(here, rel))
            if os.path.commonpath([os.path.realpath(base), self.root]) != self.root:
                raise self.fail(cmd, f"{name!r} lies outside the QC's folder")
            for candidate in [base] if has_ext else [base + e for e in extensions] + [base]:
                if os.path.isfile(candidate):
                    return candidate
        if required:
            raise self.fail(cmd, f"no file {name!r} beside the QC")
        return None

    def read_file(self, path: str, via: Command | None) -> None:
        real = os.path.realpath(path)
        if real in self.stack:
            raise self.fail(via, f"includes {os.path.basename(path)!r} again: an $include cycle")
        if len(self.stack) >= MAX_INCLUDE_DEPTH:
            raise self.fail(via, f"$include nests deeper than {MAX_INCLUDE_DEPTH}")
        if len(self.project.includes) > MAX_INCLUDES:
            raise self.fail(via, f"more than {MAX_INCLUDES} $include files")
        text = read_bytes(path).decode("utf-8", "replace")
        self.stack.append(real)
        try:
            for cmd in commands(text, path):
                self.command(cmd)
        finally:
            self.stack.pop()

    def command(self, cmd: Command) -> None:
        handler = _HANDLERS.get(cmd.name)
        if handler is None:
            self.project.others.append(cmd)
            return
        handler(self, cmd)

    def need(self, cmd: Command, count: int) -> None:
        if len(cmd.args) < count:
            raise self.fail(cmd, f"needs {count} value(s) on its line, has {len(cmd.args)}")

    def room(self, cmd: Command, count: int, limit: int, what: str) -> None:
        """Refuse one more of `what` when `count` already reach Source's `limit`."""
        if count >= limit:
            raise self.fail(cmd, f"more {what} than Source's studiomdl takes ({limit})")

    def number(self, cmd: Command, text: str) -> float:
        try:
            return float(text)
        except ValueError:
            raise self.fail(cmd, f"{text!r} is not a number") from None


def _include(r: _Reader, cmd: Command) -> None:
    r.need(cmd, 1)
    path = r.resolve(cmd, cmd.args[0], (".qci", ".qc"))
    r.project.includes.append(path)
    r.read_file(path, cmd)


def _model_name(r: _Reader, cmd: Command) -> None:
    r.need(cmd, 1)
    r.project.model_name = cmd.args[0]


def _body(r: _Reader, cmd: Command) -> None:
    r.need(cmd, 2)
    r.room(cmd, len(r.project.bodies) + len(r.project.body_groups), MAX_BODY_PARTS,
           "body parts ($body, $model and $bodygroup)")
    body = Body(cmd.args[0], r.resolve(cmd, cmd.args[1]))
    for line in cmd.block or []:
        if line.name == "flexfile":
            if not line.args:
                raise r.fail(cmd, f"line {line.line}: flexfile names no file")
            body.flex_file = r.resolve(cmd, line.args[0], (".vta", ".dmx"))
    r.project.bodies.append(body)


def _body_group(r: _Reader, cmd: Command) -> None:
    r.need(cmd, 1)
    r.room(cmd, len(r.project.bodies) + len(r.project.body_groups), MAX_BODY_PARTS,
           "body parts ($body, $model and $bodygroup)")
    choices: list[str | None] = []
    for line in cmd.block or []:
        if line.name in ("blank", "studio"):
            r.room(cmd, len(choices), MAX_BODY_CHOICES, "choices in one $bodygroup")
        if line.name == "blank":
            choices.append(None)
        elif line.name == "studio" and line.args:
            choices.append(r.resolve(cmd, line.args[0]))
        else:
            r.project.warnings.append(f"{cmd.where()}: line {line.line}: {line.name!r} is not read")
    r.project.body_groups.append(BodyGroup(cmd.args[0], choices))


def _lod(r: _Reader, cmd: Command) -> None:
    r.need(cmd, 1)
    r.room(cmd, len(r.project.lods), MAX_LODS, "$lod commands")
    lod = Lod(r.number(cmd, cmd.args[0]), [])
    for line in cmd.block or []:
        if line.name == "replacemodel":
            r.room(cmd, len(lod.replacements), MAX_REPLACEMENTS, "replacemodel lines in one $lod")
            if len(line.args) < 2:
                raise r.fail(cmd, f"line {line.line}: replacemodel needs two files")
            lod.replacements.append((r.resolve(cmd, line.args[0]), r.resolve(cmd, line.args[1])))
    r.project.lods.append(lod)


def _sequence_values(r: _Reader, cmd: Command, seq: Sequence, values: list[str]) -> None:
    k = 0
    while k < len(values):
        word = values[k]
        arity = SEQUENCE_OPTIONS.get(word.lower())
        if arity is not None:
            given = values[k + 1:k + 1 + arity]
            if len(given) < arity:
                raise r.fail(cmd, f"{word} needs {arity} value(s)")
            if word.lower() == "fps":
                seq.fps = r.number(cmd, given[0])
                if not 0 < seq.fps < 1e6:
                    raise r.fail(cmd, f"fps {given[0]} is not a positive rate")
            elif word.lower() == "loop":
                seq.loop = True
            seq.options += [word, *given]
            k += 1 + arity
            continue
        source = r.animations.get(word)
        if source is not None:
            seq.files += source.files
            if "fps" not in (o.lower() for o in seq.options):
                seq.fps = source.fps
            seq.loop = seq.loop or source.loop
        else:
            found = r.resolve(cmd, word, required=False)
            if found is not None:
                seq.files.append(found)
            else:
                seq.options.append(word)
        k += 1


def _sequence(r: _Reader, cmd: Command) -> None:
    r.need(cmd, 1)
    r.room(cmd, r.counts.get(cmd.name, 0), MAX_ANIMATIONS if cmd.name == "$animation" else MAX_SEQUENCES,
           f"{cmd.name} commands")
    r.counts[cmd.name] = r.counts.get(cmd.name, 0) + 1
    seq = Sequence(cmd.args[0], [], animation=cmd.name == "$animation")
    _sequence_values(r, cmd, seq, cmd.args[1:])
    for line in cmd.block or []:
        if line.block is not None:  # event { }, ikrule ... { }: kept as written
            seq.options.append(line.name)
            continue
        _sequence_values(r, cmd, seq, ([line.name] if line.name != "{" else []) + line.args)
    if not seq.files:
        raise r.fail(cmd, f"{seq.name!r} names no animation file found beside the QC")
    if seq.animation:
        r.animations[seq.name] = seq
    r.project.sequences.append(seq)


def _collision(r: _Reader, cmd: Command) -> None:
    r.need(cmd, 1)
    r.project.collision = Collision(r.resolve(cmd, cmd.args[0]), cmd.name == "$collisionjoints",
                                    list(cmd.block or []))


def _define_bone(r: _Reader, cmd: Command) -> None:
    r.need(cmd, 8)
    v = [r.number(cmd, x) for x in cmd.args[2:8]]
    r.project.bones.append(DefineBone(cmd.args[0], cmd.args[1], (v[0], v[1], v[2]), (v[3], v[4], v[5])))


def _scale(r: _Reader, cmd: Command) -> None:
    r.need(cmd, 1)
    r.project.scale = r.number(cmd, cmd.args[0])


def _up_axis(r: _Reader, cmd: Command) -> None:
    r.need(cmd, 1)
    axis = cmd.args[0].upper()
    if axis not in ("X", "Y", "Z"):
        raise r.fail(cmd, f"{cmd.args[0]!r} is not X, Y or Z")
    r.project.up_axis = axis


def _origin(r: _Reader, cmd: Command) -> None:
    r.need(cmd, 3)
    r.project.origin = tuple(r.number(cmd, x) for x in cmd.args[:4])


def _cd_materials(r: _Reader, cmd: Command) -> None:
    r.need(cmd, 1)
    r.project.cd_materials += cmd.args


_HANDLERS = {
    "$include": _include, "$modelname": _model_name, "$body": _body, "$model": _body,
    "$bodygroup": _body_group, "$lod": _lod, "$sequence": _sequence, "$animation": _sequence,
    "$collisionmodel": _collision, "$collisionjoints": _collision, "$definebone": _define_bone,
    "$scale": _scale, "$upaxis": _up_axis, "$origin": _origin, "$cdmaterials": _cd_materials,
}


def read(path: str) -> QcProject:
    """The project of the QC at `path` (its $include files followed); FormatError naming file, line and
    command on what cannot be read. Commands not interpreted are in `others` and in `warnings`."""
    r = _Reader(path)
    r.read_file(path, None)
    p = r.project
    if p.others:
        names = sorted({c.name for c in p.others})
        p.warnings.append(f"{os.path.basename(path)}: {len(p.others)} command(s) kept but not interpreted: "
                          + ", ".join(names))
    return p


def sequence_rates(folder: str) -> dict[str, tuple[float, bool]]:
    """{real path of an animation file: (fps, loop)} from every QC in `folder` naming it (the first QC in
    name order wins); a QC that cannot be read is skipped, since the files it would describe still import."""
    out: dict[str, tuple[float, bool]] = {}
    try:
        names = sorted(n for n in os.listdir(folder) if n.lower().endswith(".qc"))
    except OSError:
        return out
    for n in names:
        try:
            project = read(os.path.join(folder, n))
        except (FormatError, OSError):
            continue
        for seq in project.sequences:
            for f in seq.files:
                out.setdefault(os.path.realpath(f), (seq.fps, seq.loop))
    return out


# -- writing ---------------------------------------------------------------------------------------------

def _q(text: str) -> str:
    """A quoted token: a QC string has no escapes, so a quote or a line break inside cannot be written."""
    return '"' + re.sub(r"[\x00-\x1f]", "_", text.replace('"', "'")) + '"'


def _rate(fps: float) -> str:
    return f"{fps:.6f}".rstrip("0").rstrip(".")


def write_text(model_name: str, bodies: list[tuple[str, str, str | None]],
               sequences: list[tuple[str, str, float, bool]], notes: list[str] = ()) -> str:
    """A QC naming written files: `bodies` (name, model file, VTA or None) and `sequences` (name, file, fps,
    loop), file names relative to the QC; `notes` become comment lines at the top (the exporter's options)."""
    out = [f"// {n}" for n in notes]
    out.append(f"$modelname {_q(model_name)}")
    for name, file, flex in bodies:
        if flex:
            out += [f"$model {_q(name)} {_q(file)}", "{", f"\tflexfile {_q(flex)}", "}"]
        else:
            out.append(f"$body {_q(name)} {_q(file)}")
    for name, file, fps, loop in sequences:
        out.append(f"$sequence {_q(name)} {_q(file)} fps {_rate(fps)}" + (" loop" if loop else ""))
    return "\n".join(out) + "\n"


def sequence_text(name: str, file: str, fps: float, loop: bool = False) -> str:
    """One `$sequence` command naming `file` at `fps`."""
    return f"$sequence {_q(name)} {_q(file)} fps {_rate(fps)}" + (" loop" if loop else "")


def _whole_lines(text: str, start: int, end: int) -> tuple[int, int]:
    """`start`..`end` widened to whole lines when only blanks stand beside it on them, and over the blank line
    after it when one stands before it too (a command removed leaves no gap of two lines behind)."""
    head = text.rfind("\n", 0, start) + 1
    tail = text.find("\n", end)
    tail = len(text) if tail < 0 else tail + 1
    if text[head:start].strip() or text[end:tail].strip():
        return start, end
    after = text.find("\n", tail)
    if (head == 0 or text[head - 2:head] == "\n\n") and after >= 0 and not text[tail:after].strip():
        tail = after + 1  # between blank lines: one of them goes too
    return head, tail


def edit_sequences(text: str, file: str, renamed: dict[str, str], rates: dict[str, float], removed: set[str],
                   added: list[str] = ()) -> str:
    """`text` (one QC or QCI file) with its `$sequence` commands changed where the scene changed them, every
    other character as it was: a sequence of `renamed` gets its new name, one of `rates` its new fps (its `fps`
    value replaced, or `fps N` added on its line), one of `removed` goes with its block; `added` commands
    follow the last `$sequence` (else end the file)."""
    edits: list[tuple[int, int, str]] = []
    last = None
    for cmd in commands(text, file):
        if cmd.name != "$sequence" or not cmd.args:
            continue
        last = cmd
        name = cmd.args[0]
        if name in removed:
            edits.append((*_whole_lines(text, cmd.start, cmd.end), ""))
            continue
        if name in renamed:
            edits.append((*cmd.arg_spans[0], _q(renamed[name])))
        if name in rates:
            edits.append(_fps_edit(cmd, _rate(rates[name])))
    if added:
        lines = "".join(a + "\n" for a in added)
        if last is not None:
            at = text.find("\n", last.end)
            at = len(text) if at < 0 else at + 1
            prefix = "" if at > 0 and text[at - 1] == "\n" else "\n"
            edits.append((at, at, prefix + lines))
        else:
            edits.append((len(text), len(text), ("\n" if text and not text.endswith("\n") else "") + lines))
    for start, end, new in sorted(edits, key=lambda e: e[0], reverse=True):
        text = text[:start] + new + text[end:]
    return text


def _fps_edit(cmd: Command, rate: str) -> tuple[int, int, str]:
    """The edit that gives sequence `cmd` the rate `rate`: its `fps` value (on its line or in its block), else
    `fps N` after its line's last value."""
    for line in [cmd] + [b for b in cmd.block or [] if b.name != "{"]:
        values = line.args if line is cmd else [line.name] + line.args
        spans = line.arg_spans if line is cmd else [(line.start, line.start)] + line.arg_spans
        for k, word in enumerate(values[:-1]):
            if word.lower() == "fps" and (k or line is not cmd):  # the sequence's name may be "fps"
                return (*spans[k + 1], rate)
    at = cmd.arg_spans[-1][1]
    return at, at, f" fps {rate}"


# -- registry --------------------------------------------------------------------------------------------

def kind_of(data: bytes) -> str:
    """A QC is a project, neither a model nor a motion: an output folder's one model is the SMD beside it."""
    return "project"
