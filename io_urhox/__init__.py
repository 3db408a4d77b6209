"""UrhoX / Urho3D models (UMD2, UMDL, UMD3) and animations (UANI). Importable without bpy."""


def register():
    from . import ops

    ops.register()


def unregister():
    from . import ops

    ops.unregister()
