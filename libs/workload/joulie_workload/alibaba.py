"""traceextract for the Alibaba PAI GPU-cluster trace (``cluster-trace-gpu-v2023``) -> our trace. Pure.

Source: ``openb_pod_list_default.csv`` of github.com/alibaba/clusterdata ``cluster-trace-gpu-v2023``
(local copy and its terms: /work/shared/data/alibaba-gpu-v2023/PROVENANCE.md; research use, cite
Weng et al., "Beware of Fragmentation: Scheduling GPU-Sharing Workloads with Fragmentation Gradient
Descent", USENIX ATC 2023). One pod per CSV row; the columns read (README of the trace):
``name``, ``cpu_milli`` (CPUs x 1000), ``memory_mib``, ``num_gpu`` (0-8), ``gpu_milli`` (the share
of one GPU x 1000 for GPU-sharing pods, num_gpu 1), ``qos``, ``pod_phase``, ``creation_time``,
``deletion_time``, ``scheduled_time`` (seconds). ``gpu_spec`` (GPU type constraints; empty in the
default file) is not read: GPU types are not modelled.

The rules, fixed before any result from the extracted trace was looked at (never tuned to one):

1. Runtime = ``deletion_time - scheduled_time``. Pods without a usable runtime are skipped and
   counted by reason (``AlibabaExtracted.skipped``), never silently: ``never scheduled`` (no
   ``scheduled_time``: the Pending pods), ``no deletion time``, ``deleted before created``
   (deletion < creation), ``still running at the trace's end`` (deletion at or after the trace's
   end, by default the file's largest ``deletion_time``: PROVENANCE.md says long-running pods'
   deletion times are clipped there, so their runtime is unknown), ``no run time`` (deletion <=
   scheduled). Also ``no CPU request`` (cpu_milli <= 0), ``inconsistent GPU request`` (gpu_milli
   > 0 with num_gpu 0, or a fraction with num_gpu > 1: the README gives fractions only with
   num_gpu 1) and ``unknown QoS``. Failed, Running and Succeeded pods are kept alike: each held
   its resources from scheduled to deletion (the summary counts the kept pods by phase).
2. Times: arrival = ``(creation_time - earliest kept creation_time) / time_scale``; runtime /
   ``time_scale``. The original queueing (creation -> scheduled) is dropped: the simulated
   scheduler decides when a pod starts.
3. Resources: cores = cpu_milli / 1000 (at most ``max_cpus`` when set); memoryMi = memory_mib
   (0: the trace format's default 64; at most ``max_memory_mi`` when set); GPUs = num_gpu (at
   most ``max_gpus`` when set). Caps are counted in the summary.
4. Fractional GPUs (0 < gpu_milli < 1000, num_gpu 1: GPU sharing) are rounded up to one whole
   GPU: an ``nvidia.com/gpu`` request is whole devices, and the simulator gives each board to one
   job. The pod then holds its board alone with its kind's natural draw (not scaled by its share:
   under sharing a board's draw depends on its co-tenants, which the trace does not give). The
   effect is measured, not hidden: the summary gives the GPU-seconds the trace requested
   (num_gpu x gpu_milli / 1000 x runtime; gpu_milli 0 or 1000: whole GPUs) against those
   extracted (whole GPUs x runtime) and their ratio; each record keeps ``origin.gpuMilli``.
5. Kind and class by QoS (the GPU share changes neither):

   ==========  ==============  ===========  ==========================================================
   qos         GPU pod kind    class        why
   ==========  ==============  ===========  ==========================================================
   LS          gpu-inference   performance  Latency Sensitive (trace README). Alibaba Cloud's
                                            co-location docs (ACK koordinator, "Get started with
                                            workload colocation") give LS's typical workloads as
                                            online services; on GPUs, model serving. Its latency
                                            must not suffer: ``performance`` (never on eco nodes).
   BE          gpu-training    eco          Best Effort (README). The same docs list BE's typical
                                            workloads as batch jobs, "AI training jobs" among them,
                                            run at lower priority with L3 cache and memory bandwidth
                                            limited: work that accepts being slowed, Joulie's
                                            ``eco``.
   Burstable,  gpu-inference   general      Kubernetes' own QoS classes (a pod with requests;
   Guaranteed                               Guaranteed: requests = limits), not Alibaba's LS/BE
                                            labels. They reserve what they request instead of
                                            running best effort, as serving does: gpu-inference.
                                            Nothing says how latency-bound they are: no class
                                            constraint.
   ==========  ==============  ===========  ==========================================================

   Pods without a GPU are ``cpu-compute`` (as SWF jobs without a large working set: nothing in
   the trace says memory-bound), class by the same table.
6. Work and draw: ``gpuUnits = GPUs x runtime``; a CPU-only pod's ``cpuUnits = cores x runtime``
   (the SWF convention, ``extract``); a GPU pod's ``cpuUnits = 0.2 x cores x runtime`` with the
   host's utilisation 0.3 and compute share Beta(2, 4)'s mean (workloadgen's input pipeline: the
   host feeds the boards, so a CPU limit does not hold up GPU work that the trace ran at full
   speed). Sensitivity and utilisation are the kind's means (``kinds``; as the SWF rule); a
   ``gpu-inference`` pod carries ``phases`` (prefill time share and each phase's c and u at their
   means) and their time-weighted means at the top level. ``origin`` keeps the pod's name, qos,
   num_gpu, gpu_milli and pod_phase.

Benchmark units: like an SWF log, the extracted jobs are cut into consecutive chunks by arrival
(``chunks.cut_units``), each re-based to start at 0.
"""

from __future__ import annotations

import csv
import math
import statistics
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Final

from pydantic import ValidationError

from joulie_workload.kinds import HOST_FEED_COMPUTE_SHARE, HOST_FEED_CPU_UTIL, SPECS, WorkloadKind
from joulie_workload.trace import Job, TraceError, phases_field

TRACE_NAME: Final = "alibaba-gpu-v2023"
SUFFIX: Final = ".csv"
"""The file suffix the benchmark and traceextract take for this format (SWF logs are ``.swf``)."""
COLUMNS: Final = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "qos", "pod_phase",
                  "creation_time", "deletion_time", "scheduled_time")
WHOLE_GPU_MILLI: Final = 1000
HOST_FEED_WORK_SHARE: Final = 0.2
DEFAULT_MEMORY_MI: Final = 64

QOS_RULES: Final[dict[str, tuple[WorkloadKind, str]]] = {
    "LS": ("gpu-inference", "performance"),
    "BE": ("gpu-training", "eco"),
    "Burstable": ("gpu-inference", "general"),
    "Guaranteed": ("gpu-inference", "general"),
}
"""qos -> (kind of a GPU pod, class); the module docstring's table."""
CPU_POD_KIND: Final[WorkloadKind] = "cpu-compute"


@dataclass(frozen=True)
class AlibabaOptions:
    time_scale: float = 1.0
    max_cpus: float = 0.0
    """Cores per pod at most (0: no cap)."""
    max_gpus: int = 0
    """GPUs per pod at most (0: no cap)."""
    max_memory_mi: int = 0
    """Memory per pod at most, MiB (0: no cap)."""
    namespace: str = "default"
    limit: int = 0
    """Keep the first N usable pods by arrival (0: all)."""
    trace_end_s: float | None = None
    """Pods deleted at or after this are still running at the trace's end (None: the file's last deletion)."""


@dataclass(frozen=True)
class Pod:
    """One CSV row, parsed."""

    line: int
    name: str
    cpu_milli: float
    memory_mib: float
    num_gpu: int
    gpu_milli: float
    qos: str
    phase: str
    creation_s: float
    deletion_s: float | None
    scheduled_s: float | None

    @property
    def gpu_share(self) -> float:
        """GPUs the pod asked for, fractions included."""
        if self.num_gpu == 1 and 0 < self.gpu_milli < WHOLE_GPU_MILLI:
            return self.gpu_milli / WHOLE_GPU_MILLI
        return float(self.num_gpu)


@dataclass
class AlibabaSummary:
    """What the extraction kept, skipped and changed; ``lines()`` is what traceextract prints."""

    pods: int = 0
    trace_end_s: float = 0.0
    skipped: Counter[str] = field(default_factory=Counter)
    phases: Counter[str] = field(default_factory=Counter)
    kinds: Counter[str] = field(default_factory=Counter)
    classes: Counter[str] = field(default_factory=Counter)
    fractional_gpu_pods: int = 0
    gpu_s_requested: float = 0.0
    """GPU-seconds the kept pods asked for (trace seconds, fractions as asked)."""
    gpu_s_rounded: float = 0.0
    """GPU-seconds with fractions rounded up to whole GPUs (before any ``max_gpus`` cap)."""
    gpu_s_extracted: float = 0.0
    """GPU-seconds in the extracted trace (after the cap; trace seconds, before ``time_scale``)."""
    capped: Counter[str] = field(default_factory=Counter)
    runtimes_s: list[float] = field(default_factory=list)
    """Each kept pod's runtime (trace seconds)."""

    @property
    def kept(self) -> int:
        return sum(self.kinds.values())

    @property
    def rounding_ratio(self) -> float:
        return self.gpu_s_rounded / self.gpu_s_requested if self.gpu_s_requested > 0 else 1.0

    def lines(self) -> list[str]:
        def counts(c: Counter[str]) -> str:
            return ", ".join(f"{n} {k}" for k, n in sorted(c.items())) or "none"

        out = [
            f"{self.kept} of {self.pods} pods kept; skipped: {counts(self.skipped)} "
            f"(trace end {self.trace_end_s:.0f} s)",
            f"kept by pod phase: {counts(self.phases)}",
            f"kinds: {counts(self.kinds)}; classes: {counts(self.classes)}",
            f"fractional GPUs rounded up to 1 whole GPU: {self.fractional_gpu_pods} pods; GPU-hours requested "
            f"{self.gpu_s_requested / 3600:.1f}, as rounded {self.gpu_s_rounded / 3600:.1f} "
            f"(x{self.rounding_ratio:.3f})",
        ]
        if self.runtimes_s:
            q = statistics.quantiles(self.runtimes_s, n=10) if len(self.runtimes_s) > 1 else [self.runtimes_s[0]] * 9
            out.append(f"runtime (trace seconds, before --time-scale): median {statistics.median(self.runtimes_s):.0f}, "
                       f"p90 {q[8]:.0f}, max {max(self.runtimes_s):.0f}")
        if self.capped:
            out.append(f"capped: {counts(self.capped)}; GPU-hours extracted {self.gpu_s_extracted / 3600:.1f}")
        return out


@dataclass(frozen=True)
class AlibabaExtracted:
    jobs: list[Job]
    summary: AlibabaSummary

    @property
    def skipped(self) -> dict[str, int]:
        return dict(self.summary.skipped)


def _number(row: dict[str, str], column: str, source: str, line: int, *, optional: bool = False) -> float | None:
    text = (row.get(column) or "").strip()
    if not text and optional:
        return None
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise TraceError(f"{source}:{line}: {column}: {text!r} is not a number")
    return value


def _required(row: dict[str, str], column: str, source: str, line: int) -> float:
    value = _number(row, column, source, line)
    assert value is not None  # not optional
    return value


def _whole(row: dict[str, str], column: str, source: str, line: int) -> int:
    value = _required(row, column, source, line)
    if value != int(value):
        raise TraceError(f"{source}:{line}: {column}: {row[column].strip()!r} is not a whole number")
    return int(value)


def read_pods(lines: Iterable[str], source: str) -> list[Pod]:
    """The CSV's pods, or TraceError naming ``source:line: column``."""
    reader = csv.DictReader(lines)
    missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
    if missing:
        raise TraceError(f"{source}:1: (header): missing column(s) {', '.join(missing)}; want {', '.join(COLUMNS)}")
    pods: list[Pod] = []
    seen: dict[str, int] = {}
    for row in reader:
        line = reader.line_num
        if None in row:  # more fields than the header names
            raise TraceError(f"{source}:{line}: (row): more fields than the header's {len(reader.fieldnames or [])}")
        name = (row["name"] or "").strip()
        if not name:
            raise TraceError(f"{source}:{line}: name: empty")
        if name in seen:
            raise TraceError(f"{source}:{line}: name: {name!r} already used on line {seen[name]}")
        seen[name] = line
        pods.append(Pod(
            line=line, name=name, cpu_milli=_required(row, "cpu_milli", source, line),
            memory_mib=_required(row, "memory_mib", source, line),
            num_gpu=_whole(row, "num_gpu", source, line), gpu_milli=_required(row, "gpu_milli", source, line),
            qos=(row["qos"] or "").strip(), phase=(row["pod_phase"] or "").strip(),
            creation_s=_required(row, "creation_time", source, line),
            deletion_s=_number(row, "deletion_time", source, line, optional=True),
            scheduled_s=_number(row, "scheduled_time", source, line, optional=True),
        ))
    return pods


def why_skipped(pod: Pod, trace_end_s: float) -> str | None:
    """The module docstring's rule 1: the reason a pod has no usable runtime or request, else None."""
    if pod.scheduled_s is None:
        return "never scheduled"
    if pod.deletion_s is None:
        return "no deletion time"
    if pod.deletion_s < pod.creation_s:
        return "deleted before created"
    if pod.deletion_s >= trace_end_s:
        return "still running at the trace's end"
    if pod.deletion_s <= pod.scheduled_s:
        return "no run time"
    if pod.cpu_milli <= 0:
        return "no CPU request"
    fractional = 0 < pod.gpu_milli < WHOLE_GPU_MILLI
    if pod.num_gpu < 0 or (pod.num_gpu == 0 and pod.gpu_milli > 0) or (pod.num_gpu > 1 and fractional):
        return "inconsistent GPU request"
    if pod.qos not in QOS_RULES:
        return "unknown QoS"
    return None


def kind_and_class(pod: Pod) -> tuple[WorkloadKind, str]:
    """The module docstring's rule 5."""
    gpu_kind, cls = QOS_RULES[pod.qos]
    return (gpu_kind if pod.num_gpu > 0 else CPU_POD_KIND), cls


def _gpu_draw(kind: WorkloadKind) -> tuple[float, float, list[dict[str, Any]] | None]:
    """(c, u, phases) of a GPU pod: the kind's means, or its phases' means and their time-weighted means."""
    spec = SPECS[kind]
    if not spec.phases or spec.first_phase_share is None:
        return round(spec.compute_share.mean, 3), round(spec.natural_draw.mean, 3), None
    first = round(spec.first_phase_share.mean, 4)
    shares = (first, round(1.0 - first, 4))
    phases, c, u = phases_field([(p.name, s, round(p.compute_share.mean, 3), round(p.natural_draw.mean, 3))
                                 for p, s in zip(spec.phases, shares, strict=True)])
    return c, u, phases


def _cap(value: float, cap: float, what: str, summary: AlibabaSummary) -> float:
    if cap > 0 and value > cap:
        summary.capped[what] += 1
        return cap
    return value


def _record(pod: Pod, t0: float, opts: AlibabaOptions, summary: AlibabaSummary) -> dict[str, Any]:
    """The job record of a kept pod (rules 2-6), counting what it changed into ``summary``."""
    assert pod.scheduled_s is not None and pod.deletion_s is not None  # kept pods have both
    runtime = pod.deletion_s - pod.scheduled_s
    kind, cls = kind_and_class(pod)
    cores = _cap(pod.cpu_milli / 1000.0, opts.max_cpus, "cores", summary)
    memory = int(_cap(pod.memory_mib, opts.max_memory_mi, "memory", summary)) or DEFAULT_MEMORY_MI
    gpus = int(_cap(pod.num_gpu, opts.max_gpus, "GPUs", summary))
    scale = opts.time_scale
    origin: dict[str, str | int | float] = {"trace": TRACE_NAME, "pod": pod.name, "qos": pod.qos, "podPhase": pod.phase,
                                            "numGpu": pod.num_gpu, "gpuMilli": int(pod.gpu_milli)}
    record: dict[str, Any] = {
        "type": "job", "jobId": pod.name, "submitTimeOffsetSec": round((pod.creation_s - t0) / scale, 3),
        "class": cls, "workloadKind": kind, "namespace": opts.namespace, "origin": origin,
    }
    summary.kinds[kind] += 1
    summary.classes[cls] += 1
    summary.phases[pod.phase or "(none)"] += 1
    summary.runtimes_s.append(runtime)
    if gpus == 0:
        spec = SPECS[kind]
        return {**record, "requests": {"cpu": cores, "gpu": 0, "memoryMi": memory},
                "work": {"cpuUnits": round(cores * runtime / scale, 3)},
                "utilization": {"cpu": round(spec.natural_draw.mean, 3), "gpu": 0.0},
                "sensitivity": {"cpu": round(spec.compute_share.mean, 3), "gpu": 0.0}}
    summary.fractional_gpu_pods += int(pod.gpu_share < pod.num_gpu)
    summary.gpu_s_requested += pod.gpu_share * runtime
    summary.gpu_s_rounded += pod.num_gpu * runtime
    summary.gpu_s_extracted += gpus * runtime
    c, u, phases = _gpu_draw(kind)
    return {**record, "requests": {"cpu": cores, "gpu": gpus, "memoryMi": memory},
            "work": {"cpuUnits": round(HOST_FEED_WORK_SHARE * cores * runtime / scale, 3),
                     "gpuUnits": round(gpus * runtime / scale, 3)},
            "utilization": {"cpu": HOST_FEED_CPU_UTIL, "gpu": u},
            "sensitivity": {"cpu": round(HOST_FEED_COMPUTE_SHARE.mean, 3), "gpu": c},
            **({"phases": phases} if phases else {})}


def check_options(opts: AlibabaOptions) -> None:
    problems = []
    if not (opts.time_scale > 0 and math.isfinite(opts.time_scale)):
        problems.append(f"--time-scale: {opts.time_scale} must be a finite number > 0")
    for name, v in (("--max-cpus", opts.max_cpus), ("--max-gpus", opts.max_gpus), ("--max-memory-mi", opts.max_memory_mi),
                    ("--limit", opts.limit)):
        if not (v >= 0 and math.isfinite(v)):
            problems.append(f"{name}: {v} must be >= 0 (0: none)")
    if problems:
        raise ValueError("; ".join(problems))


def extract_alibaba(lines: Iterable[str], source: str, opts: AlibabaOptions) -> AlibabaExtracted:
    """The trace's pods as our jobs, sorted by arrival, with what was kept, skipped and changed."""
    check_options(opts)
    pods = read_pods(lines, source)
    summary = AlibabaSummary(pods=len(pods))
    deletions = [p.deletion_s for p in pods if p.deletion_s is not None]
    summary.trace_end_s = opts.trace_end_s if opts.trace_end_s is not None else max(deletions, default=math.inf)
    kept = []
    for pod in pods:
        why = why_skipped(pod, summary.trace_end_s)
        if why is None:
            kept.append(pod)
        else:
            summary.skipped[why] += 1
    kept.sort(key=lambda p: (p.creation_s, p.name))
    if opts.limit:
        summary.skipped["beyond --limit"] += max(0, len(kept) - opts.limit)
        kept = kept[:opts.limit]
    t0 = kept[0].creation_s if kept else 0.0
    jobs = [_job(_record(p, t0, opts, summary), source, p.line) for p in kept]
    return AlibabaExtracted(sorted(jobs, key=lambda j: (j.submit_s, j.job_id)), summary)


def _job(record: dict[str, Any], source: str, line: int) -> Job:
    """The record as a Job; a pod the trace format cannot hold (e.g. more than 1024 cores) names its CSV line."""
    try:
        return Job.model_validate(record)
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(record)"
        raise TraceError(f"{source}:{line}: {where}: {str(first['msg']).removeprefix('Value error, ')}") from None
