"""What work-aware placement reads from a Pod besides its class: its workload kind and whether it
asked for eco. Pure; tolerant of any JSON shape (a malformed field reads as absent)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from joulie_api.names import ANNOTATION_WORKLOAD_CLASS, LABEL_WORKLOAD_KIND


def _meta_map(pod: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    meta = pod.get("metadata")
    value = meta.get(key) if isinstance(meta, Mapping) else None
    return value if isinstance(value, Mapping) else {}


def workload_kind(pod: Mapping[str, Any]) -> str:
    """The ``joulie.io/workload-kind`` label (else annotation); "" when the Pod names none."""
    for key in ("labels", "annotations"):
        value = _meta_map(pod, key).get(LABEL_WORKLOAD_KIND)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return ""


def eco_class(pod: Mapping[str, Any]) -> bool:
    """Whether the Pod says it is eco work (``joulie.io/workload-class: eco``, label or annotation)."""
    return any(_meta_map(pod, key).get(ANNOTATION_WORKLOAD_CLASS) == "eco" for key in ("labels", "annotations"))
