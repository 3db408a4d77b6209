"""MMD's unit of length, defined once: by convention one unit is 8 cm (docs/mmd.md §2.1, §4.2).

Two names, one for each direction: `METRES_PER_UNIT` is what reading a file uses (Blender metres of one MMD unit,
the import's 0.08) and `UNITS_PER_METRE` what writing one uses (MMD units for one metre, the export's 12.5). No
imports, so that the registry (io_pmx/__init__.py) can name the default without loading a codec.
"""
METRES_PER_UNIT = 0.08
UNITS_PER_METRE = 1.0 / METRES_PER_UNIT
