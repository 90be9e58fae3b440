from typing import Any

import pytest

from joulie_common.merge import deep_merge


@pytest.mark.parametrize(("base", "over", "want"), [
    ({}, {"a": 1}, {"a": 1}),
    ({"a": 1}, {}, {"a": 1}),
    ({"a": {"b": 1, "c": 2}}, {"a": {"c": 3, "d": 4}}, {"a": {"b": 1, "c": 3, "d": 4}}),
    ({"a": [1, 2]}, {"a": [3]}, {"a": [3]}),  # lists are replaced, not appended
    ({"a": {"b": 1}}, {"a": 5}, {"a": 5}),  # a scalar replaces a map
    ({"a": 5}, {"a": {"b": 1}}, {"a": {"b": 1}}),  # and a map a scalar
    ({"a": {"b": {"c": 1}}}, {"a": {"b": {"d": 2}}}, {"a": {"b": {"c": 1, "d": 2}}}),
    ({"a": {"b": 1}}, {"a": None}, {"a": None}),
])
def test_maps_merge_key_by_key_and_everything_else_is_replaced(base: dict[str, Any], over: dict[str, Any],
                                                               want: dict[str, Any]) -> None:
    assert deep_merge(base, over) == want


def test_the_arguments_are_left_unchanged() -> None:
    base = {"a": {"b": 1}}
    over = {"a": {"c": 2}}
    deep_merge(base, over)
    assert base == {"a": {"b": 1}} and over == {"a": {"c": 2}}
