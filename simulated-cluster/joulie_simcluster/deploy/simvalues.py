"""The simulator's values on the process runtime: ``SIMCLUSTER_SIM_EXTRA_VALUES`` (and a scenario's
``simulator.set``) merged over what the harness sets, as helm merges ``-f`` files over the
joulie-simulator chart's values.

The harness itself sets ``mode`` (SIMCLUSTER_HWEMU: the agents must read the trees the same way),
``tick`` and ``otlp.interval`` (SIMCLUSTER_TIMING: every component's timing moves together), so an
extra file may not change them; of the chart's other keys the process runtime honours
``extraArgs``, appended to ``joulie-simulator emulate`` as the chart's Deployment appends them (the
facility: ``--ambient``, ``--cooling-model``, ``--inlet-rise-c-per-kw``, ...). Any other key is
refused naming the file and the key, rather than ignored: a study that thinks it changed the
simulator must not run the default. Pure but for reading the files.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from joulie_common.merge import deep_merge
from joulie_common.yamlload import YamlError, load_yaml
from joulie_simcluster.errors import RuntimeFailure

HONOURED = ("extraArgs",)
"""The chart keys an extra values file may set on the process runtime."""
SET_BY_HARNESS = {"mode": "SIMCLUSTER_HWEMU", "tick": "SIMCLUSTER_TIMING", "otlp": "SIMCLUSTER_TIMING"}


def check_extra(values: Mapping[str, Any], source: str) -> dict[str, Any]:
    """`values` of one extra file, checked: only :data:`HONOURED` keys, ``extraArgs`` a list of strings."""
    for key in values:
        if key in SET_BY_HARNESS:
            raise RuntimeFailure(f"{source}: {key}: set by the harness from {SET_BY_HARNESS[key]}, not by extra "
                                 f"simulator values")
        if key not in HONOURED:
            raise RuntimeFailure(f"{source}: {key}: not honoured by the process runtime's simulator; "
                                 f"expected only {', '.join(HONOURED)}")
    args = values.get("extraArgs", [])
    if not isinstance(args, list) or not all(isinstance(a, (str, int, float)) and not isinstance(a, bool) for a in args):
        raise RuntimeFailure(f"{source}: extraArgs: expected a list of strings, got {args!r}")
    return {"extraArgs": [str(a) for a in args]} if "extraArgs" in values else {}


def merged(extras: Sequence[tuple[str, Mapping[str, Any]]]) -> dict[str, Any]:
    """The extra values in order (source name, values), each checked, merged as helm merges them
    (a later list replaces an earlier one)."""
    out: dict[str, Any] = {}
    for source, values in extras:
        out = deep_merge(out, check_extra(values, source))
    return out


def load_extra(files: Sequence[Path]) -> dict[str, Any]:
    """The files of SIMCLUSTER_SIM_EXTRA_VALUES, read and merged (RuntimeFailure naming file and key)."""
    loaded: list[tuple[str, Mapping[str, Any]]] = []
    for path in files:
        source = f"simulator values file {path}"
        try:
            loaded.append((source, load_yaml(path, source=source, mapping=True, empty={})))
        except YamlError as e:
            raise RuntimeFailure(str(e)) from e
    return merged(loaded)


def extra_args(values: Mapping[str, Any]) -> tuple[str, ...]:
    return tuple(values.get("extraArgs") or ())
