"""A record behaves as the frozen dataclass it stands in for."""

from __future__ import annotations

from typing import Any, cast

import pytest

from joulie_simhw.record import FrozenInstanceError, asdict, field, record, replace


@record
class Board:
    index: int
    name: str = "board"
    tokens: dict[str, str] = field(default_factory=dict)


def test_positional_and_keyword_fields_with_defaults_in_order() -> None:
    assert asdict(Board(1)) == {"index": 1, "name": "board", "tokens": {}}
    assert Board(1, "h100") == Board(index=1, name="h100")
    assert repr(Board(2, tokens={"a": "b"})) == "Board(index=2, name='board', tokens={'a': 'b'})"


def test_a_default_factory_gives_each_record_its_own_value() -> None:
    a, b = Board(0), Board(1)
    a.tokens["x"] = "y"
    assert b.tokens == {}


def test_fields_cannot_be_set_or_deleted() -> None:
    b = Board(0)
    with pytest.raises(FrozenInstanceError, match="cannot assign to field 'index' of Board"):
        b.index = 1  # type: ignore[misc]
    with pytest.raises(FrozenInstanceError):
        del b.name


def test_equality_and_hash_follow_the_fields() -> None:
    assert Board(0, "a") != Board(0, "b")
    same_values: object = (0, "board", {})
    assert Board(0) != same_values
    assert hash(replace(Board(0), tokens=())) == hash(Board(0, "board", ()))  # type: ignore[arg-type]


def test_replace_copies_with_changes_and_names_an_unknown_field() -> None:
    b = Board(0, "a")
    assert replace(b, name="b") == Board(0, "b") and b.name == "a"
    with pytest.raises(TypeError, match="Board has no field 'colour'"):
        replace(b, colour="red")


@pytest.mark.parametrize(("args", "kwargs", "message"), [
    ((), {}, "Board\\(\\) missing required argument 'index'"),
    ((0, "a", {}, 1), {}, "takes 3 positional arguments but 4 were given"),
    ((0,), {"index": 1}, "multiple values for argument 'index'"),
    ((0,), {"colour": "red"}, "unexpected keyword argument 'colour'"),
])
def test_a_wrong_construction_is_refused_as_a_dataclass_refuses_it(
        args: tuple[object, ...], kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(TypeError, match=message):
        cast(Any, Board)(*args, **kwargs)
