"""Blender app handlers a part of the add-on keeps: added once, removed again. Each handler function is wrapped
by `core.workers.quiet_stop` where it is defined (tests/app/test_handlers_quiet.py holds them to it)."""
from __future__ import annotations


def add(pairs) -> None:
    """`pairs`: (a `bpy.app.handlers` list, the function) — each function added to its list once."""
    for handlers, fn in pairs:
        if fn not in handlers:
            handlers.append(fn)


def remove(pairs) -> None:
    for handlers, fn in pairs:
        if fn in handlers:
            handlers.remove(fn)
