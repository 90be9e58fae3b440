"""The kube-scheduler extender v1 wire format (`k8s.io/kube-scheduler/extender/v1`). Pure: no I/O.

The upstream Go types carry no JSON tags, so kube-scheduler sends and expects the Go field
names: `{"Pod": <v1.Pod>, "Nodes": <v1.NodeList>|null, "NodeNames": [..]|null}`. Go decodes
keys case-insensitively, so the lowercase keys of kube-scheduler <= 1.15 (and of the Go
original's docs) are accepted too. Replies use the Go field names.

`Nodes` is sent when the extender is configured with `nodeCacheCapable: false`, `NodeNames`
when it is true; the filter reply fills the same branch the request used.

A 1000-Node `NodeList` is about 1.2 MB of JSON, and the extender reads only each Node's name and
power-profile label. So a request is first decoded with msgspec, in one pass, into just those two
fields (every other key skipped by the C decoder, not built as Python objects), kept as columns
(`RequestNodes`: a list of names, a list of labels) rather than an object per Node, because at
1000 Nodes building one Python object per Node cost as much as the decode itself. A filter request
makes a second pass that keeps each Node as its raw JSON, echoed byte for byte in the reply
(kube-scheduler >= 1.35 rebuilds its node list from the reply's objects, so they must be whole); it
costs about as much as skipping over the list once, which is the least any decode can do, so two C
passes beat one that builds more in Python. A prioritize request never needs the raw Nodes and
skips that pass. A body the fast path does not take (lowercase keys, a wrong type, anything odd)
goes through the full standard-library parse, which accepts what Go accepts and names the field
that is wrong, so both paths answer the same.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

import msgspec

from joulie_api.names import LABEL_POWER_PROFILE

ANNOTATION_WORKLOAD_CLASS: Final = "joulie.io/workload-class"
DEFAULT_WORKLOAD_CLASS: Final = "standard"


class WireError(ValueError):
    """A request body that is not valid ExtenderArgs; the message names the field."""


@dataclass(frozen=True)
class RequestNodes:
    """A request's `Nodes.items` as columns, one entry per Node in the request's order."""

    names: list[str]
    profile_labels: list[str | None]
    """Each Node's `joulie.io/power-profile` label, None when absent, empty or not a string."""
    raws: list[msgspec.Raw] | None
    """Each Node's JSON as kube-scheduler sent it, echoed in the filter reply; None when the
    request was parsed without them (``keep_raw=False``: prioritize)."""

    def __len__(self) -> int:
        return len(self.names)


@dataclass(frozen=True)
class ExtenderArgs:
    pod: Mapping[str, Any]
    nodes: RequestNodes | None
    """What the extender reads of the full Node objects (nodeCacheCapable: false)."""
    node_names: list[str] | None

    @property
    def candidate_names(self) -> list[str]:
        if self.node_names is not None:
            return self.node_names
        if self.nodes is not None:
            return self.nodes.names
        return []

    @property
    def workload_class(self) -> str:
        return workload_class(self.pod)


def workload_class(pod: Mapping[str, Any]) -> str:
    """The pod's `joulie.io/workload-class` annotation, `standard` when missing or empty."""
    meta = pod.get("metadata")
    annotations = meta.get("annotations") if isinstance(meta, Mapping) else None
    value = annotations.get(ANNOTATION_WORKLOAD_CLASS) if isinstance(annotations, Mapping) else None
    return value if isinstance(value, str) and value else DEFAULT_WORKLOAD_CLASS


def _field(obj: Mapping[str, Any], name: str) -> Any:
    """`obj[name]` matched case-insensitively, like Go's encoding/json."""
    if name in obj:
        return obj[name]
    lowered = name.lower()
    for key, value in obj.items():
        if isinstance(key, str) and key.lower() == lowered:
            return value
    return None


def _type_name(value: object) -> str:
    return "null" if value is None else {dict: "object", list: "array", str: "string", bool: "boolean"}.get(
        type(value), "number" if isinstance(value, int | float) else type(value).__name__
    )


MAX_INT_DIGITS = 64
"""No field of a Pod or a Node needs a longer integer; without this bound a huge one reaches
Python's own limit, whose message (a ``sys.set_int_max_str_digits()`` hint) is no answer for a client."""


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise WireError(f"body: an integer of {len(text.lstrip('-'))} digits (at most {MAX_INT_DIGITS})")
    return int(text)


# gc=False: a request holds thousands of these, they only ever point at strings and at each other
# (no reference cycle is possible), and the garbage collector need not track them.


class _Labels(msgspec.Struct, gc=False):
    """A Node's labels as far as the extender reads them: every other label is skipped."""

    profile: str | None = msgspec.field(default=None, name=LABEL_POWER_PROFILE)


class _NodeMeta(msgspec.Struct, gc=False):
    name: str = ""
    labels: _Labels | None = None


class _Node(msgspec.Struct, gc=False):
    metadata: _NodeMeta = msgspec.field(default_factory=_NodeMeta)


class _NodeList(msgspec.Struct, gc=False):
    items: list[_Node] | None = None


class _Args(msgspec.Struct, gc=False):
    """ExtenderArgs with Go's field names; the Pod (small) is kept raw, each Node read for its name and label."""

    Pod: msgspec.Raw
    Nodes: _NodeList | None = None
    NodeNames: list[str] | None = None


class _RawNodeList(msgspec.Struct, gc=False):
    items: list[msgspec.Raw] | None = None


class _RawNodes(msgspec.Struct, gc=False):
    """The second pass of a filter request: each Node's JSON as sent, for the reply."""

    Nodes: _RawNodeList | None = None


_ARGS_DECODER: Final = msgspec.json.Decoder(_Args)
_RAW_NODES_DECODER: Final = msgspec.json.Decoder(_RawNodes)
_ENCODER: Final = msgspec.json.Encoder()


def profile_label(labels: object) -> str | None:
    """A Node's `joulie.io/power-profile` label value from its labels, None when absent, empty or not a string."""
    value = labels.get(LABEL_POWER_PROFILE) if isinstance(labels, Mapping) else None
    return value if isinstance(value, str) and value else None


def _columns(items: list[_Node], body: bytes, keep_raw: bool) -> RequestNodes | None:
    """The decoded Nodes as columns; None when the full parse must decide (a Node without a name)."""
    metas = [node.metadata for node in items]
    names = [meta.name for meta in metas]
    if not all(names):
        return None
    labels = [meta.labels.profile or None if meta.labels is not None else None for meta in metas]
    raws: list[msgspec.Raw] | None = None
    if keep_raw:
        raw_list = _RAW_NODES_DECODER.decode(body).Nodes
        raws = (raw_list.items or []) if raw_list is not None else []
        if len(raws) != len(names):  # a duplicate "Nodes" key, say: the full parse decides
            return None
    return RequestNodes(names, labels, raws)


def _fast_parse(body: bytes, keep_raw: bool) -> ExtenderArgs | None:
    """The common body, decoded only as far as the extender reads it; None: take the full parse."""
    try:
        args = _ARGS_DECODER.decode(body)
        pod = json.loads(bytes(args.Pod), parse_int=_bounded_int)
        nodes: RequestNodes | None = None
        if args.Nodes is not None:
            nodes = _columns(args.Nodes.items or [], body, keep_raw)
            if nodes is None:
                return None
    except (msgspec.DecodeError, msgspec.ValidationError, WireError, ValueError, RecursionError):
        return None
    if not isinstance(pod, dict) or (args.NodeNames is not None and not all(args.NodeNames)):
        return None
    return ExtenderArgs(pod, nodes, args.NodeNames)


def parse_extender_args(body: bytes, *, keep_raw: bool = True) -> ExtenderArgs:
    """Parse and validate a request body. Raises `WireError` with a message naming the field.

    ``keep_raw=False`` leaves out each Node's raw JSON, which only a filter reply echoes."""
    fast = _fast_parse(body, keep_raw)
    if fast is not None:
        return fast
    if not body.strip():
        raise WireError("empty body: expected ExtenderArgs JSON {\"Pod\": ..., \"Nodes\"|\"NodeNames\": ...}")
    try:
        doc = json.loads(body, parse_int=_bounded_int)
    except WireError:
        raise
    except (ValueError, RecursionError) as err:
        # ValueError covers JSONDecodeError and bad UTF-8; RecursionError absurdly deep nesting.
        raise WireError(f"body is not valid JSON: {err}") from None
    if not isinstance(doc, dict):
        raise WireError(f"body: expected a JSON object (ExtenderArgs), got {_type_name(doc)}")
    pod = _field(doc, "Pod")
    if not isinstance(pod, dict):
        raise WireError(f"Pod: expected a v1.Pod object, got {_type_name(pod)}")
    raw_nodes = _field(doc, "Nodes")
    nodes: RequestNodes | None = None
    if raw_nodes is not None:
        if not isinstance(raw_nodes, dict):
            raise WireError(f"Nodes: expected a v1.NodeList object or null, got {_type_name(raw_nodes)}")
        items = _field(raw_nodes, "items")
        if items is None:
            items = []
        if not isinstance(items, list):
            raise WireError(f"Nodes.items: expected an array, got {_type_name(items)}")
        node_names: list[str] = []
        node_labels: list[str | None] = []
        node_raws: list[msgspec.Raw] = []
        for i, node in enumerate(items):
            meta = node.get("metadata") if isinstance(node, dict) else None
            name = meta.get("name") if isinstance(meta, dict) else None
            if not isinstance(name, str) or not name:
                raise WireError(f"Nodes.items[{i}].metadata.name: expected a non-empty string")
            labels = meta.get("labels") if isinstance(meta, dict) else None
            node_names.append(name)
            node_labels.append(profile_label(labels))
            node_raws.append(msgspec.Raw(_ENCODER.encode(node)))
        nodes = RequestNodes(node_names, node_labels, node_raws)
    raw_names = _field(doc, "NodeNames")
    names: list[str] | None = None
    if raw_names is not None:
        if not isinstance(raw_names, list):
            raise WireError(f"NodeNames: expected an array of strings or null, got {_type_name(raw_names)}")
        for i, name in enumerate(raw_names):
            if not isinstance(name, str) or not name:
                raise WireError(f"NodeNames[{i}]: expected a non-empty string, got {_type_name(name)}")
        names = raw_names
    return ExtenderArgs(pod, nodes, names)


def filter_result(
    args: ExtenderArgs, failed: Mapping[str, str], error: str = ""
) -> dict[str, Any]:
    """`ExtenderFilterResult`, filling the branch (Nodes or NodeNames) the request used."""
    result: dict[str, Any] = {
        "Nodes": None,
        "NodeNames": None,
        "FailedNodes": dict(failed),
        "FailedAndUnresolvableNodes": {},
        "Error": error,
    }
    if args.node_names is not None:
        result["NodeNames"] = [n for n in args.node_names if n not in failed]
    elif args.nodes is not None:
        # Echo the nodes as received: kube-scheduler rebuilds its node list from the reply.
        raws = args.nodes.raws
        if raws is None:
            raise ValueError("filter_result needs the Nodes' raw JSON: parse with keep_raw=True")
        passing = raws if not failed else [raw for name, raw in zip(args.nodes.names, raws, strict=True)
                                           if name not in failed]
        result["Nodes"] = {"items": passing}
    return result


def encode(payload: Any) -> bytes:
    """A reply as compact JSON; the raw Nodes of a filter reply are copied, not re-encoded."""
    return _ENCODER.encode(payload)


class HostPriority(msgspec.Struct, gc=False):
    """One entry of `HostPriorityList`, encoded as `{"Host": name, "Score": 0..10}`.

    A struct the garbage collector does not track: a reply holds one per candidate node, thousands
    in a large cluster, and these are cheaper to build and encode than as many dicts."""

    Host: str
    Score: int


def host_priority_list(scores: Mapping[str, int]) -> list[HostPriority]:
    """`HostPriorityList`: `[{"Host": name, "Score": 0..10}]`."""
    return [HostPriority(host, score) for host, score in scores.items()]
