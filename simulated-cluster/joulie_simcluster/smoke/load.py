"""The smoke's load as real Pods: one workload job per Node of the spec, pinned to that Node, run by
the workload simulator (``joulie-simulator workload``) through the real kube-scheduler. The Node's
power is then the simulator's model of the load its Pods put on it (seed "Demand model").

Pure: the trace, the load the workload engine derives from it, and which Nodes of the emulator's
truth do not carry that load yet. ``deploy`` writes the trace and starts the runner; ``smoke``
waits for the load.

The job of Node ``N`` (``smoke-load-N``):

- pinned with ``nodeSelector: {kubernetes.io/hostname: N}`` and tolerating the Node's own taints
  (its profile's, e.g. ``nvidia.com/gpu=present:NoSchedule``; the runner adds KWOK's);
- class ``general``: no power-profile affinity, so it stays on the Nodes phase 2 turns eco;
- ``requests.cpu`` = the Node's allocatable CPU - 2 cores (at least 1): the two cores left free
  take the six 1-CPU pods of S10/S11;
- every GPU of the Node, requested as the resource its allocatable names (``nvidia.com/gpu`` or
  ``amd.com/gpu``);
- utilisation 1.0 (CPU and GPU), submitted at offset 0, with work no smoke finishes (1e12 core- and
  GPU-seconds: the runner never deletes the Pod).

Two Nodes are **shared** (``shared_nodes``: the first NVIDIA Node and the first Node without GPUs): their
load is two jobs, ``smoke-load-N`` and ``smoke-load-N-b``, splitting the same cores 2:1 and the boards 3:1
(6 and 2 of 8, on different boards: the engine gives each the lowest free ones), so the energy receipts
are checked on Pods sharing a Node (S17).

The engine turns a bound job into ``cpu_util = requests.cpu * 1.0 / allocatable CPU`` (so just
under 1: 93/95 on a 95-core Node, 6/8 on the 8-core VM) and 1.0 on each board the job holds.
:func:`expected_loads` asks the engine itself, so the smoke expects exactly what the runner sends.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Final
from urllib.parse import quote

from joulie_api import names
from joulie_simcluster.nodes import KWOK_TAINT_KEY
from joulie_simulator.api import Engine, Load
from joulie_workload.pods import LABEL_PART_OF, PART_OF, pod_name
from joulie_workload.trace import Job

CPU_HEADROOM: Final = 2.0
"""Cores per Node the workload leaves to S10/S11's pods (six of 1 CPU over the cluster)."""
NEVER_DONE: Final = 1e12
"""Core- or GPU-seconds of work: ~30 000 years on one core, so no smoke sees a job finish."""
HOSTNAME_LABEL: Final = "kubernetes.io/hostname"
GPU_RESOURCES: Final = (names.RESOURCE_NVIDIA_GPU, names.RESOURCE_AMD_GPU)
PODS_PATH: Final = f"/api/v1/pods?labelSelector={quote(f'{LABEL_PART_OF}={PART_OF}', safe='')}"
"""Every Pod the workload runner created, in every namespace."""
UTIL_TOLERANCE: Final = 1e-6
"""The runner sends the engine's value; truth echoes it as a float."""


def trace_path(state_root: Path) -> Path:
    """Where ``deploy`` writes the trace the runner reads: the smoke's, unless ``deploy --trace``."""
    return state_root / "workload" / "trace.jsonl"


def cpu_cores(quantity: str) -> float:
    """A CPU quantity as Node.status.allocatable writes it (``"95"``, ``"63500m"``) in cores."""
    if quantity.endswith("m"):
        return int(quantity[:-1]) / 1000
    return float(quantity)


def node_gpus(node: Mapping[str, Any]) -> tuple[str, int]:
    """(resource name, count) of the Node's GPUs from its allocatable; (``nvidia.com/gpu``, 0) without."""
    allocatable = node["status"]["allocatable"]
    for resource in GPU_RESOURCES:
        count = int(allocatable.get(resource, "0"))
        if count > 0:
            return resource, count
    return GPU_RESOURCES[0], 0


def job_id(node: str) -> str:
    return f"smoke-load-{node}"


def second_job_id(node: str) -> str:
    """The second job of a shared Node."""
    return f"{job_id(node)}-b"


def shared_nodes(nodes: Iterable[Mapping[str, Any]]) -> tuple[str, ...]:
    """The Nodes whose load is two Pods: the first with NVIDIA GPUs (its agent maps boards to Pods) and the
    first without GPUs and with at least 4 cores for the jobs (``render_nodes`` order)."""
    gpu = cpu = ""
    for node in nodes:
        resource, gpus = node_gpus(node)
        cores = cpu_cores(node["status"]["allocatable"]["cpu"]) - CPU_HEADROOM
        if not gpu and resource == names.RESOURCE_NVIDIA_GPU and gpus >= 2:
            gpu = node["metadata"]["name"]
        elif not cpu and gpus == 0 and cores >= 4:
            cpu = node["metadata"]["name"]
    return tuple(n for n in (gpu, cpu) if n)


def tolerations(node: Mapping[str, Any]) -> list[dict[str, str]]:
    """A toleration per taint of the Node but KWOK's (the runner's Pods tolerate that one already)."""
    out = []
    for taint in (node.get("spec") or {}).get("taints") or []:
        if taint["key"] == KWOK_TAINT_KEY:
            continue
        value = str(taint.get("value") or "")
        out.append({"key": taint["key"], "operator": "Equal" if value else "Exists", "value": value,
                    "effect": taint.get("effect", "")})
    return out


def smoke_jobs(nodes: Iterable[Mapping[str, Any]]) -> list[Job]:
    """The smoke trace: one job per Node (``render_nodes`` order), two on each shared Node, validated as the
    runner will read it."""
    nodes = list(nodes)
    shared = shared_nodes(nodes)
    jobs = []
    for node in nodes:
        name = node["metadata"]["name"]
        resource, gpus = node_gpus(node)
        cpu = max(1.0, cpu_cores(node["status"]["allocatable"]["cpu"]) - CPU_HEADROOM)
        parts = [(job_id(name), cpu, gpus)]
        if name in shared:
            first_cpu, first_gpus = round(cpu * 2 / 3), gpus - gpus // 4
            parts = [(job_id(name), first_cpu, first_gpus), (second_job_id(name), cpu - first_cpu, gpus - first_gpus)]
        for jid, cores, boards in parts:
            jobs.append(Job.model_validate({
                "type": "job",
                "jobId": jid,
                "submitTimeOffsetSec": 0,
                "class": "general",
                "requests": {"cpu": cores, "gpu": boards, "gpuResource": resource},
                "work": {"cpuUnits": NEVER_DONE, "gpuUnits": NEVER_DONE if boards else 0.0},
                "utilization": {"cpu": 1.0, "gpu": 1.0},
                "nodeSelector": {HOSTNAME_LABEL: name},
                "tolerations": tolerations(node),
            }))
    return jobs


def expected_loads(nodes: Iterable[Mapping[str, Any]], jobs: Iterable[Job]) -> dict[str, Load]:
    """The load on each Node once every job runs on the Node it pins: the engine's own ``loads``,
    with each Node's allocatable CPU as its cores (what the runner takes from the profile)."""
    nodes = list(nodes)
    cpus = {n["metadata"]["name"]: cpu_cores(n["status"]["allocatable"]["cpu"]) for n in nodes}
    gpus = {n["metadata"]["name"]: node_gpus(n)[1] for n in nodes}
    engine = Engine(list(jobs))
    for job in engine.due(0.0):
        node = job.node_selector[HOSTNAME_LABEL]
        engine.bind(job.job_id, node, 0.0, gpus.get(node, 0))
    return engine.loads(cpus, gpus)


def _pct(values: Iterable[float]) -> str:
    return "[" + ", ".join(f"{v:.0%}" for v in values) + "]"


def lacking_load(want: Mapping[str, Load], truth: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    """Node -> what the emulator's truth (``/debug/emulate``) shows instead, for every Node whose CPU
    utilisation (``load.cpuUtil``) or any GPU's utilisation (``gpus[].util``) is not ``want``'s."""
    out: dict[str, str] = {}
    for node, w in sorted(want.items()):
        t = truth.get(node)
        if t is None:
            out[node] = "not in the emulator's truth"
            continue
        cpu = float((t.get("load") or {}).get("cpuUtil") or 0.0)
        gpus = [float(g.get("util") or 0.0) for g in sorted(t.get("gpus") or [], key=lambda g: int(g["index"]))]
        want_gpus = list(w.gpu_util) + [0.0] * max(0, len(gpus) - len(w.gpu_util))
        gpus += [0.0] * max(0, len(want_gpus) - len(gpus))
        if abs(cpu - w.cpu_util) > UTIL_TOLERANCE or any(abs(a - b) > UTIL_TOLERANCE for a, b in zip(gpus, want_gpus, strict=True)):
            have = f"CPU {cpu:.1%}" + (f", GPUs {_pct(gpus)}" if gpus else "")
            wanted = f"CPU {w.cpu_util:.1%}" + (f", GPUs {_pct(want_gpus)}" if want_gpus else "")
            out[node] = f"{have} (want {wanted})"
    return out


def pod_states(pods: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """Node the job pins -> its Pod's state in a few words (phase, Node, why unschedulable), so a
    missing load says whether the Pod is missing, pending or bound."""
    out: dict[str, str] = {}
    for pod in pods:
        meta, spec, status = pod.get("metadata") or {}, pod.get("spec") or {}, pod.get("status") or {}
        node = (spec.get("nodeSelector") or {}).get(HOSTNAME_LABEL, "")
        if not node:
            continue
        state = f"pod {meta.get('namespace', '')}/{meta.get('name', '')} {status.get('phase') or 'without phase'}"
        if spec.get("nodeName"):
            state += f" on {spec['nodeName']}"
        else:
            why = [c.get("message") or c.get("reason") or "" for c in status.get("conditions") or []
                   if c.get("type") == "PodScheduled" and c.get("status") == "False"]
            state += ", not bound" + (f": {why[0]}" if why and why[0] else "")
        out[node] = state
    return out


def describe_lacking(lacking: Mapping[str, str], pods: Mapping[str, str]) -> list[str]:
    """One line per Node without its load: what truth shows and where its Pod is."""
    return [f"{node}: {seen}; {pods.get(node) or f'no pod {pod_name(job_id(node))} (see the workload log)'}"
            for node, seen in lacking.items()]


def load_summary(want: Mapping[str, Load]) -> str:
    """``CPU 75.0%-99.5%, GPUs 100% on 24 boards of 3 Nodes`` for the progress line."""
    cpus = [w.cpu_util for w in want.values()]
    boards = [u for w in want.values() for u in w.gpu_util]
    cpu = f"CPU {min(cpus):.1%}-{max(cpus):.1%}" if cpus and min(cpus) != max(cpus) else f"CPU {cpus[0] if cpus else 0:.1%}"
    if not boards:
        return cpu + ", no GPUs"
    gpu_nodes = sum(1 for w in want.values() if w.gpu_util)
    lo, hi = min(boards), max(boards)
    level = f"{lo:.0%}" if lo == hi else f"{lo:.0%}-{hi:.0%}"
    return f"{cpu}, GPUs {level} on {len(boards)} boards of {gpu_nodes} Nodes"
