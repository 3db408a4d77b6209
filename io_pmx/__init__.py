"""MikuMikuDance PMX 2.0/2.1: codec (`pmx`), validator (`validate`), summary (`info`), mapping (`convert`) and,
inside Blender only, import/export (`blender_io`, `blender_mmd`) with File menu entries (`ops`).

No bpy here: `import skinbridge.io_pmx.pmx` works in a Python without Blender; `register()` imports the
operators.
"""


def register():
    from . import ops

    ops.register()


def unregister():
    from . import ops

    ops.unregister()
