"""SkinBridge: import and export rigged, skinned, animated models between Blender and game formats.

Only register()/unregister() live here; bpy-facing modules are imported inside register() so that
`import skinbridge.core` and every codec work in a Python without Blender.
"""

_FORMAT_PACKAGES = ("io_urhox", "io_pmx")


def _packages():
    import importlib

    return [importlib.import_module(f"{__package__}.{name}") for name in _FORMAT_PACKAGES]


def register():
    for pkg in _packages():
        pkg.register()
    _render_ops().register()  # issue 10: contact-sheet operator


def unregister():
    _render_ops().unregister()  # issue 10: contact-sheet operator
    for pkg in reversed(_packages()):
        pkg.unregister()


# -- issue 10: the Blender-side operators that belong to no format (blender/ops_render.py) --
def _render_ops():
    import importlib

    return importlib.import_module(f"{__package__}.blender.ops_render")
# -- end issue 10 --
