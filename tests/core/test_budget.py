"""core/budget.py: the reading budget every reader keeps (issue 45)."""
from __future__ import annotations

import json

import pytest

from skinbridge.core import budget
from skinbridge.core.errors import FormatError


def test_unpacked_bytes_are_a_multiple_of_the_file_with_a_floor_and_a_cap():
    small = budget.Budget(1000)
    assert small.bytes_limit == budget.EXPANSION_FLOOR  # a 1 KB file may still unpack to a few MB
    mid = budget.Budget(4 << 20)
    assert mid.bytes_limit == 64 * (4 << 20)
    assert budget.Budget(1 << 30).bytes_limit == budget.EXPANSION_CAP


def test_the_budget_is_shared_by_every_section_of_one_file():
    b = budget.Budget(1 << 20, "GR2 file")  # 64 MiB
    for i in range(63):
        b.unpack(1 << 20, i, f"section {i}")
    b.unpack(1 << 20, 63, "section 63")
    with pytest.raises(FormatError) as e:
        b.unpack(1, 64, "section 64")
    assert "offset 64" in str(e.value) and "section 64" in str(e.value) and "67108865" in str(e.value)
    assert "1048576-byte GR2 file" in str(e.value)


def test_objects_and_loops_count_against_the_bytes_read():
    b = budget.Budget(100_000)
    b.objects(100_000, 0, "items")
    with pytest.raises(FormatError, match="declares 100001 items"):
        b.objects(1, 5, "more items")
    with pytest.raises(FormatError, match="negative"):
        budget.Budget(10).objects(-1, 0, "count")


def test_a_count_needs_the_bytes_that_hold_it_and_empty_items_count_one_byte():
    assert budget.fits(10, 4, 40, 0, "n") == 10
    with pytest.raises(FormatError, match="count 11 needs at least 44 bytes, 40 left"):
        budget.fits(11, 4, 40, 0, "n")
    with pytest.raises(FormatError, match="count 2147483648 needs at least 2147483648 bytes"):
        budget.fits(1 << 31, 0, 324, 12, "inline array")  # empty structs cannot loop 2^31 times


def test_deep_json_is_a_format_error_naming_where_not_a_recursion_error():
    deep = "[" * 100_000 + "]" * 100_000
    with pytest.raises(FormatError) as e:
        budget.load_json(deep, "scene.json")
    assert "nested 100000 levels deep" in str(e.value) and f"offset {100_000 - 1}" in str(e.value)
    assert "scene.json" in str(e.value)
    with pytest.raises(RecursionError):  # what json alone does with it
        json.loads(deep)


def test_brackets_inside_strings_do_not_count_and_shallow_json_loads():
    text = json.dumps({"name": "[" * 1000 + "\\\"{" * 500, "list": [[[1]]]})
    assert budget.json_depth(text) == (4, text.index("[[[1") + 2)  # the object, then three lists
    assert budget.load_json(text)["list"] == [[[1]]]
    exact = "[" * budget.MAX_NESTING + "]" * budget.MAX_NESTING
    assert budget.load_json(exact) is not None
    with pytest.raises(FormatError):
        budget.load_json("[" + exact + "]")


def test_nesting_cap():
    budget.nesting(256, 0, "include")
    with pytest.raises(FormatError, match="more than 256 levels"):
        budget.nesting(257, 3, "include")
