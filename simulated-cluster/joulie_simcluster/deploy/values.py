"""The install values of a deploy: the chart's values.yaml, then the given files, merged as helm merges
several ``-f`` files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from joulie_common.merge import deep_merge
from joulie_common.yamlload import YamlError, load_yaml
from joulie_simcluster.errors import RuntimeFailure


def load_values(files: list[Path]) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for path in files:
        try:  # Helm's rule for several values files: deep_merge
            raw = load_yaml(path, source=f"values file {path}", mapping=True, empty={})
        except YamlError as e:
            raise RuntimeFailure(str(e)) from e
        merged = deep_merge(merged, raw)
    return merged
