"""The kube-scheduler extender v1 wire format (`k8s.io/kube-scheduler/extender/v1`). Pure: no I/O.

The upstream Go types carry no JSON tags, so kube-scheduler sends and expects the Go field
names: `{"Pod": <v1.Pod>, "Nodes": <v1.NodeList>|null, "NodeNames": [..]|null}`. Go decodes
keys case-insensitively, so the lowercase keys of kube-scheduler <= 1.15 (and of the Go
original's docs) are accepted too. Replies use the Go field names.

`Nodes` is sent when the extender is configured with `nodeCacheCapable: false`, `NodeNames`
when it is true; the filter reply fills the same branch the request used.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from pydantic import BaseModel, ConfigDict, Field

ANNOTATION_WORKLOAD_CLASS: Final = "joulie.io/workload-class"
DEFAULT_WORKLOAD_CLASS: Final = "standard"


class WireError(ValueError):
    """A request body that is not valid ExtenderArgs; the message names the field."""


@dataclass(frozen=True)
class ExtenderArgs:
    pod: Mapping[str, Any]
    # Full node objects (nodeCacheCapable: false), kept as received so the reply can echo them.
    nodes: list[Mapping[str, Any]] | None
    node_names: list[str] | None

    @property
    def candidate_names(self) -> list[str]:
        if self.node_names is not None:
            return self.node_names
        if self.nodes is not None:
            return [n["metadata"]["name"] for n in self.nodes]
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


def parse_extender_args(body: bytes) -> ExtenderArgs:
    """Parse and validate a request body. Raises `WireError` with a message naming the field."""
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
    nodes: list[Mapping[str, Any]] | None = None
    if raw_nodes is not None:
        if not isinstance(raw_nodes, dict):
            raise WireError(f"Nodes: expected a v1.NodeList object or null, got {_type_name(raw_nodes)}")
        items = _field(raw_nodes, "items")
        if items is None:
            items = []
        if not isinstance(items, list):
            raise WireError(f"Nodes.items: expected an array, got {_type_name(items)}")
        for i, node in enumerate(items):
            meta = node.get("metadata") if isinstance(node, dict) else None
            name = meta.get("name") if isinstance(meta, dict) else None
            if not isinstance(name, str) or not name:
                raise WireError(f"Nodes.items[{i}].metadata.name: expected a non-empty string")
        nodes = items
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
        result["Nodes"] = {"items": [n for n in args.nodes if n["metadata"]["name"] not in failed]}
    return result


def host_priority_list(scores: Mapping[str, int]) -> list[dict[str, Any]]:
    """`HostPriorityList`: `[{"Host": name, "Score": 0..10}]`."""
    return [{"Host": host, "Score": score} for host, score in scores.items()]


# --- Models for the OpenAPI schema only (requests are parsed by parse_extender_args above) ---


class NodeListModel(BaseModel):
    """v1.NodeList; only `items[].metadata.name` is read."""

    model_config = ConfigDict(extra="allow")
    items: list[dict[str, Any]] = Field(default_factory=list)


class ExtenderArgsModel(BaseModel):
    """`ExtenderArgs` as kube-scheduler sends it (keys matched case-insensitively)."""

    model_config = ConfigDict(extra="allow")
    Pod: dict[str, Any]
    Nodes: NodeListModel | None = None
    NodeNames: list[str] | None = None


class ExtenderFilterResultModel(BaseModel):
    Nodes: NodeListModel | None = None
    NodeNames: list[str] | None = None
    FailedNodes: dict[str, str] = Field(default_factory=dict)
    FailedAndUnresolvableNodes: dict[str, str] = Field(default_factory=dict)
    Error: str = ""


class HostPriorityModel(BaseModel):
    Host: str
    Score: int = Field(ge=0, le=10)


class BadRequestModel(BaseModel):
    error: str
