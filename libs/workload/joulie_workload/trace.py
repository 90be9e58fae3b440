"""The workload trace: JSON lines, one record per line; ``type: job`` records are jobs.

A job record (``schemaVersion`` ``v1``; names follow the original simulator's trace where it has one)::

    {"type": "job", "schemaVersion": "v1", "jobId": "j-00001", "submitTimeOffsetSec": 12.5,
     "class": "performance", "workloadKind": "gpu-training", "requests": {"cpu": 8, "gpu": 1, "memoryMi": 4096},
     "work": {"cpuUnits": 4800, "gpuUnits": 600},
     "utilization": {"cpu": 0.95, "gpu": 0.9}, "sensitivity": {"cpu": 1.0, "gpu": 1.0}}

- ``class`` is the workload class, expressed to Kubernetes only through scheduling constraints on
  ``joulie.io/power-profile`` (seed "Demand model"): ``performance`` = required node affinity
  ``NotIn [eco]``, ``eco`` = ``In [eco]``, ``general`` = no constraint. Pods also carry the label
  ``joulie.io/workload-class``.
- ``workloadKind`` is what the job does to the hardware (``kinds``: ``gpu-training``,
  ``gpu-inference``, ``cpu-compute``, ``cpu-memory``, ``gpu-inference-prefill``,
  ``gpu-inference-decode``), a different thing from ``class``. A record
  without it (traces written before kinds) gets ``gpu-training`` when ``requests.gpu > 0``, else
  ``cpu-compute``; written traces always carry it. Pods carry it as the label and annotation
  ``joulie.io/workload-kind``.
- ``work.cpuUnits`` are core-seconds at full speed, ``work.gpuUnits`` GPU-seconds at full speed
  (see ``engine`` for how caps slow them). A job is done when both are done.
- ``sensitivity`` (0..1, default 1) is the job's compute-bound share per device: the share of its
  time at full clock that scales with the clock (1: speed follows the clock; 0: memory-bound work
  no clock slows). ``workloadgen`` draws it from the kind's distribution; the engine's
  ``throughput(r, c) = 1 / (c / r + 1 - c)`` (joulie_simulator.physics.speed) uses it.
- ``utilization`` is the job's natural draw: the busy share of its CPU cores' power, the GPU
  board's share of its dynamic power range.
- ``requests.gpuResource`` (default ``nvidia.com/gpu``; ``amd.com/gpu`` for AMD boards) and
  ``nodeSelector`` (extra node labels the Pod requires, e.g. ``kubernetes.io/hostname`` to pin a
  job to a node; the scheduler still places it) are optional, and so are ``tolerations`` (the
  Pod's own, beside the KWOK taint's: ``[{"key": "nvidia.com/gpu", "operator": "Exists",
  "effect": "NoSchedule"}]`` lets a job onto a Node whose profile taints it).
- ``phases`` (optional, GPU kinds only; issue 34): the job's GPU work as a mix of serving phases,
  a list of ``{"name": "prefill"|"decode", "timeShare": s, "sensitivity": {"gpu": c},
  "utilization": {"gpu": u}}``. ``timeShare`` in (0, 1], the shares summing to 1 (within 1e-6),
  names unique; every field required. Within any tick the board spends ``timeShare`` of its busy
  time in each phase (the phases interleave far below a tick, as continuous batching does).
  Absent (or null): one phase from the job's own ``sensitivity.gpu`` and ``utilization.gpu``,
  exactly as before phases existed. The top-level values stay what the record says; for
  aggregated ``gpu-inference`` jobs ``workloadgen`` writes the time-weighted means there. A record
  without ``phases`` is written without it, so traces without phases are byte-identical to those
  written before. ``Job.gpu_phase_mix`` gives the mix either way::

    "phases": [{"name": "prefill", "timeShare": 0.15, "sensitivity": {"gpu": 0.9}, "utilization": {"gpu": 0.95}},
               {"name": "decode", "timeShare": 0.85, "sensitivity": {"gpu": 0.14}, "utilization": {"gpu": 0.55}}]

- ``origin`` (optional): where an extracted record came from, a flat object of at most 16 names
  (1-64 characters) to strings (at most 200 characters) or numbers, e.g. ``{"trace":
  "alibaba-gpu-v2023", "pod": "openb-pod-0001", "qos": "LS", "gpuMilli": 460}`` (``alibaba``: it
  keeps the fractional GPU share a whole GPU replaced). Informational: no component reads it.
- Other record types (e.g. ``workload``) are skipped; a blank line or one starting with ``#`` too.

A bad line stops the load with ``trace.jsonl:LINE: field: why``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from joulie_workload.kinds import PhaseName, WorkloadKind, default_kind, is_gpu_kind

SCHEMA_VERSION = "v1"
CLASSES = ("performance", "eco", "general")
WorkloadClass = Literal["performance", "eco", "general"]


class TraceError(ValueError):
    """A trace that cannot be used; the message names file, line and field."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class Requests(_Strict):
    cpu: float = Field(default=1.0, gt=0, le=1024, description="CPU cores")
    gpu: int = Field(default=0, ge=0, le=64)
    memory_mi: int = Field(default=64, gt=0, alias="memoryMi")
    gpu_resource: str = Field(default="nvidia.com/gpu", alias="gpuResource", pattern=r"^[a-z0-9.-]+/[a-z0-9.-]+$",
                              description="extended resource the GPUs are requested as (amd.com/gpu on AMD nodes)")


class Work(_Strict):
    cpu_units: float = Field(default=0.0, ge=0, alias="cpuUnits")
    gpu_units: float = Field(default=0.0, ge=0, alias="gpuUnits")


class Utilization(_Strict):
    cpu: float = Field(default=0.9, ge=0, le=1)
    gpu: float = Field(default=0.9, ge=0, le=1)


class Sensitivity(_Strict):
    cpu: float = Field(default=1.0, ge=0, le=1)
    gpu: float = Field(default=1.0, ge=0, le=1)


class PhaseSensitivity(_Strict):
    gpu: float = Field(ge=0, le=1, allow_inf_nan=False)


class PhaseUtilization(_Strict):
    gpu: float = Field(ge=0, le=1, allow_inf_nan=False)


class Phase(_Strict):
    """One serving phase of a job's GPU work (module docstring: ``phases``)."""

    name: PhaseName
    time_share: float = Field(alias="timeShare", gt=0, le=1, allow_inf_nan=False)
    sensitivity: PhaseSensitivity
    utilization: PhaseUtilization


PHASE_SUM_TOLERANCE = 1e-6
ORIGIN_MAX_ENTRIES = 16
OPTIONAL_FIELDS = ("phases", "origin")
"""Fields a record carries only when set, so records without them read as they did before they existed."""


class Toleration(_Strict):
    """A Kubernetes toleration (``key`` empty with ``Exists``: every taint; ``effect`` empty: every effect)."""

    key: str = Field(default="", max_length=316)
    operator: Literal["Equal", "Exists"] = "Equal"
    value: str = Field(default="", max_length=63)
    effect: Literal["", "NoSchedule", "PreferNoSchedule", "NoExecute"] = ""

    @model_validator(mode="after")
    def _exists_has_no_value(self) -> Toleration:
        if self.operator == "Exists" and self.value:
            raise ValueError("value: must be empty with operator Exists")
        if not self.key and self.operator != "Exists":
            raise ValueError("key: empty key needs operator Exists")
        return self

    def manifest(self) -> dict[str, str]:
        """The toleration as a Pod spec lists it (empty fields left out)."""
        out = {"key": self.key, "operator": self.operator, "value": self.value, "effect": self.effect}
        return {k: v for k, v in out.items() if v}


class Job(_Strict):
    type: Literal["job"] = "job"
    schema_version: Literal["v1"] = Field(default="v1", alias="schemaVersion")
    job_id: str = Field(alias="jobId", min_length=1, max_length=200)
    submit_s: float = Field(alias="submitTimeOffsetSec", ge=0, allow_inf_nan=False)
    workload_class: WorkloadClass = Field(default="general", alias="class")
    kind: WorkloadKind = Field(default="cpu-compute", alias="workloadKind")
    """What the job does to the hardware (``kinds``); see the module docstring for the default."""
    namespace: str = Field(default="default", pattern=r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
    requests: Requests = Field(default_factory=Requests)
    work: Work = Field(default_factory=Work)
    utilization: Utilization = Field(default_factory=Utilization)
    sensitivity: Sensitivity = Field(default_factory=Sensitivity)
    node_selector: dict[str, str] = Field(default_factory=dict, alias="nodeSelector")
    """Extra node labels the Pod requires (e.g. kubernetes.io/hostname to pin a job), beside the cluster's."""
    tolerations: list[Toleration] = Field(default_factory=list)
    """Taints the Pod tolerates beside the KWOK taint (e.g. a GPU node's nvidia.com/gpu)."""
    phases: list[Phase] | None = None
    """The GPU work's serving phases (module docstring); None: one phase from sensitivity/utilization."""
    origin: dict[str, str | int | float] | None = None
    """Where an extracted record came from (module docstring); read by no component."""

    @field_validator("origin", mode="before")
    @classmethod
    def _origin_is_flat(cls, origin: Any) -> Any:
        if origin is None or not isinstance(origin, dict):
            return origin  # None, or the dict type's own error
        if len(origin) > ORIGIN_MAX_ENTRIES:
            raise ValueError(f"{len(origin)} entries (at most {ORIGIN_MAX_ENTRIES})")
        for key, value in origin.items():
            if not 1 <= len(key) <= 64:
                raise ValueError(f"a name of {len(key)} characters (1 to 64)")
            if isinstance(value, str):
                if len(value) > 200:
                    raise ValueError(f"{key}: a string of {len(value)} characters (at most 200)")
            elif isinstance(value, bool) or not isinstance(value, int | float):
                raise ValueError(f"{key}: a string or a finite number, got {type(value).__name__}")
            elif not math.isfinite(value):
                raise ValueError(f"{key}: a string or a finite number, got {value}")
        return origin

    @field_validator("phases")
    @classmethod
    def _phases_add_up(cls, phases: list[Phase] | None) -> list[Phase] | None:
        if phases is None:
            return None
        if not phases:
            raise ValueError("empty list (leave the field out for one phase)")
        names = [p.name for p in phases]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ValueError(f"name {twice[0]!r} appears more than once")
        total = sum(p.time_share for p in phases)
        if abs(total - 1.0) > PHASE_SUM_TOLERANCE:
            raise ValueError(f"timeShare values sum to {total:g}, not 1 (within {PHASE_SUM_TOLERANCE:g})")
        return phases

    @model_validator(mode="before")
    @classmethod
    def _default_kind(cls, raw: Any) -> Any:
        if isinstance(raw, dict) and "workloadKind" not in raw and "kind" not in raw:
            req = raw.get("requests")
            gpus = req.get("gpu", 0) if isinstance(req, dict) else getattr(req, "gpu", 0)
            return {**raw, "workloadKind": default_kind(gpus if isinstance(gpus, int) and gpus > 0 else 0)}
        return raw

    @model_validator(mode="after")
    def _work_matches_requests(self) -> Job:
        if self.work.cpu_units <= 0 and self.work.gpu_units <= 0:
            raise ValueError("work: a job needs cpuUnits or gpuUnits > 0")
        if self.work.gpu_units > 0 and self.requests.gpu == 0:
            raise ValueError("work.gpuUnits: > 0 but requests.gpu is 0")
        if self.phases is not None:
            if not is_gpu_kind(self.kind):
                raise ValueError(f"phases: describe GPU work, but workloadKind {self.kind} is a CPU kind")
            if self.requests.gpu == 0:
                raise ValueError("phases: describe GPU work, but requests.gpu is 0")
        return self

    def gpu_phase_mix(self) -> tuple[tuple[float, float, float], ...]:
        """``(time share, compute share c, natural draw u)`` per phase of the GPU work: the
        ``phases`` when the record has them, else one phase ``(1, sensitivity.gpu, utilization.gpu)``."""
        if self.phases is None:
            return ((1.0, self.sensitivity.gpu, self.utilization.gpu),)
        return tuple((p.time_share, p.sensitivity.gpu, p.utilization.gpu) for p in self.phases)

    @property
    def ideal_runtime_s(self) -> float:
        """Runtime at full speed on hardware nobody caps."""
        cpu = self.work.cpu_units / self.requests.cpu
        gpu = self.work.gpu_units / self.requests.gpu if self.requests.gpu else 0.0
        return max(cpu, gpu)

    def record(self) -> dict[str, Any]:
        """The JSON record (aliases, defaults included, so a trace file is self-describing; ``phases``
        and ``origin`` only when the job has them, so a job without reads exactly as before they existed)."""
        unset = {name for name in OPTIONAL_FIELDS if getattr(self, name) is None}
        return self.model_dump(by_alias=True, mode="json", exclude=unset or None)


def phases_field(phases: Sequence[tuple[str, float, float, float]]) -> tuple[list[dict[str, Any]], float, float]:
    """``(name, timeShare, c, u)`` per phase -> the record's ``phases`` and the time-weighted mean c and u
    (rounded to 3 places): what a generator writes at the top level of a phased job."""
    field = [{"name": n, "timeShare": s, "sensitivity": {"gpu": c}, "utilization": {"gpu": u}} for n, s, c, u in phases]
    mean_c = round(sum(s * c for _, s, c, _ in phases), 3)
    mean_u = round(sum(s * u for _, s, _, u in phases), 3)
    return field, mean_c, mean_u


def _where(err: Mapping[str, Any]) -> str:
    return ".".join(str(p) for p in err["loc"]) or "(record)"


# Longer integers are refused as such: past 4300 digits int() raises with an interpreter hint
# (sys.set_int_max_str_digits) that a user must not be shown (issue 23 fuzzing).
MAX_INT_DIGITS = 100


class _TooLong(Exception):
    def __init__(self, digits: int) -> None:
        self.digits = digits


def _bounded_int(text: str) -> int:
    if len(text) > MAX_INT_DIGITS:
        raise _TooLong(len(text))
    return int(text)


def parse_line(text: str, source: str, lineno: int) -> Job | None:
    """One trace line: a Job, None for a skipped line, or TraceError naming ``source:lineno: field``."""
    stripped = text.strip()
    if not stripped or stripped.startswith("#"):
        return None
    try:
        raw = json.loads(stripped, parse_int=_bounded_int)
    except json.JSONDecodeError as e:
        raise TraceError(f"{source}:{lineno}: not JSON: {e.msg} at column {e.colno}") from None
    except _TooLong as e:
        raise TraceError(f"{source}:{lineno}: a number of {e.digits} digits (at most {MAX_INT_DIGITS})") from None
    if not isinstance(raw, dict):
        raise TraceError(f"{source}:{lineno}: (record): a record is a JSON object, got {type(raw).__name__}")
    kind = raw.get("type")
    if kind is None:
        raise TraceError(f"{source}:{lineno}: type: missing (want \"job\", or another record type to skip)")
    if kind != "job":
        return None
    try:
        return Job.model_validate(raw)
    except ValidationError as e:
        first = e.errors()[0]
        msg = str(first["msg"]).removeprefix("Value error, ")
        field = _where(first)
        if field == "(record)" and ": " in msg:
            field, _, msg = msg.partition(": ")
        return _raise(f"{source}:{lineno}: {field}: {msg}")


def _raise(msg: str) -> Job:
    raise TraceError(msg)


def parse_lines(lines: Iterable[str], source: str) -> list[Job]:
    jobs: list[Job] = []
    seen: dict[str, int] = {}
    for i, line in enumerate(lines, start=1):
        job = parse_line(line, source, i)
        if job is None:
            continue
        if job.job_id in seen:
            raise TraceError(f"{source}:{i}: jobId: {job.job_id!r} already used on line {seen[job.job_id]}")
        seen[job.job_id] = i
        jobs.append(job)
    return sorted(jobs, key=lambda j: (j.submit_s, j.job_id))


def load_trace(path: Path) -> list[Job]:
    """Jobs of a trace file, or of every ``*.jsonl`` part of a directory (sorted), by submit time."""
    if path.is_dir():
        parts = sorted(path.glob("*.jsonl"))
        if not parts:
            raise TraceError(f"{path}: no *.jsonl parts in this directory")
        jobs: list[Job] = []
        for part in parts:
            jobs.extend(_load_file(part))
        ids: set[str] = set()
        for j in jobs:
            if j.job_id in ids:
                raise TraceError(f"{path}: jobId: {j.job_id!r} appears in more than one part")
            ids.add(j.job_id)
        return sorted(jobs, key=lambda j: (j.submit_s, j.job_id))
    return _load_file(path)


def _load_file(path: Path) -> list[Job]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise TraceError(f"{path}: cannot read: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        raise TraceError(f"{path}: not UTF-8 text: {e.reason}") from None
    return parse_lines(text.splitlines(), str(path))


def dump_lines(jobs: Iterable[Job]) -> Iterator[str]:
    for j in jobs:
        yield json.dumps(j.record(), sort_keys=True, separators=(",", ":"))


def write_trace(path: Path, jobs: Iterable[Job]) -> int:
    lines = list(dump_lines(jobs))
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return len(lines)
