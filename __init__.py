"""SkinBridge: import and export rigged, skinned, animated models between Blender and game formats.

Only register()/unregister() live here; bpy-facing modules are imported inside register() so that
`import skinbridge.core` and every codec work in a Python without Blender.
"""

_FORMAT_PACKAGES = ("io_urhox",)


def _packages():
    import importlib

    return [importlib.import_module(f"{__package__}.{name}") for name in _FORMAT_PACKAGES]


def register():
    for pkg in _packages():
        pkg.register()


def unregister():
    for pkg in reversed(_packages()):
        pkg.unregister()
