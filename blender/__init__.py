"""The Blender bridge: core.model.Scene ⇄ bpy data, shared by every format. Only its modules import bpy."""
