"""What one kind of file is and what SkinBridge can do with it: the record every format package declares.

A format package (`io_<family>/__init__.py`) lists its `FORMATS: tuple[FormatSpec, ...]`; `formats.py` collects
them into the one registry that registration, the command line, the pipeline, the demo, the benchmarks and the
tests read. Nothing here imports bpy.

Each capability is either a callable or a `"module:attribute"` path relative to the `skinbridge` package,
resolved only when used (so listing formats imports no codec and no bpy). Their signatures:

  read(data: bytes) -> records                   codec: bytes ⇄ records that mirror the file
  write(records) -> bytes
  info(data: bytes, path: str) -> dict           `skinbridge info`
  check(path: str, data: bytes, out) -> int      `skinbridge check`: prints findings through out(line);
                                                 returns 0 (clean), 1 (an error finding)
  load(path: str, data: bytes, with_animations: bool) -> (core.model.Scene, warnings)
                                                 the file as a core Scene without Blender (`compare`); a motion
                                                 gives a Scene with no skeleton and its animations
  blender_import(context, path, options) -> warnings          file → Blender scene (convert, render, drop)
  export_target(context, outdir, name, options) -> (written paths, warnings)    `convert --to <target>`
  motion_loader(context, path, armature, options) -> warnings `convert --motion FILE`
  semantic(records) -> warnings                  what an import runs after the read (hostile suite, fuzzing)
  demo(context, outdir, armature, mesh, options) -> (list of DemoRow, warnings)
                                                 the demo's rows: the humanoid exported and checked
  write_scene(scene, folder, name) -> [paths]   a core Scene written as files without Blender (the model first,
                                                 then its motions): what benchmarks and tests feed the importers
  rename_kept_bone(armature, old, new) -> str | None
                                                 the sidebar's Rename to Fit on a bone whose file name the format
                                                 keeps with it: what was done, None when no bone kept `old`
  kind_of(data: bytes) -> str                    for a spec whose files are of several kinds (SMD: model, motion,
                                                 flex): the kind of this file, decided by the codec
  diff_view(records) -> object                  what `skinbridge diff` walks of the records `read` returns, when
                                                 not the records themselves (GR2: its typed tree, not the sections'
                                                 bytes)
  members(path) -> {relative path: file}         a file that stands for its folder (a project): the files it holds,
                                                 what `skinbridge diff` compares one by one
  compare_view(scene) -> dict | None             a Scene gathered from Blender whose bones this format's import
                                                 made: how `compare` matches them and which skeleton fields the
                                                 format does not hold (as its `load` sets them); None otherwise
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any, Callable

_ROOT_PACKAGE = __package__.rsplit(".", 1)[0]  # "skinbridge", or Blender's "bl_ext.<repo>.skinbridge"

KINDS = ("model", "motion", "texture")

CAPABILITIES = ("read", "write", "info", "check", "load", "blender_import", "export_target", "motion_loader",
                "semantic", "demo", "write_scene", "kind_of", "rename_kept_bone",
                "compare_view", "diff_view", "members")


@dataclass(frozen=True)
class DemoRow:
    """One line of the demo's table: what was written and how it was checked."""
    exporter: str
    path: str
    size: int
    vertices: int | str = ""
    triangles: int | str = ""
    bones: int | str = ""
    seconds: float = 0.0
    checked: str = ""
    ok: bool = False


OPTION_TYPES = (bool, int, float, str)


@dataclass(frozen=True)
class Option:
    """One option of `convert --to <target>` and of the target's export operator, declared once by the format
    package: the command line flag, its checks, the operator property and the README table are made from it.

    `default` is what a conversion uses when the option is not given; None means "not set: the target decides"
    (its help says how), and then `ui_default` is where the operator property starts. `default_from` names
    another option of the same target whose value is this one's default when it is among `choices` (UrhoX:
    the animation format follows the profile). `unit` is in words ("degrees", "units per metre") and is the same
    on the command line and in the UI."""
    name: str                          # identifier: the ConvertOptions attribute and the operator property
    type: type                         # one of OPTION_TYPES; a str with no choices is free text (a name, a path)
    default: Any = None
    help: str = ""                     # one sentence, no trailing period
    unit: str = ""
    low: float | None = None           # inclusive limits of a number
    high: float | None = None
    choices: tuple[tuple[str, str, str], ...] = ()  # (value, UI name, description) of a closed set
    flag: str | None = None            # command line flag; None: --<name with dashes>
    default_from: str | None = None
    metavar: str | None = None         # the command line's name of the value (FILE.json, DEGREES)
    label: str = ""                    # the operator property's name; "": the name in title case
    path: bool = False                 # the value is a file path (a file browser in the UI)
    ui_default: Any = None
    check: str | None = None           # "module:function" reading a given value, raising on a bad one (convert
                                       # runs it before any input, so a bad value is a usage error)
    reading: bool = False              # an option of reading this format's files (a folder to search): every
                                       # `--to` takes it, and the format's export operator has no property for it
    blender_only: bool = False         # a choice only Blender's File › Export can make (it bakes what Blender
                                       # plays, or writes beside the .blend): `convert` refuses it in one line
    aliases: tuple[str, ...] = ()      # earlier names that keep working: more flags (--<alias>) on the command
                                       # line and hidden operator properties that set this option
    inverse_aliases: tuple[str, ...] = ()  # earlier operator property ids that held the inverse unit (metres
                                       # per pixel for a pixels-per-metre option): hidden, 1/value when set

    def __post_init__(self):
        if self.type not in OPTION_TYPES:
            raise ValueError(f"option {self.name}: type {self.type!r} is not one of {OPTION_TYPES}")
        if self.inverse_aliases and self.type is not float:
            raise ValueError(f"option {self.name}: only a number has an inverse")
        if self.choices and self.default is not None and self.default not in self.values():
            raise ValueError(f"option {self.name}: default {self.default!r} is not one of {self.values()}")

    @property
    def cli_flag(self) -> str:
        return self.flag or "--" + self.name.replace("_", "-")

    def values(self) -> tuple[str, ...]:
        return tuple(c[0] for c in self.choices)

    def checker(self) -> Callable[[Any], Any] | None:
        """The `check` callable, its module imported on first use (as a capability is)."""
        if self.check is None:
            return None
        module, _, attr = self.check.partition(":")
        return getattr(importlib.import_module(f"{_ROOT_PACKAGE}.{module}"), attr)

    def range_text(self) -> str:
        """What values it takes, in words: "1 to 255", "urhox or urho3d", "" for free text and switches."""
        if self.choices:
            return " or ".join(self.values())
        if self.low is not None and self.high is not None:
            return f"{self.low:g} to {self.high:g}"
        return ""


@dataclass(frozen=True)
class FormatSpec:
    name: str                         # short id, unique: "umd2", "pmx", "vmd", ...
    label: str                        # what a user calls it: "UrhoX / Urho3D model"
    kind: str                         # one of KINDS (the usual kind where kind_of decides per file)
    extensions: tuple[str, ...]       # lower case with the dot; the first is the one written
    sniff: Callable[[bytes], bool] | None = None  # content test on the file's first `head` bytes; None: the
    #                                   content says nothing and only the extension names the format
    head: int = 64                    # bytes the sniffer needs
    weak: bool = False                # the content test may match other formats' files (text): a strong match
    #                                   of another spec wins, and the extension breaks ties among weak ones
    target: str | None = None         # `convert --to` name, when the format is written by convert
    folder_suffix: str = "_out"       # `convert` output folder <stem><suffix> when -o is not given
    options: tuple[Option, ...] = ()  # what `convert --to <target>` and the export operator take besides the
    #                                   options every target takes (app/options.py); refused with other targets
    import_options: tuple[Option, ...] = ()  # the File › Import operator's choices (the command line imports
    #                                   with their defaults)
    operators: str | None = None      # module with register()/unregister() of its File › Import/Export entries
    import_operator: str | None = None  # bl_idname of its import operator (drag and drop calls it)
    export_operator: str | None = None
    foreign_operators: bool = False   # the operators named are another add-on's (Blender's glTF importer):
    #                                   no File menu entry and no drag-and-drop handler of ours
    capabilities: dict[str, Any] = field(default_factory=dict)
    clip_modes: bool = False          # a target that stores a clip's play mode (core.model CLIP_KEY "mode"):
    #                                   convert warns once when a clip whose mode is not a loop goes to one that
    #                                   does not
    rest_in_model: bool = False       # a motion whose keys are offsets from each bone's rest, which the model
    #                                   file holds: a rest moved in Blender leaves the motion's file as it was

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"format {self.name}: kind {self.kind!r} is not one of {KINDS}")
        unknown = set(self.capabilities) - set(CAPABILITIES)
        if unknown:
            raise ValueError(f"format {self.name}: unknown capabilities {sorted(unknown)}")
        bad = [e for e in self.extensions if not e.startswith(".") or e != e.lower()]
        if bad:
            raise ValueError(f"format {self.name}: extensions must be lower case and start with '.': {bad}")
        names = [o.name for o in self.options]
        aliases = [a for o in self.options for a in o.aliases + o.inverse_aliases]
        if len(set(names + aliases)) != len(names + aliases):
            raise ValueError(f"format {self.name}: an option is declared twice: {names}")
        for o in self.options:
            if o.default_from is not None and o.default_from not in names:
                raise ValueError(f"format {self.name}: option {o.name}'s default follows {o.default_from}, "
                                 "which this format does not declare")

    def has(self, capability: str) -> bool:
        return self.capabilities.get(capability) is not None

    def get(self, capability: str) -> Callable:
        """The callable for `capability`, importing its module on first use; KeyError when the format lacks it."""
        value = self.capabilities.get(capability)
        if value is None:
            raise KeyError(f"{self.label} files have no {capability}")
        if callable(value):
            return value
        module, _, attr = value.partition(":")
        return getattr(importlib.import_module(f"{_ROOT_PACKAGE}.{module}"), attr)
