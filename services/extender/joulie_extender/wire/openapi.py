"""The OpenAPI description of the extender's endpoints, for /docs and the schema fuzz test. Pure.

Only documentation: requests are parsed by scheduler.parse_extender_args (keys matched
case-insensitively, as Go does), replies encoded by scheduler.encode."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

# Written by hand: the request is parsed by scheduler.parse_extender_args (case-insensitive keys),
# not by a pydantic model, so the schema documents the canonical spelling.
EXTENDER_ARGS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "title": "ExtenderArgs",
    "description": "kube-scheduler extender v1 ExtenderArgs. Keys are matched case-insensitively.",
    "required": ["Pod"],
    "properties": {
        "Pod": {"type": "object", "description": "v1.Pod"},
        "Nodes": {
            "description": "v1.NodeList, sent when nodeCacheCapable is false",
            "anyOf": [
                {
                    "type": "object",
                    "properties": {
                        "items": {
                            "type": "array",
                            "items": {
                                "type": "object",
                                "required": ["metadata"],
                                "properties": {
                                    "metadata": {
                                        "type": "object",
                                        "required": ["name"],
                                        "properties": {"name": {"type": "string", "minLength": 1}},
                                    }
                                },
                            },
                        }
                    },
                },
                {"type": "null"},
            ],
        },
        "NodeNames": {
            "description": "node names, sent when nodeCacheCapable is true",
            "anyOf": [{"type": "array", "items": {"type": "string", "minLength": 1}}, {"type": "null"}],
        },
    },
}

REQUEST_BODY: dict[str, Any] = {
    "requestBody": {"required": True, "content": {"application/json": {"schema": EXTENDER_ARGS_SCHEMA}}}
}
"""The `openapi_extra` of /filter and /prioritize: their body, which no pydantic model parses."""


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
