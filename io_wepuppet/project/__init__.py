"""Wallpaper Engine projects (`project.json`, `scene.json`): the documents as typed records (`project`), `info`
and, inside Blender only, the whole scene built and written back (`blender_io`). The top part: a project's layers
are puppets, models and textures."""
