"""The install values of a deploy: the chart's values.yaml, then the given files, merged as helm merges
several ``-f`` files."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from joulie_simcluster.errors import RuntimeFailure


def deep_merge(base: dict[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """Helm's rule for several values files: maps merge key by key, anything else is replaced."""
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = value
    return out


def load_values(files: list[Path]) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for path in files:
        try:
            raw = yaml.safe_load(path.read_text()) or {}
        except OSError as e:
            raise RuntimeFailure(f"values file {path}: cannot read: {e.strerror}") from e
        except yaml.YAMLError as e:
            raise RuntimeFailure(f"values file {path}: not valid YAML: {e}") from e
        if not isinstance(raw, dict):
            raise RuntimeFailure(f"values file {path}: (top level): expected a mapping, got {type(raw).__name__}")
        merged = deep_merge(merged, raw)
    return merged
