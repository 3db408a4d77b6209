"""SkinBridge: import and export rigged, skinned, animated models between Blender and game formats.

Only register()/unregister() live here; bpy-facing modules are imported inside register() so that
`import skinbridge.core` and every codec work in a Python without Blender.
"""

# Each registers its own operators: the format packages, then the format-free contact-sheet operator.
_OPERATOR_MODULES = ("io_urhox", "io_pmx", "blender.ops_render")


def _modules():
    import importlib

    return [importlib.import_module(f"{__package__}.{name}") for name in _OPERATOR_MODULES]


def register():
    for module in _modules():
        module.register()


def unregister():
    for module in reversed(_modules()):
        module.unregister()
