"""The one unit a puppet's mapping has: Blender metres per image pixel (docs/wallpaper_engine.md §4).

Its own module, without numpy, so that the family's registry record (io_wepuppet/__init__.py) takes the options'
defaults from here without loading the mapping: the import reads `METRES_PER_UNIT` (inward), the export writes
`UNITS_PER_METRE` (outward), its inverse.
"""

METRES_PER_UNIT = 0.01  # 100 image pixels = 1 m
UNITS_PER_METRE = 1.0 / METRES_PER_UNIT
