"""One way to write Joulie objects: server-side apply and merge patch with a field manager.

A thin typed layer over the official `kubernetes` client. Ownership of NodeTwin/NodeHardware
fields is enforced by field managers, so every write names one. Conflicts and transient server
errors are retried with `Backoff`; anything else raises `KubeWriteError` naming the object, the
field manager and the server's message.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar

from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException
from pydantic import BaseModel, ValidationError

from joulie_api.backoff import Backoff, retry
from joulie_api.generated.nodehardware import NodeHardware
from joulie_api.generated.nodetwin import NodeTwin
from joulie_api.names import (
    API_VERSION,
    GROUP,
    KIND_NODE_HARDWARE,
    KIND_NODE_TWIN,
    PLURAL_NODE_HARDWARE,
    PLURAL_NODE_TWIN,
    VERSION,
)
from joulie_api.outage import Outage

log = logging.getLogger(__name__)

M = TypeVar("M", bound=BaseModel)

# 409 is a resourceVersion/apply conflict, 429 throttling, 5xx a server or etcd hiccup.
_TEMPORARY_STATUSES = frozenset({409, 429, 500, 502, 503, 504})

APPLY_PATCH = "application/apply-patch+yaml"
MERGE_PATCH = "application/merge-patch+json"

Subresource = Literal["", "status"]


@dataclass(frozen=True)
class Resource(Generic[M]):
    """A cluster-scoped Joulie kind and the generated model its objects parse into."""

    kind: str
    plural: str
    model: type[M]


NODE_HARDWARE: Resource[NodeHardware] = Resource(KIND_NODE_HARDWARE, PLURAL_NODE_HARDWARE, NodeHardware)
NODE_TWIN: Resource[NodeTwin] = Resource(KIND_NODE_TWIN, PLURAL_NODE_TWIN, NodeTwin)


class KubeWriteError(RuntimeError):
    """A write the API server refused (or kept failing), with what and why."""

    def __init__(self, action: str, kind: str, name: str, field_manager: str, status: int | None, message: str):
        self.status = status
        self.server_message = message
        super().__init__(
            f"{action} {kind}/{name} as field manager {field_manager!r} failed"
            f"{f' (HTTP {status})' if status else ''}: {message}"
        )


class ObjectDecodeError(ValueError):
    """An object from the API server does not match the Joulie schema."""

    def __init__(self, kind: str, name: str, err: ValidationError):
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']} (got {e.get('input')!r})" for e in err.errors()
        )
        super().__init__(f"{kind}/{name} does not match the {API_VERSION} schema: {problems}")


def is_temporary(exc: BaseException) -> bool:
    """Whether a failed API call is worth retrying."""
    if isinstance(exc, ApiException):
        return exc.status in _TEMPORARY_STATUSES or exc.status == 0
    return isinstance(exc, (ConnectionError, TimeoutError, OSError))


def server_message(exc: BaseException) -> str:
    """The human part of an API error: the Status message if the server sent one."""
    if isinstance(exc, ApiException) and exc.body:
        try:
            body = json.loads(exc.body)
        except (TypeError, ValueError):
            return str(exc.body)
        if isinstance(body, dict) and body.get("message"):
            return str(body["message"])
    return str(exc)


def response_json(resp: Any) -> dict[str, Any]:
    """The JSON body of a raw (`_preload_content=False`) response.

    Raw responses are used for custom objects because the generated client maps only HTTP 200 to
    a body: an apply that creates the object answers 201 and would come back as None.
    """
    data = resp.data if hasattr(resp, "data") else resp
    body = json.loads(data)
    if not isinstance(body, dict):
        raise ValueError(f"expected a JSON object from the API server, got {type(body).__name__}")
    return body


def decode(resource: Resource[M], obj: Mapping[str, Any]) -> M:
    """Parse an API object into its model. Whole numbers the server returns as int are accepted."""
    try:
        return resource.model.model_validate(obj)
    except ValidationError as err:
        name = str(obj.get("metadata", {}).get("name", "?"))
        raise ObjectDecodeError(resource.kind, name, err) from None


def to_body(resource: Resource[M], obj: M | Mapping[str, Any], name: str) -> dict[str, Any]:
    """The JSON body of an apply: apiVersion/kind/name set, unset fields left out.

    Leaving unset fields out matters: with server-side apply, a field in the body is a field
    the manager claims, and claiming a field another component owns causes a conflict.
    """
    if isinstance(obj, BaseModel):
        body = obj.model_dump(mode="json", by_alias=True, exclude_none=True)
    else:
        body = dict(obj)
    body["apiVersion"] = API_VERSION
    body["kind"] = resource.kind
    meta = dict(body.get("metadata") or {})
    meta["name"] = name
    body["metadata"] = meta
    return body


class JoulieClient:
    """Reads and writes Joulie objects as one field manager."""

    def __init__(self, api: k8s.ApiClient, field_manager: str, backoff: Backoff | None = None):
        self.field_manager = field_manager
        self.custom = k8s.CustomObjectsApi(api)
        self.core = k8s.CoreV1Api(api)
        self.backoff = backoff or Backoff()
        # Whether the server takes this manager's writes; its delays are unused (``backoff`` paces
        # the retries), it only keeps the log to one line per change.
        self.server = Outage(f"API server (writes as {field_manager})", log)

    def _call(self, action: str, kind: str, name: str, op: Any) -> Any:
        def on_retry(attempt: int, delay: float, exc: BaseException) -> None:
            # One line when the server starts refusing for now (429, 409, 5xx), one when it answers
            # again (``self.server``); each retry in between only at debug: a 429 storm used to
            # log a warning per attempt (issue 23, api-throttle).
            self.server.failed(exc)
            log.debug("%s %s/%s attempt %d failed (%s); retrying in %.0fs", action, kind, name, attempt,
                      server_message(exc), delay)

        try:
            result = retry(op, is_temporary=is_temporary, backoff=self.backoff, on_retry=on_retry)
        except ApiException as exc:
            raise KubeWriteError(action, kind, name, self.field_manager, exc.status, server_message(exc)) from exc
        self.server.ok()
        return result

    def call(self, action: str, kind: str, name: str, op: Callable[[], Any]) -> Any:
        """Any other write ``op`` (a Pod annotation, an Event) with this client's retries and outage log;
        raises KubeWriteError naming ``action``, ``kind`` and ``name``."""
        return self._call(action, kind, name, op)

    def get(self, resource: Resource[M], name: str) -> M | None:
        """The object, or None when it does not exist."""
        try:
            obj = response_json(
                self.custom.get_cluster_custom_object(GROUP, VERSION, resource.plural, name, _preload_content=False)
            )
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise
        return decode(resource, obj)

    def list(self, resource: Resource[M]) -> list[M]:
        items = response_json(
            self.custom.list_cluster_custom_object(GROUP, VERSION, resource.plural, _preload_content=False)
        )
        return [decode(resource, item) for item in items.get("items", [])]

    def apply(self, resource: Resource[M], name: str, obj: M | Mapping[str, Any], *, force: bool = True) -> M:
        """Server-side apply `obj` (only its set fields) to the object; `status` is ignored here."""
        body = to_body(resource, obj, name)
        body.pop("status", None)
        return self._patch(resource, name, body, "", APPLY_PATCH, force)

    def apply_status(
        self, resource: Resource[M], name: str, status: BaseModel | Mapping[str, Any], *, force: bool = True
    ) -> M:
        """Server-side apply to the status subresource: only the set fields of `status` are claimed."""
        if isinstance(status, BaseModel):
            status_body = status.model_dump(mode="json", by_alias=True, exclude_none=True)
        else:
            status_body = dict(status)
        body = {"apiVersion": API_VERSION, "kind": resource.kind, "metadata": {"name": name}, "status": status_body}
        return self._patch(resource, name, body, "status", APPLY_PATCH, force)

    def merge_patch(
        self, resource: Resource[M], name: str, patch: Mapping[str, Any], *, subresource: Subresource = ""
    ) -> M:
        """JSON merge patch; a key set to None deletes the field."""
        return self._patch(resource, name, dict(patch), subresource, MERGE_PATCH, force=None)

    def _patch(
        self,
        resource: Resource[M],
        name: str,
        body: dict[str, Any],
        subresource: Subresource,
        content_type: str,
        force: bool | None,
    ) -> M:
        fn = (
            self.custom.patch_cluster_custom_object_status
            if subresource == "status"
            else self.custom.patch_cluster_custom_object
        )

        def op() -> Any:
            return fn(
                GROUP, VERSION, resource.plural, name, body,
                field_manager=self.field_manager, force=force, _content_type=content_type, _preload_content=False,
            )

        verb = "apply" if content_type == APPLY_PATCH else "merge-patch"
        action = f"{verb} status of" if subresource == "status" else verb
        return decode(resource, response_json(self._call(action, resource.kind, name, op)))

    def patch_node_labels(self, node_name: str, labels: Mapping[str, str | None]) -> None:
        """Set (or, with None, remove) node labels with a merge patch."""
        body = {"metadata": {"labels": dict(labels)}}

        def op() -> Any:
            return self.core.patch_node(node_name, body, field_manager=self.field_manager, _content_type=MERGE_PATCH)

        self._call("label", "Node", node_name, op)

    def update_node(self, node_name: str, action: str, change: Callable[[Mapping[str, Any]], dict[str, Any]]) -> None:
        """Merge-patch the Node with what `change` makes of its current object. The patch carries
        the resourceVersion it was made from, so a concurrent writer's change is a conflict, retried
        on a fresh read, never overwritten (a Node's taints are one list: a merge patch replaces it)."""

        def op() -> Any:
            node = response_json(self.core.read_node(node_name, _preload_content=False))
            body = change(node)
            body.setdefault("metadata", {})["resourceVersion"] = (node.get("metadata") or {}).get("resourceVersion")
            return self.core.patch_node(node_name, body, field_manager=self.field_manager, _content_type=MERGE_PATCH)

        self._call(action, "Node", node_name, op)
