"""Reading the BMC Secrets from the API server: the thin shell over ``directory.merge``."""

from __future__ import annotations

from typing import Any

from joulie_redfish.directory import SECRET_LABEL, BmcEntry, merge


def read_directory(core_v1: Any, namespace: str, label_selector: str = f"{SECRET_LABEL}=true") -> dict[str, BmcEntry]:
    """Node -> BMC from every Secret in ``namespace`` that matches ``label_selector``
    (``core_v1``: a ``kubernetes.client.CoreV1Api``). Raises DirectoryError naming a bad Secret's key."""
    items = core_v1.list_namespaced_secret(namespace, label_selector=label_selector).items
    return merge(core_v1.api_client.sanitize_for_serialization(s) for s in items)
