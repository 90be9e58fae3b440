"""Shell: the energy receipts' Pod reads and writes (``reconcile.receipts``): when a finished Pod ended, its
``joulie.io/energy-receipt`` annotation, and the Event of its final receipt."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from kubernetes import client as k8s

from joulie_api.kube import MERGE_PATCH, JoulieClient, KubeWriteError, response_json
from joulie_api.names import ANNOTATION_ENERGY_RECEIPT, FIELD_MANAGER_CONTROLLER_MANAGER


def unix_time(raw: object) -> float | None:
    """An API timestamp (RFC 3339, ``2026-12-06T00:00:00Z``) in Unix seconds; None when absent or unreadable."""
    if not isinstance(raw, str) or not raw:
        return None
    try:
        return datetime.fromisoformat(raw.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def last_finish(obj: Mapping[str, Any]) -> float | None:
    """When a finished Pod's last container ended (``status.containerStatuses[].state.terminated.finishedAt``)."""
    ends = [
        unix_time(((c.get("state") or {}).get("terminated") or {}).get("finishedAt"))
        for c in (obj.get("status") or {}).get("containerStatuses") or []
        if isinstance(c, dict)
    ]
    known = [e for e in ends if e is not None]
    return max(known) if known else None


def finish_of(items: list[dict[str, Any]], uid: str) -> float | bool | None:
    """``PodReceipts.finished_at`` of the Pods a LIST by name returned: False when none is the Pod ``uid``
    (gone; a Pod of the same name created since is another Pod), else its last container's finish."""
    mine = [i for i in items if not uid or str((i.get("metadata") or {}).get("uid") or "") == uid]
    return last_finish(mine[0]) if mine else False


def receipt_patch_metadata(value: str, uid: str) -> dict[str, Any]:
    """The metadata of the receipt's merge patch: the annotation, and the Pod's UID where known (a patch that
    would change it is refused, so the write lands on this Pod or on none)."""
    meta: dict[str, Any] = {"annotations": {ANNOTATION_ENERGY_RECEIPT: value}}
    if uid:
        meta["uid"] = uid
    return meta


class PodReceipts:
    def __init__(self, core: k8s.CoreV1Api, client: JoulieClient):
        self.core = core
        self.client = client

    def finished_at(self, namespace: str, name: str, uid: str = "") -> float | bool | None:
        """When the Pod's last container ended; None when it has not said (or still runs); False when the
        Pod is gone (a Pod of that name with another ``uid`` is a later one: this one is gone). A LIST by
        name, not a GET: the controller may list Pods already (no new verb)."""
        body = response_json(
            self.core.list_namespaced_pod(namespace, field_selector=f"metadata.name={name}", _preload_content=False)
        )
        items = [i for i in body.get("items") or [] if isinstance(i, dict)]
        return finish_of(items, uid)

    def annotate(self, namespace: str, name: str, value: str, uid: str = "") -> bool:
        """Merge-patch the Pod's ``joulie.io/energy-receipt`` annotation (raises KubeWriteError); False when the
        Pod is gone. With ``uid`` the patch carries it: the API server refuses a patch that would change a
        Pod's UID (422, metadata.uid is immutable), so a receipt never lands on a later Pod of the same name."""
        body = {"metadata": receipt_patch_metadata(value, uid)}

        def op() -> Any:
            return self.core.patch_namespaced_pod(
                name,
                namespace,
                body,
                field_manager=FIELD_MANAGER_CONTROLLER_MANAGER,
                _content_type=MERGE_PATCH,
                _preload_content=False,
            )

        try:
            self.client.call("annotate", "Pod", f"{namespace}/{name}", op)
        except KubeWriteError as err:
            if err.status == 404 or (uid and err.status in (409, 422) and uid_refused(err.server_message)):
                return False  # gone, or a later Pod of the same name stands there now
            raise
        return True

    def event(self, namespace: str, name: str, message: str, now: datetime, uid: str = "") -> None:
        """One Normal Event, reason EnergyReceipt, on the finished Pod (raises KubeWriteError)."""
        stamp = now.strftime("%Y-%m-%dT%H:%M:%SZ")
        involved = {"apiVersion": "v1", "kind": "Pod", "namespace": namespace, "name": name}
        if uid:
            involved["uid"] = uid
        body: Any = {
            "metadata": {"generateName": f"{name}.receipt-", "namespace": namespace},
            "involvedObject": involved,
            "reason": "EnergyReceipt",
            "message": message[:1024],
            "type": "Normal",
            "source": {"component": FIELD_MANAGER_CONTROLLER_MANAGER},
            "reportingComponent": FIELD_MANAGER_CONTROLLER_MANAGER,
            "reportingInstance": FIELD_MANAGER_CONTROLLER_MANAGER,
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "count": 1,
        }

        def op() -> Any:
            return self.core.create_namespaced_event(namespace, body, _preload_content=False)

        self.client.call("create", "Event", f"{namespace}/{name}", op)


def uid_refused(server_message: str) -> bool:
    """Whether the API server refused a patch for the UID it carries (a later Pod of the same name): its
    message, not ours, which names the Pod and so may hold "uid" in a name such as druid-0."""
    m = server_message.lower()
    return "uid" in m and ("precondition" in m or "immutable" in m)
