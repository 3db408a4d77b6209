"""Independent readers used by the tests (no Blender, none of our codecs)."""
