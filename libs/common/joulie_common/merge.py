"""Deep merge of nested mappings, the rule Helm applies to several values files and hardware
profiles apply to ``extends``: maps merge key by key, lists and scalars are replaced."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def deep_merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """A new dict: ``base`` with ``over`` laid on top. Neither argument is changed."""
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = value
    return out
