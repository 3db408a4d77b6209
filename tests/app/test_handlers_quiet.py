"""Every app handler SkinBridge registers is wrapped by `quiet_stop` (core/workers.py): a signal that lands while
Blender runs a handler is left for the next `check_stop` instead of a traceback Blender prints and drops (a
`convert` stopped by SIGTERM must end cleanly; tests/cli/test_signals_startup.py)."""
from __future__ import annotations

import pytest

bpy = pytest.importorskip("bpy")

from skinbridge.core.workers import _HANDLER_CODE  # noqa: E402  (after the bpy check)

pytestmark = [pytest.mark.blender]


def _ours() -> list[tuple[str, object]]:
    found = []
    for kind in dir(bpy.app.handlers):
        handlers = getattr(bpy.app.handlers, kind)
        if isinstance(handlers, list):
            found += [(kind, fn) for fn in handlers if getattr(fn, "__module__", "").startswith("skinbridge")]
    return found


def test_every_handler_of_the_addon_is_quiet_on_a_signal(addon):
    ours = _ours()
    assert len(ours) >= 4, ours  # the sidebar's, the MMD morphs' and the SDEF handlers at least
    loud = [f"{kind}: {fn.__module__}.{fn.__qualname__}" for kind, fn in ours
            if getattr(fn, "__code__", None) is not _HANDLER_CODE]
    assert not loud, loud
