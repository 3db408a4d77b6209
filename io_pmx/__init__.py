"""MikuMikuDance PMX 2.0/2.1: codec (`pmx`), validator (`validate`) and summary (`info`).

No bpy here: `import skinbridge.io_pmx.pmx` works in a Python without Blender. The File menu entries will be
registered here once the PMX operators exist.
"""


def register():
    pass


def unregister():
    pass
