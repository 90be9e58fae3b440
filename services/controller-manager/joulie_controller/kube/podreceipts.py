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


class PodReceipts:
    def __init__(self, core: k8s.CoreV1Api, client: JoulieClient):
        self.core = core
        self.client = client

    def finished_at(self, namespace: str, name: str) -> float | None | bool:
        """When the Pod's last container ended; None when it has not said (or still runs); False when the
        Pod is gone. A LIST by name, not a GET: the controller may list Pods already (no new verb)."""
        body = response_json(
            self.core.list_namespaced_pod(namespace, field_selector=f"metadata.name={name}", _preload_content=False)
        )
        items = [i for i in body.get("items") or [] if isinstance(i, dict)]
        return last_finish(items[0]) if items else False

    def annotate(self, namespace: str, name: str, value: str) -> bool:
        """Merge-patch the Pod's ``joulie.io/energy-receipt`` annotation (raises KubeWriteError); False when the
        Pod is gone."""
        body = {"metadata": {"annotations": {ANNOTATION_ENERGY_RECEIPT: value}}}

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
            if err.status == 404:
                return False
            raise
        return True

    def event(self, namespace: str, name: str, message: str, now: datetime) -> None:
        """One Normal Event, reason EnergyReceipt, on the finished Pod (raises KubeWriteError)."""
        stamp = now.strftime("%Y-%m-%dT%H:%M:%SZ")
        body: Any = {
            "metadata": {"generateName": f"{name}.receipt-", "namespace": namespace},
            "involvedObject": {"apiVersion": "v1", "kind": "Pod", "namespace": namespace, "name": name},
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
