"""The scenario file of ``simcluster scenario FILE``: a cluster, its install and timed steps, as
strict YAML (schema in docs/scenarios.md).

Each step has a ``name`` and exactly one action: ``load``, ``policy``, ``ambient``, ``fault``,
``wait`` or ``assert``. Unknown keys are refused. A bad file raises :class:`ScenarioError`, one
line per problem naming the file, the step (index and name) and the field, with its line::

    scenarios/x.yaml: steps[2] "switch": policy.benchmark: must be one of A, B, ... got 'Z' (line 14)

Paths (``spec``, ``values``, traces) are relative to the scenario file's folder. Pure but for
reading the file (``joulie_common.yamlload``: duplicate keys refused, lines named).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator, model_validator

from joulie_common.yamlload import Document, YamlError, load_document
from joulie_simcluster.chaos.catalogue import FAULTS
from joulie_simcluster.spec import field_path, field_reason

DNS_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
ACTIONS = ("load", "policy", "ambient", "fault", "wait", "assert")


class ScenarioError(ValueError):
    """An invalid scenario file; one ``<file>: steps[i] "name": <field>: <why> (line N)`` line per problem."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


def _exactly_one(model: BaseModel, keys: Sequence[str], what: str) -> None:
    given = [k for k in keys if getattr(model, k.replace("assert", "assert_")) is not None]
    if len(given) != 1:
        raise ValueError(f"{what}: expected exactly one of {', '.join(keys)}, got "
                         f"{', '.join(given) if given else 'none'}")


class Range(_Strict):
    """Bounds on a number (both inclusive), or an exact value (a number or a string)."""

    min: float | None = None
    max: float | None = None
    equals: float | str | None = None

    @model_validator(mode="after")
    def _some(self) -> Range:
        if self.min is None and self.max is None and self.equals is None:
            raise ValueError("expected min, max or equals")
        if self.equals is not None and (self.min is not None or self.max is not None):
            raise ValueError("equals excludes min and max")
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError(f"min {self.min:g} > max {self.max:g}")
        return self

    def describe(self) -> str:
        if self.equals is not None:
            return f"= {self.equals!r}" if isinstance(self.equals, str) else f"= {self.equals:g}"
        lo = f"≥ {self.min:g}" if self.min is not None else ""
        hi = f"≤ {self.max:g}" if self.max is not None else ""
        return " and ".join(p for p in (lo, hi) if p)

    def holds(self, value: float | str | None) -> bool:
        if value is None:
            return False
        if self.equals is not None:
            if isinstance(self.equals, str) or isinstance(value, str):
                return str(value) == str(self.equals)
            return abs(float(value) - self.equals) <= 1e-9 * max(1.0, abs(self.equals))
        if isinstance(value, str):
            return False
        return (self.min is None or value >= self.min) and (self.max is None or value <= self.max)


class TwinCondition(Range):
    """A NodeTwin field (dotted path from the object, e.g. ``status.predictedCoolingStressScore``)
    on the chosen Nodes: every one (``match: all``) or at least one (``any``) within the range."""

    field: str = Field(pattern=r"^(spec|status)(\.[A-Za-z0-9]+)+$")
    nodes: Literal["agents", "managed"] | list[str] = "agents"
    match: Literal["all", "any"] = "all"


class PowerCondition(_Strict):
    """The cluster's power (sum over the Nodes) within [minW, maxW]: from Prometheus (the query the
    controller's node-power read uses, summed), the emulator's truth, or the NodeTwins' measured power."""

    source: Literal["prometheus", "truth", "twins"] = "prometheus"
    min_w: float | None = Field(default=None, alias="minW")
    max_w: float | None = Field(default=None, alias="maxW")

    @model_validator(mode="after")
    def _bounds(self) -> PowerCondition:
        if self.min_w is None and self.max_w is None:
            raise ValueError("expected minW, maxW or both")
        if self.min_w is not None and self.max_w is not None and self.min_w > self.max_w:
            raise ValueError(f"minW {self.min_w:g} > maxW {self.max_w:g}")
        return self


class CapsCondition(_Strict):
    """The caps in the emulated files equal NodeTwin.spec on every agent Node (smoke S04's check), and,
    given, the spec is at ``pctOfMax`` (GPU Nodes: GPU at it, CPU at 100)."""

    pct_of_max: float | None = Field(default=None, alias="pctOfMax", gt=0, le=100)


class JobsCondition(Range):
    """The workload runner's job count of one state (since the runner last started: a ``load`` step
    restarts it)."""

    state: Literal["submitted", "running", "pending", "completed"] = "completed"


class FacilityCondition(Range):
    """A field of the emulator's facility truth (``/debug/emulate`` ``facility``: ambientC, itW,
    coolingW, facilityW, pue, ...)."""

    field: str = Field(pattern=r"^[A-Za-z]+$")


class TwinErrorCondition(_Strict):
    """Every managed Node's NodeTwin measured power within ``maxPct`` of the emulator's truth (never
    closer than 1 W needed), the smoke's S06 comparison per Node; Nodes their agent says it cannot
    measure are skipped, as S06 skips them. Observed: the median and worst |error| %."""

    max_pct: float = Field(default=3.0, alias="maxPct", gt=0)


class TickCostCondition(_Strict):
    """The simulator's own tick cost (``/debug/emulate`` ``tickCost``, its last 600 ticks): the
    median ms at most ``medianMs``, the worst at most ``maxMs``. ``clock``: ``cpu`` (default), the
    CPU the simulator spent per tick, its own work; ``wall``, which on a shared machine also counts
    every wait for a core, so it measures the machine as much as the simulator."""

    median_ms: float = Field(alias="medianMs", gt=0)
    max_ms: float | None = Field(default=None, alias="maxMs", gt=0)
    clock: Literal["cpu", "wall"] = "cpu"


class HealthyCondition(_Strict):
    """Every recorded process running, the API ready, every component reporting and the caps equal
    to the decisions (``simcluster chaos``'s health look)."""

    healthy: Literal[True] = True


CONDITION_KINDS = ("twin", "cluster_power", "caps_applied", "jobs", "facility", "healthy", "twin_error", "tick_cost")


class Condition(_Strict):
    twin: TwinCondition | None = None
    cluster_power: PowerCondition | None = Field(default=None, alias="clusterPower")
    caps_applied: CapsCondition | None = Field(default=None, alias="capsApplied")
    jobs: JobsCondition | None = None
    facility: FacilityCondition | None = None
    healthy: Literal[True] | None = None
    twin_error: TwinErrorCondition | None = Field(default=None, alias="twinError")
    tick_cost: TickCostCondition | None = Field(default=None, alias="tickCost")

    @model_validator(mode="after")
    def _one(self) -> Condition:
        given = [k for k in CONDITION_KINDS if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError("expected exactly one of twin, clusterPower, capsApplied, jobs, facility, healthy, twinError, "
                             f"tickCost; got {len(given)}")
        return self

    @property
    def kind(self) -> str:
        for k in CONDITION_KINDS:
            if getattr(self, k) is not None:
                return k
        raise AssertionError("validated: one is set")


class Assert(Condition):
    within_s: float = Field(default=0.0, alias="withinS", ge=0)
    """Re-evaluate once a second until it holds or this many seconds pass (0: evaluate once)."""


class Wait(_Strict):
    seconds: float | None = Field(default=None, gt=0)
    until: Condition | None = None
    timeout_s: float = Field(default=120.0, alias="timeoutS", gt=0)

    @model_validator(mode="after")
    def _one(self) -> Wait:
        if (self.seconds is None) == (self.until is None):
            raise ValueError("expected exactly one of seconds, until")
        return self


class Load(_Strict):
    """A new load: the smoke's (one pinned Pod per Node) or a trace (JSONL, ``joulie-simulator
    workloadgen``). The workload runner's Pods are deleted and it restarts on the new trace."""

    smoke: Literal[True] | None = None
    trace: str | None = None

    @model_validator(mode="after")
    def _one(self) -> Load:
        if (self.smoke is None) == (self.trace is None):
            raise ValueError("expected exactly one of smoke: true, trace: FILE")
        return self


class Policy(_Strict):
    """The controller manager's settings changed and the process restarted with them (as a reload
    with a changed install would): a benchmark policy's settings (``joulie_bench``: A..E), then `env`."""

    benchmark: str | None = None
    budget_frac: float = Field(default=0.6, alias="budgetFrac", gt=0, le=1)
    env: dict[str, str] = Field(default_factory=dict)

    @field_validator("benchmark")
    @classmethod
    def _known(cls, v: str | None, info: ValidationInfo) -> str | None:
        # The benchmark's policy names come from the caller (joulie_bench.arms.ARMS): importing the
        # benchmark here would pull the controller's Kubernetes client into this pure module.
        known: Sequence[str] = (info.context or {}).get("benchmarks", ())
        if v is not None and v not in known:
            raise ValueError(f"must be one of {', '.join(known)}, got {v!r}")
        return v

    @field_validator("env")
    @classmethod
    def _names(cls, v: dict[str, str]) -> dict[str, str]:
        for k in v:
            if not k.replace("_", "").isalnum() or k.upper() != k:
                raise ValueError(f"{k!r} is not an environment variable name (upper case, digits, _)")
        return v

    @model_validator(mode="after")
    def _some(self) -> Policy:
        if self.benchmark is None and not self.env:
            raise ValueError("expected benchmark, env or both")
        return self


class Ambient(_Strict):
    """The outdoor ambient through the simulator's control (``POST /debug/facility/ambient``)."""

    offset_c: float | None = Field(default=None, alias="offsetC", ge=-50, le=50)
    fixed_c: float | None = Field(default=None, alias="fixedC", ge=-50, le=60)
    clear: Literal[True] | None = None

    @model_validator(mode="after")
    def _one(self) -> Ambient:
        if sum(v is not None for v in (self.offset_c, self.fixed_c, self.clear)) != 1:
            raise ValueError("expected exactly one of offsetC, fixedC, clear: true")
        return self

    def body(self) -> dict[str, Any]:
        if self.clear:
            return {"clear": True}
        return {"offsetC": self.offset_c} if self.offset_c is not None else {"fixedC": self.fixed_c}


class Fault(_Strict):
    """A fault of ``simcluster chaos``'s catalogue, injected now; one that holds (prometheus-freeze,
    write-refused) is cleared after ``holdS`` (default the catalogue's) while the next steps run."""

    kind: str
    node: str | None = None
    """The Node a Node fault (agent-kill, limit-reset, write-refused) hits; default the first in name order."""
    hold_s: float | None = Field(default=None, alias="holdS", gt=0)

    @field_validator("kind")
    @classmethod
    def _known(cls, v: str) -> str:
        if v not in FAULTS:
            raise ValueError(f"must be one of {', '.join(FAULTS)}, got {v!r}")
        return v


class Step(_Strict):
    name: str = Field(default="", pattern=r"^$|^[A-Za-z0-9][-A-Za-z0-9_ .]*$", max_length=80)
    load: Load | None = None
    policy: Policy | None = None
    ambient: Ambient | None = None
    fault: Fault | None = None
    wait: Wait | None = None
    assert_: Assert | None = Field(default=None, alias="assert")

    @model_validator(mode="after")
    def _one(self) -> Step:
        _exactly_one(self, ACTIONS, "step")
        return self

    @property
    def action(self) -> str:
        for a in ACTIONS:
            if getattr(self, a.replace("assert", "assert_")) is not None:
                return a
        raise AssertionError("validated: one is set")


class Simulator(_Strict):
    set: dict[str, Any] = Field(default_factory=dict)
    """Extra values of the joulie-simulator chart (as SIMCLUSTER_SIM_EXTRA_VALUES, merged last)."""


class Workload(_Strict):
    smoke: Literal[True] | None = None
    trace: str | None = None

    @model_validator(mode="after")
    def _one(self) -> Workload:
        if (self.smoke is None) == (self.trace is None):
            raise ValueError("expected exactly one of smoke: true, trace: FILE")
        return self


class Scenario(_Strict):
    name: str = Field(pattern=DNS_LABEL, max_length=50)
    description: str = ""
    spec: str
    values: list[str] = Field(default_factory=list)
    """Values files of the joulie chart (the chart's values.yaml always first); none: the smoke's."""
    simulator: Simulator = Field(default_factory=Simulator)
    workload: Workload = Field(default_factory=lambda: Workload(smoke=True))
    """The load deploy starts with."""
    sample_interval_s: float = Field(default=3.0, alias="sampleIntervalS", ge=0.5, le=600)
    """How often the timeline (timeline.csv, timeline.png) samples power, caps and jobs."""
    timeout_s: float = Field(default=900.0, alias="timeoutS", gt=0)
    """How long the whole run (up, deploy and the steps) may take."""
    steps: list[Step] = Field(min_length=1)

    @model_validator(mode="after")
    def _names(self) -> Scenario:
        seen: set[str] = set()
        for i, s in enumerate(self.steps):
            name = s.name or f"{s.action}-{i}"
            if name in seen:
                raise ValueError(f"steps[{i}]: name {name!r} is used twice")
            seen.add(name)
        return self

    def step_name(self, i: int) -> str:
        s = self.steps[i]
        return s.name or f"{s.action}-{i}"

    @property
    def asserts(self) -> list[int]:
        return [i for i, s in enumerate(self.steps) if s.assert_ is not None]


# --- errors that name the file, the step and the field ----------------------------------------


_TAGS = ("function-after", "function-before", "function-plain", "function-wrap")


def _where(doc: Document, loc: tuple[int | str, ...]) -> tuple[str, tuple[int | str, ...]]:
    """A location as the user reads it (``steps[2] "switch": policy.env``) and the data path to its line.
    pydantic puts union members' type names into the path (``list[str]``, ``TwinCondition``): dropped."""
    path = tuple(p for p in loc if isinstance(p, int) or (not p[:1].isupper() and "[" not in p and p not in _TAGS))
    out = ""
    rest = path
    if len(path) >= 2 and path[0] == "steps" and isinstance(path[1], int):
        i = path[1]
        steps = doc.data.get("steps") if isinstance(doc.data, dict) else None
        step = steps[i] if isinstance(steps, list) and i < len(steps) and isinstance(steps[i], dict) else {}
        name = step.get("name")
        out = f'steps[{i}] "{name}"' if isinstance(name, str) and name else f"steps[{i}]"
        rest = path[2:]
    field = field_path(rest) if rest else ""
    if out and field:
        return f"{out}: {field}", path
    return out or field or "(top level)", path


def parse_scenario(doc: Document, benchmarks: Collection[str]) -> Scenario:
    """`benchmarks`: the policy names a ``policy.benchmark`` may give (``joulie_bench.arms.ARMS``)."""
    if not isinstance(doc.data, dict):
        raise ScenarioError(f"{doc.source}: (top level): expected a mapping, got {type(doc.data).__name__}")
    try:
        return Scenario.model_validate(doc.data, context={"benchmarks": list(benchmarks)})
    except ValidationError as e:
        lines = []
        for err in e.errors():
            where, path = _where(doc, tuple(err["loc"]))
            line = doc.line_of(path)
            lines.append(f"{doc.source}: {where}: {field_reason(err)}" + (f" (line {line})" if line is not None else ""))
        raise ScenarioError("\n".join(dict.fromkeys(lines))) from None


def load_scenario(path: Path, benchmarks: Collection[str]) -> Scenario:
    """The scenario file `path`, validated (ScenarioError naming file, step and field)."""
    try:
        doc = load_document(path)
    except YamlError as e:
        raise ScenarioError(str(e)) from e
    return parse_scenario(doc, benchmarks)


def resolve(scenario_file: Path, path: str) -> Path:
    """A path of the scenario, relative to the scenario file's folder."""
    p = Path(path)
    return p if p.is_absolute() else scenario_file.parent / p
