"""The columnar fast path of the request parser answers as the full parse does, with and without the raw Nodes;
a body it cannot take gets the full parse's error, naming the field."""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from joulie_extender.wire import scheduler
from joulie_extender.wire.scheduler import WireError, encode, filter_result, parse_extender_args
from joulie_testinfra.fuzzing import fuzz_settings

# A Node as the API server returns it for a KWOK node (managedFields, images, Go's \u003c escapes).
KWOK_NODE: bytes = resources.files("joulie_extender.wire").joinpath("testdata/kwok-node.json").read_bytes().strip()


def node(name: str, labels: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels}, "status": {"capacity": {"cpu": "8"}}}


NODES = [
    node("a", {"joulie.io/power-profile": "eco", "other": "x"}),
    node("b", {"joulie.io/power-profile": ""}),
    node("c", None),
    node("d", {"joulie.io/power-profile": "performance", "numeric": 7}),  # another label's odd value is skipped
]
BODY = encode({"Pod": {"metadata": {"name": "p"}}, "Nodes": {"items": NODES}, "NodeNames": None})


def seen(args: scheduler.ExtenderArgs) -> list[tuple[str, str | None]]:
    return list(zip(args.nodes.names, args.nodes.profile_labels, strict=True)) if args.nodes is not None else []


def full_parse(body: bytes, keep_raw: bool = True) -> scheduler.ExtenderArgs:
    """The standard-library parse alone (the fast path made to decline)."""
    mp = pytest.MonkeyPatch()
    mp.setattr(scheduler, "_fast_parse", lambda body, keep_raw: None)
    try:
        return parse_extender_args(body, keep_raw=keep_raw)
    finally:
        mp.undo()


def fast_parse(body: bytes, keep_raw: bool = True) -> scheduler.ExtenderArgs:
    """The columnar path alone; the test fails if it declines."""
    args = scheduler._fast_parse(body, keep_raw)
    assert args is not None, "the fast path declined a body it should take"
    return args


def assert_same(fast: scheduler.ExtenderArgs, full: scheduler.ExtenderArgs) -> None:
    assert seen(fast) == seen(full)
    assert fast.node_names == full.node_names and fast.pod == full.pod
    if fast.nodes is not None and fast.nodes.raws is not None:
        assert full.nodes is not None and full.nodes.raws is not None
        # The full parse re-encodes each Node; the fast path keeps the bytes sent: equal as JSON.
        assert [json.loads(bytes(r)) for r in fast.nodes.raws] == [json.loads(bytes(r)) for r in full.nodes.raws]


def test_names_and_labels_match_the_full_parse_with_and_without_raw() -> None:
    expected = [("a", "eco"), ("b", None), ("c", None), ("d", "performance")]
    assert seen(full_parse(BODY)) == expected
    assert seen(fast_parse(BODY)) == expected
    assert seen(fast_parse(BODY, keep_raw=False)) == expected


def kwok_variant(name: str, profile: Any) -> bytes:
    """The KWOK Node with another name (as JSON text, escapes allowed) and power-profile label value."""
    doc = KWOK_NODE.replace(b'"name":"gpu-h100-007"', b'"name":' + name.encode(), 1)
    return doc.replace(b'"joulie.io/power-profile":"eco"', b'"joulie.io/power-profile":' + encode(profile), 1)


def test_columnar_and_full_parse_agree_on_api_server_node_json() -> None:
    items = [KWOK_NODE, kwok_variant('"gpu-h100-008"', "performance"), kwok_variant('"node\\u002d\\u00e9"', " ECO "),
             kwok_variant('"n4"', None), kwok_variant('"n5"', "")]
    body = b'{"Pod":{"metadata":{"name":"p"}},"Nodes":{"kind":"NodeList","items":[' + b",".join(items) + b"]}}"
    fast = fast_parse(body)
    assert seen(fast) == [("gpu-h100-007", "eco"), ("gpu-h100-008", "performance"), ("node-\u00e9", " ECO "),
                          ("n4", None), ("n5", None)]
    assert_same(fast, full_parse(body))
    assert_same(fast_parse(body, keep_raw=False), full_parse(body, keep_raw=False))
    # Echoed byte for byte, escapes and all: kube-scheduler rebuilds its node list from these.
    assert fast.nodes is not None and [bytes(r) for r in fast.nodes.raws or []] == items
    reply = encode(filter_result(fast, {"gpu-h100-008": "eco"}))
    assert KWOK_NODE in reply and items[2] in reply and items[1] not in reply


def test_the_filter_reply_echoes_each_node_as_sent() -> None:
    args = parse_extender_args(BODY)
    reply = msgspec.json.decode(encode(filter_result(args, {"b": "eco"})))
    assert reply["Nodes"]["items"] == [NODES[0], NODES[2], NODES[3]]
    assert msgspec.json.decode(encode(filter_result(args, {})))["Nodes"]["items"] == NODES


def test_a_prioritize_parse_keeps_no_raw_and_cannot_make_a_filter_reply() -> None:
    args = parse_extender_args(BODY, keep_raw=False)
    assert args.nodes is not None and args.nodes.raws is None
    with pytest.raises(ValueError, match="keep_raw=True"):
        filter_result(args, {})


def test_a_non_string_profile_label_reads_as_absent_on_both_paths() -> None:
    body = encode({"Pod": {}, "Nodes": {"items": [node("x", {"joulie.io/power-profile": 3})]}})
    assert seen(parse_extender_args(body)) == [("x", None)] == seen(full_parse(body))


def test_a_duplicate_nodes_key_answers_as_the_full_parse() -> None:
    body = b'{"Pod":{},"Nodes":{"items":[' + encode(NODES[0]) + b']},"Nodes":{"items":' + encode(NODES) + b"}}"
    assert_same(parse_extender_args(body), full_parse(body))


@pytest.mark.parametrize(
    ("nodes", "message"),
    [
        (b'"x"', "Nodes: expected a v1.NodeList object or null, got string"),
        (b'{"items": {}}', "Nodes.items: expected an array, got object"),
        (b'{"items": [{"metadata": {"name": "a"}}, {"metadata": {}}]}', "Nodes.items[1].metadata.name: expected a non-empty string"),
        (b'{"items": [{"metadata": {"name": ""}}]}', "Nodes.items[0].metadata.name"),
        (b'{"items": [{"metadata": {"name": 7}}]}', "Nodes.items[0].metadata.name"),
        (b'{"items": [{"metadata": null}]}', "Nodes.items[0].metadata.name"),
        (b'{"items": [1]}', "Nodes.items[0].metadata.name"),
        (b'{"items": [{"metadata": {"name": "a"}}, ' + b"[" * 200 + b"]" * 200 + b"]}", "Nodes.items[1].metadata.name"),
    ],
)
@pytest.mark.parametrize("keep_raw", [True, False])
def test_malformed_nodes_are_refused_naming_the_field(nodes: bytes, message: str, keep_raw: bool) -> None:
    with pytest.raises(WireError) as err:
        parse_extender_args(b'{"Pod": {}, "Nodes": ' + nodes + b"}", keep_raw=keep_raw)
    assert message in str(err.value)


names = st.text(st.characters(codec="utf-8"), max_size=12)
label_values = st.none() | st.sampled_from(["eco", " ECO ", "performance", ""]) | names | st.integers() | st.booleans()
metadata = st.fixed_dictionaries(
    {"name": names | st.none() | st.integers()},
    optional={"labels": st.none() | st.dictionaries(st.sampled_from(["joulie.io/power-profile", "other"]), label_values),
              "uid": names},
)
nodes = st.fixed_dictionaries({}, optional={"metadata": metadata | st.none(), "status": st.dictionaries(names, names)})


@fuzz_settings(150)
@given(st.lists(nodes, max_size=8), st.booleans())
def test_the_columnar_path_either_agrees_with_the_full_parse_or_leaves_the_body_to_it(
    items: list[dict[str, Any]], keep_raw: bool
) -> None:
    body = encode({"Pod": {"metadata": {"name": "p"}}, "Nodes": {"items": items}})
    try:
        full = full_parse(body, keep_raw)
    except WireError as err:
        assert "Nodes.items[" in str(err)
        assert scheduler._fast_parse(body, keep_raw) is None
        with pytest.raises(WireError, match=r"Nodes\.items\["):
            parse_extender_args(body, keep_raw=keep_raw)
        return
    fast = scheduler._fast_parse(body, keep_raw)
    if fast is not None:
        assert_same(fast, full)
    assert_same(parse_extender_args(body, keep_raw=keep_raw), full)
