"""Wallpaper Engine puppets and models (`.mdl`, MDLV 4–23): the codec (`mdl`), the mapping to the core model
(`convert`, its unit in `units`), `info`, `check`, a puppet built in code (`sample`) and, inside Blender only,
import and export (`blender_io`) and the demo's rows (`blender_demo`). Uses the textures part for the image a
puppet is drawn with."""
