"""The cluster spec: which fake Nodes a simulated cluster has, as strict YAML.

::

    name: smoke                      # DNS label; every Node carries sim.joulie.io/cluster=<name>
    pools:
      - name: intel                  # Nodes are <pool>-<i>, i = 0..count-1
        profile: intel-xeon-2s-rapl  # a builtin hardware profile of the simulator
        count: 1                     # 0..100000
        labels: {joulie.io/managed: "true"}          # merged over the profile's labels
        taints: [{key: k, value: v, effect: NoSchedule}]  # merged over the profile's (by key+effect)
        architecture: amd64          # optional: overrides the profile's
    harness:
      pools:
        intel: {toolDelivery: mounted}   # mounted | none; unset: follows the Joulie install

Unknown keys are refused. A bad spec raises :class:`SpecError`, one line per problem:
``<file>: <field path>: <why>``, e.g. ``smoke.yaml: pools[2].count: must be ≥ 0, got -1``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from joulie_api import names
from joulie_common.yamlload import YamlError, load_yaml
from joulie_hwprofiles.schema import builtin_profile_names

DNS_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
# Set by the harness on every Node; a spec may not set them.
RESERVED_LABELS = (names.LABEL_SIM_CLUSTER, names.LABEL_SIM_POOL, "kubernetes.io/hostname")

ToolDelivery = Literal["mounted", "none"]


class SpecError(ValueError):
    """An invalid spec; one ``<file>: <field path>: <why>`` line per problem."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class Taint(_Strict):
    key: str = Field(min_length=1)
    value: str = ""
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]

    def render(self) -> str:
        return f"{self.key}={self.value}:{self.effect}" if self.value else f"{self.key}:{self.effect}"


class Pool(_Strict):
    name: str = Field(pattern=DNS_LABEL, max_length=50)
    profile: str
    # Strict: `count: "3"` or `count: true` is refused, not coerced. The simulator's bound.
    count: int = Field(strict=True, le=100000)
    labels: dict[str, str] = Field(default_factory=dict)
    taints: list[Taint] = Field(default_factory=list)
    architecture: Literal["amd64", "arm64"] | None = None

    @field_validator("profile")
    @classmethod
    def _builtin(cls, v: str) -> str:
        known = builtin_profile_names()
        if v not in known:
            raise ValueError(f"no builtin profile {v!r}; known: {', '.join(known)}")
        return v

    @field_validator("count")
    @classmethod
    def _count(cls, v: int) -> int:
        if v < 0:
            raise ValueError(f"must be ≥ 0, got {v}")
        return v

    @field_validator("labels")
    @classmethod
    def _labels(cls, v: dict[str, str]) -> dict[str, str]:
        for key in RESERVED_LABELS:
            if key in v:
                raise ValueError(f"{key} is set by the harness, not the spec")
        return v


class HarnessPool(_Strict):
    tool_delivery: ToolDelivery | None = Field(default=None, alias="toolDelivery")


class Harness(_Strict):
    pools: dict[str, HarnessPool] = Field(default_factory=dict)


class ClusterSpec(_Strict):
    name: str = Field(pattern=DNS_LABEL, max_length=63)
    pools: list[Pool] = Field(default_factory=list)
    harness: Harness = Field(default_factory=Harness)

    @model_validator(mode="after")
    def _consistent(self) -> ClusterSpec:
        seen: set[str] = set()
        for p in self.pools:
            if p.name in seen:
                raise ValueError(f"pool {p.name!r} is named twice")
            seen.add(p.name)
        unknown = sorted(set(self.harness.pools) - seen)
        if unknown:
            raise ValueError(f"harness.pools names no pool of the spec: {', '.join(unknown)}")
        return self

    def pool(self, name: str) -> Pool:
        for p in self.pools:
            if p.name == name:
                return p
        raise KeyError(name)

    def tool_delivery(self, pool: str, install_values: Mapping[str, Any] | None = None) -> ToolDelivery:
        """The pool's toolDelivery; unset, it follows the Joulie install as the seed says: mounted
        only with agent.runtimeClassName or agent.extraVolumes, otherwise none (a default install)."""
        self.pool(pool)
        hp = self.harness.pools.get(pool)
        if hp is not None and hp.tool_delivery is not None:
            return hp.tool_delivery
        agent = (install_values or {}).get("agent") or {}
        return "mounted" if agent.get("runtimeClassName") or agent.get("extraVolumes") else "none"


def field_path(loc: tuple[int | str, ...]) -> str:
    """A pydantic error location as a user reads it: ``pools[2].profile``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out or "(top level)"


def field_reason(err: Mapping[str, Any]) -> str:
    """What is wrong, from one pydantic error, in words for the person who wrote the file."""
    kind, ctx, got = err["type"], err.get("ctx") or {}, err.get("input")
    if kind == "value_error":
        return str(ctx.get("error", err["msg"]))
    if kind == "extra_forbidden":
        return "unknown key"
    if kind == "missing":
        return "required"
    if kind == "literal_error":
        return f"must be {ctx.get('expected')}, got {got!r}"
    msg = str(err["msg"])
    return f"{msg[:1].lower()}{msg[1:]}, got {got!r}"


def _why(err: Mapping[str, Any]) -> str:
    if err["type"] == "string_pattern_mismatch":  # the spec's only patterns are its names
        return f"must be a DNS label (lower-case letters, digits and '-'), got {err.get('input')!r}"
    return field_reason(err)


def _errors(source: str, e: ValidationError) -> SpecError:
    lines = []
    for err in e.errors():
        loc: tuple[int | str, ...] = tuple(err["loc"])
        why = _why(err)
        # A model validator's error sits at the model itself; name the field it is about.
        if not loc:
            loc, why = (("harness", "pools"), why.removeprefix("harness.pools ")) if why.startswith("harness.pools ") else (("pools",), why)
        lines.append(f"{source}: {field_path(loc)}: {why}")
    return SpecError("\n".join(lines))


def parse_spec(raw: object, source: str) -> ClusterSpec:
    if not isinstance(raw, dict):
        raise SpecError(f"{source}: (top level): expected a mapping, got {type(raw).__name__}")
    try:
        return ClusterSpec.model_validate(raw)
    except ValidationError as e:
        raise _errors(source, e) from e


def load_spec(path: Path) -> ClusterSpec:
    try:
        raw = load_yaml(path)
    except YamlError as e:
        raise SpecError(str(e)) from e
    return parse_spec(raw, str(path))
