"""The fast path of the request parser answers as the full parse does, with and without the raw Nodes."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from joulie_extender import wire
from joulie_extender.wire import encode, filter_result, parse_extender_args


def node(name: str, labels: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels}, "status": {"capacity": {"cpu": "8"}}}


NODES = [
    node("a", {"joulie.io/power-profile": "eco", "other": "x"}),
    node("b", {"joulie.io/power-profile": ""}),
    node("c", None),
    node("d", {"joulie.io/power-profile": "performance", "numeric": 7}),  # another label's odd value is skipped
]
BODY = encode({"Pod": {"metadata": {"name": "p"}}, "Nodes": {"items": NODES}, "NodeNames": None})


def seen(args: wire.ExtenderArgs) -> list[tuple[str, str | None]]:
    return [(n.name, n.profile_label) for n in args.nodes or []]


def full_parse(body: bytes) -> wire.ExtenderArgs:
    """The standard-library parse alone (the fast path made to decline)."""
    mp = pytest.MonkeyPatch()
    mp.setattr(wire, "_fast_parse", lambda body, keep_raw: None)
    try:
        return parse_extender_args(body)
    finally:
        mp.undo()


def test_names_and_labels_match_the_full_parse_with_and_without_raw() -> None:
    expected = [("a", "eco"), ("b", None), ("c", None), ("d", "performance")]
    assert seen(full_parse(BODY)) == expected
    assert seen(parse_extender_args(BODY)) == expected
    assert seen(parse_extender_args(BODY, keep_raw=False)) == expected


def test_the_filter_reply_echoes_each_node_as_sent() -> None:
    args = parse_extender_args(BODY)
    reply = msgspec.json.decode(encode(filter_result(args, {"b": "eco"})))
    assert reply["Nodes"]["items"] == [NODES[0], NODES[2], NODES[3]]


def test_a_prioritize_parse_keeps_no_raw_and_cannot_make_a_filter_reply() -> None:
    args = parse_extender_args(BODY, keep_raw=False)
    assert all(n.raw is None for n in args.nodes or [])
    with pytest.raises(ValueError, match="keep_raw=True"):
        filter_result(args, {})


def test_a_non_string_profile_label_reads_as_absent_on_both_paths() -> None:
    body = encode({"Pod": {}, "Nodes": {"items": [node("x", {"joulie.io/power-profile": 3})]}})
    assert seen(parse_extender_args(body)) == [("x", None)] == seen(full_parse(body))
