"""The node spec of emulate mode: which nodes to emulate, with which profile.

YAML: ``nodes: [{name, profile, labels?}]`` and/or ``pools: [{name, profile, count, labels?}]``
(a pool's nodes are ``<pool>-<i>``); a top-level ``name`` and ``harness`` (the simcluster cluster
spec's) are accepted and ignored, any other key is refused. Profiles are builtin names or files in ``--profiles-dir``.
A bad spec raises :class:`SpecError` naming the file, the field and why.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from joulie_common.yamlload import YamlError, load_document
from joulie_hwprofiles.schema import BUILTIN_DIR, Profile, ProfileError, load_profile

_DNS = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"


class SpecError(ValueError):
    pass


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class NodeEntry(_Strict):
    name: str = Field(pattern=_DNS, max_length=63)
    profile: str
    labels: dict[str, str] = Field(default_factory=dict)


class PoolEntry(_Strict):
    name: str = Field(pattern=_DNS, max_length=50)
    profile: str
    count: int = Field(gt=0, le=100000)
    labels: dict[str, str] = Field(default_factory=dict)


class NodeSpecFile(_Strict):
    # The simcluster harness passes its cluster spec as is: its ``name`` and ``harness`` section
    # (how the harness delivers tools, not hardware) are accepted and not used here.
    name: str | None = None
    harness: dict[str, Any] | None = None
    nodes: list[NodeEntry] = Field(default_factory=list)
    pools: list[PoolEntry] = Field(default_factory=list)


def expand(spec: NodeSpecFile) -> list[NodeEntry]:
    out = list(spec.nodes)
    for p in spec.pools:
        labels = {"sim.joulie.io/pool": p.name, **p.labels}
        out.extend(NodeEntry(name=f"{p.name}-{i}", profile=p.profile, labels=labels) for i in range(p.count))
    return out


def parse_inline(text: str, source: str = "--nodes") -> list[NodeEntry]:
    """``name=profile,name2=profile2`` (or ``pool*count=profile``)."""
    spec = NodeSpecFile()
    nodes, pools = [], []
    for i, item in enumerate(t for t in text.split(",") if t):
        name, sep, profile = item.partition("=")
        if not sep:
            raise SpecError(f"{source}: [{i}]: {item!r} is not name=profile")
        m = re.fullmatch(r"(.+)\*(\d+)", name)
        try:
            if m:
                pools.append(PoolEntry(name=m.group(1), profile=profile, count=int(m.group(2))))
            else:
                nodes.append(NodeEntry(name=name, profile=profile))
        except ValidationError as e:
            raise SpecError(f"{source}: [{i}].{e.errors()[0]['loc'][0]}: {e.errors()[0]['msg']}") from e
    spec = NodeSpecFile(nodes=nodes, pools=pools)
    return _check_unique(expand(spec), source)


def load_spec(path: Path) -> list[NodeEntry]:
    try:
        spec = load_document(path).validate(NodeSpecFile)
    except YamlError as e:
        raise SpecError(str(e)) from e
    return _check_unique(expand(spec), str(path))


def _check_unique(entries: list[NodeEntry], source: str) -> list[NodeEntry]:
    seen: set[str] = set()
    for e in entries:
        if e.name in seen:
            raise SpecError(f"{source}: nodes: {e.name!r} is named twice")
        seen.add(e.name)
    return entries


def resolve_profiles(entries: list[NodeEntry], profiles_dir: Path | None, source: str) -> list[tuple[NodeEntry, Profile]]:
    cache: dict[str, Profile] = {}
    out = []
    for i, e in enumerate(entries):
        if e.profile not in cache:
            path = (profiles_dir / f"{e.profile}.yaml") if profiles_dir else None
            if path is None or not path.is_file():
                path = BUILTIN_DIR / f"{e.profile}.yaml"
            if not path.is_file():
                raise SpecError(f"{source}: nodes[{i}].profile: no profile {e.profile!r} (builtin or in --profiles-dir)")
            try:
                cache[e.profile] = load_profile(path, search=path.parent)
            except ProfileError as err:
                raise SpecError(f"{source}: nodes[{i}].profile: {err}") from err
        out.append((e, cache[e.profile]))
    return out
