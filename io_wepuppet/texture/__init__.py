"""Wallpaper Engine textures (`.tex`): the codec (`tex`, with `pixel_formats` and `bc7`), GIF files inside a
texture (`gif`), sprite sheets (`sheet`), material documents (`material`), `info`, `check` and, inside Blender
only, import and export of an image (`blender_io`, `blender_sheet`). The lowest part of `io_wepuppet`."""
