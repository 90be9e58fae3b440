"""traceextract: an external trace in the Standard Workload Format (SWF) -> our trace.

SWF is the Parallel Workloads Archive's format (Feitelson et al., "Experience with using the
Parallel Workloads Archive", JPDC 2014; https://www.cs.huji.ac.il/labs/parallel/workload/swf.html):
one job per line, 18 whitespace-separated fields, ``-1`` for unknown, comment lines start with
``;``. The fields read here (1-based):

  1 job number, 2 submit time (s), 4 run time (s), 5 allocated processors, 8 requested processors,
  7 used memory (KB per processor), 10 requested memory (KB per processor),
  11 status (1 completed, 0 failed, 5 cancelled; others are kept), 15 queue number.

Normalisation: submit offsets relative to the earliest kept job, divided by ``time_scale``; cores =
allocated processors (else requested), at most ``max_cpus``; ``cpuUnits = cores x runtime /
time_scale``; class ``general`` unless ``queue_classes`` maps the job's queue. Jobs with no
runtime or no processors are skipped and counted (``Extracted.skipped``), never silently.

Workload kind (SWF records CPU jobs only, and nothing about memory traffic; the working set is the
closest field): ``cpu-memory`` when the memory per processor (field 7, else field 10 when 7 is
unknown) is at least ``memory_bound_kb`` (``--memory-bound-kb``, default 2 GiB = 2097152 KB, about
twice the per-core share of a typical HPC node, so the job's data cannot live in cache and
streams from DRAM), else ``cpu-compute`` (also when both fields are unknown). The job's
sensitivity (compute share) is its kind's mean (``kinds.SPECS``); utilisation is ``utilization``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from joulie_workload.kinds import SPECS, WorkloadKind
from joulie_workload.trace import CLASSES, Job, TraceError

SWF_FIELDS = 18


@dataclass(frozen=True)
class ExtractOptions:
    time_scale: float = 1.0
    max_cpus: int = 64
    utilization: float = 0.9
    queue_classes: Mapping[int, str] = field(default_factory=dict)
    namespace: str = "default"
    limit: int = 0
    memory_bound_kb: float = 2097152.0
    """Memory per processor (KB) from which a job counts as ``cpu-memory``."""


def swf_kind(used_kb: float, requested_kb: float, memory_bound_kb: float) -> WorkloadKind:
    """The module docstring's rule: memory-bound when the per-processor working set is large."""
    mem = used_kb if used_kb > 0 else requested_kb
    return "cpu-memory" if mem > 0 and mem >= memory_bound_kb else "cpu-compute"


@dataclass(frozen=True)
class Extracted:
    jobs: list[Job]
    skipped: dict[str, int]


def parse_queue_classes(text: str) -> dict[int, str]:
    """``1=performance,3=eco`` -> {1: performance, 3: eco}."""
    out: dict[int, str] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        q, sep, cls = part.partition("=")
        if not sep or not q.strip().lstrip("-").isdigit() or cls.strip() not in CLASSES:
            raise ValueError(f"--queue-classes: {part!r} is not QUEUE=CLASS with CLASS one of {', '.join(CLASSES)}")
        out[int(q)] = cls.strip()
    return out


def _num(fields: list[str], i: int, source: str, lineno: int, name: str) -> float:
    try:
        return float(fields[i - 1])
    except ValueError:
        raise TraceError(f"{source}:{lineno}: field {i} ({name}): {fields[i - 1]!r} is not a number") from None


def extract_swf(lines: Iterable[str], source: str, opts: ExtractOptions) -> Extracted:
    if not opts.time_scale > 0:
        raise ValueError(f"--time-scale: {opts.time_scale} must be > 0")
    if opts.max_cpus <= 0:
        raise ValueError(f"--max-cpus: {opts.max_cpus} must be > 0")
    rows: list[tuple[str, float, float, int, int, WorkloadKind]] = []
    skipped: dict[str, int] = {}
    for lineno, line in enumerate(lines, start=1):
        text = line.strip()
        if not text or text.startswith(";"):
            continue
        fields = text.split()
        if len(fields) != SWF_FIELDS:
            raise TraceError(f"{source}:{lineno}: (line): {len(fields)} fields, SWF has {SWF_FIELDS}")
        job_no = fields[0]
        submit = _num(fields, 2, source, lineno, "submit time")
        runtime = _num(fields, 4, source, lineno, "run time")
        procs = _num(fields, 5, source, lineno, "allocated processors")
        if procs <= 0:
            procs = _num(fields, 8, source, lineno, "requested processors")
        queue = int(_num(fields, 15, source, lineno, "queue number"))
        kind = swf_kind(_num(fields, 7, source, lineno, "used memory"), _num(fields, 10, source, lineno, "requested memory"),
                        opts.memory_bound_kb)
        if submit < 0:
            skipped["no submit time"] = skipped.get("no submit time", 0) + 1
        elif runtime <= 0:
            skipped["no run time"] = skipped.get("no run time", 0) + 1
        elif procs <= 0:
            skipped["no processors"] = skipped.get("no processors", 0) + 1
        else:
            rows.append((job_no, submit, runtime, int(procs), queue, kind))
        if opts.limit and len(rows) >= opts.limit:
            break
    if not rows:
        return Extracted([], skipped)
    t0 = min(r[1] for r in rows)
    jobs = []
    for job_no, submit, runtime, procs, queue, kind in rows:
        cores = min(procs, opts.max_cpus)
        jobs.append(Job.model_validate({
            "type": "job",
            "jobId": f"swf-{job_no}",
            "submitTimeOffsetSec": round((submit - t0) / opts.time_scale, 3),
            "class": opts.queue_classes.get(queue, "general"),
            "workloadKind": kind,
            "namespace": opts.namespace,
            "requests": {"cpu": cores, "gpu": 0},
            "work": {"cpuUnits": round(cores * runtime / opts.time_scale, 3)},
            "utilization": {"cpu": opts.utilization, "gpu": 0.0},
            "sensitivity": {"cpu": round(SPECS[kind].compute_share.mean, 3), "gpu": 0.0},
        }))
    return Extracted(sorted(jobs, key=lambda j: (j.submit_s, j.job_id)), skipped)
