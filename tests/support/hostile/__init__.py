"""The hostile cases per format (`hostile_<format>.py`: targeted `cases()`, extra `seeds()`, settings), the shared
contract they are run through (`hostile_cases.py`) and the registry of attacked codecs (`hostile_registry.py`),
used by tests/safety/test_hostile.py, the family tests and bench/fuzz (docs/testing.md §3)."""
