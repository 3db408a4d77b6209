"""Helpers more than one test module uses (docs/testing.md §3), imported as `from support import name` or
`from support.name import thing`: independent readers and evaluators, files built field by field, offsets worked
out by hand, the hostile cases (`support.hostile`); a module that needs Blender says so in its docstring."""
