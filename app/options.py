"""Options of `convert`, shared by the command line (without bpy) and the Blender pipeline.

The options every target takes are the fields below; a target's own options (`--profile`, `--scale`, ...) are
declared by its format package (`FormatSpec.options`, core/formatspec.py) and carried in `values`, filled with
their defaults from the specs, so that no format option is spelled here. An exporter reads its options as
attributes (`options.max_bones`); reading an option its target does not declare is an AttributeError.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .. import formats
from ..core.formatspec import Option


def declared(target: str | None) -> tuple[Option, ...]:
    """The options of `convert --to target` (none for a name that is no target)."""
    spec = formats.targets().get(target) if target else None
    return spec.options if spec is not None else ()


def all_options() -> dict[str, Option]:
    """Every option some target declares, by name (the first declaration where two targets share a name)."""
    out: dict[str, Option] = {}
    for spec in formats.targets().values():
        for o in spec.options:
            out.setdefault(o.name, o)
    return out


def alias_names() -> dict[str, str]:
    """An option's earlier name (`Option.aliases`) → its name, over every target."""
    return {a: o.name for o in all_options().values() for a in o.aliases}


def resolved(options: tuple[Option, ...], given: dict[str, Any]) -> dict[str, Any]:
    """The values of `options`: the given ones, else the value of the option a default follows (when it is
    one of this option's choices), else the declared default."""
    values = {o.name: given.get(o.name, o.default) for o in options}
    for o in options:
        if o.name not in given and o.default_from is not None and values.get(o.default_from) in o.values():
            values[o.name] = values[o.default_from]
    return values


@dataclass(init=False)
class ConvertOptions:
    target: str
    motions: list[str]
    protected: set[str]  # real paths of the inputs: never written
    name: str | None  # -n/--name: the model's name as the user gave it (written into files that name it)
    import_profile: str | None  # axes of an imported UrhoX model (None: as the file implies)
    values: dict[str, Any] = field(default_factory=dict)  # the target's options (FormatSpec.options)

    def __init__(self, target: str = "urhox", motions: list[str] | None = None, protected: set[str] | None = None,
                 name: str | None = None, import_profile: str | None = None, **given: Any):
        known = all_options()
        renamed = alias_names()
        given = {renamed.get(k, k): v for k, v in given.items()}
        unknown = sorted(set(given) - set(known))
        if unknown:
            raise TypeError(f"no target takes the option(s) {', '.join(unknown)}")
        self.target = target
        self.motions = list(motions or [])
        self.protected = set(protected or ())
        self.name = name
        self.import_profile = import_profile
        own = declared(target)
        # another target's option given in code (a test's shared options) is kept as given, never defaulted
        self.values = {**{k: v for k, v in given.items() if k not in {o.name for o in own}},
                       **resolved(own, given)}

    def given_paths(self) -> list[str]:
        """The files the target's path options name (read by the export: never written)."""
        return [self.values[o.name] for o in declared(self.target) if o.path and self.values.get(o.name)]

    def __getattr__(self, attr: str) -> Any:
        values = self.__dict__.get("values")
        if values is not None and attr in values:
            return values[attr]
        raise AttributeError(f"convert --to {self.__dict__.get('target')} takes no option {attr!r}")

    def __setattr__(self, attr: str, value: Any) -> None:
        if attr in type(self).__annotations__:
            object.__setattr__(self, attr, value)
        elif attr in all_options() or attr in alias_names():
            self.values[alias_names().get(attr, attr)] = value
        else:
            raise AttributeError(f"no target takes the option {attr!r}")
