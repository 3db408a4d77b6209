"""SkinBridge: import and export rigged, skinned, animated models between Blender and game formats.

Only register()/unregister() live here; bpy-facing modules are imported inside register() so that
`import skinbridge.core` and every codec work in a Python without Blender. What gets registered comes from the
format registry (`formats.py`, read by `app/operators.py`).
"""


def register():
    from .app import operators  # bpy: registration only (this package imports without Blender)
    from .blender import translations  # bpy: likewise

    operators.register()
    translations.register(__name__)


def unregister():
    from .app import operators  # bpy: registration only (this package imports without Blender)
    from .blender import translations  # bpy: likewise

    translations.unregister()
    operators.unregister()
