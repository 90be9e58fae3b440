"""The workload shell: trace jobs as real Pods, progress from the emulator, completion = deletion.

Each tick (``tick_s`` of wall time, ``time_scale`` trace seconds per wall second):
1. jobs whose submit offset has come become Pods (``pods.pod_manifest``; at most
   ``max_submit_per_tick``), created through the API server;
2. while a Pod waits for a node, the workload's Pods are listed (label
   ``app.kubernetes.io/part-of=joulie-sim-workload``, decoded from the JSON); a Pod the scheduler bound
   starts its job on that node in the engine;
3. the emulator's truth (gRPC ``ListNodes``) gives each node's effective CPU frequency, GPU caps,
   clock locks and utilisation, hence the speed factors (``engine`` docstring has the formula);
4. the engine advances the jobs; a finished job's Pod is deleted (grace 0);
5. each emulated node's load follows its jobs (gRPC ``SetNodeLoad``, when it changed or when the
   emulator reports another load, as after a simulator restart); a board running a job with serving
   phases carries them (``NodeLoad.gpu_phases``, as the engine's ``Load.gpu_phases`` in the benchmark),
   so its power follows the phases rather than their mean draw; and each busy board names the job's Pod
   (``NodeLoad.gpu_jobs``: the emulated kubelet's pod-resources API lists it, the board's activity follows it);
   and every Pod running there names its containers and the cores each keeps busy (``NodeLoad.cpu_jobs``: a
   job's request x utilisation; a Pod that is not the workload's, listed every ``OTHERS_EVERY_S``, at 0;
   a LIST that fails keeps the last list, logged once, and the tick goes on), which the emulated
   kubelet's cAdvisor counts as CPU time (``emulation.cputime``, ``/metrics/cadvisor``).
6. each node's meters read in step 3 (its host, boards and CPU packages) are split between the Pods whose load it ran since the previous
   reading (``podtruth``: the per-Pod energy truth, which the runner serves on its debug address as
   ``/debug/pod-truth`` for the checks and the benchmark only).

A tick that cannot reach the emulator or the API server is retried with backoff (1, 1, 2, 3, 5, 8,
13, 21 s, then every 21 s; the next tick advances the jobs over the time in between), with one log
line when the outage starts and one when it ends; a simulator restart or an API server outage
loses no job and no Pod. Anything else (a bug) still raises.

Metrics (prometheus-client, own registry): ``joulie_sim_job_submitted_total{class}``,
``joulie_sim_job_completed_total{class,node}``, ``joulie_sim_job_completion_seconds`` (bind to
completion, trace seconds), ``joulie_sim_jobs_running``, ``joulie_sim_jobs_pending``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cache
from typing import Any

import grpc
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from joulie.sim.v1 import emulator_pb2 as _pb2
from joulie.sim.v1 import emulator_pb2_grpc as _pb2_grpc
from joulie_api.backoff import DEFAULT_DELAYS_S
from joulie_api.kube import response_json
from joulie_api.outage import short_error, unanswered
from joulie_hwprofiles.schema import Profile, ProfileError, builtin_profile
from joulie_simulator.physics.gpu import Phase
from joulie_simulator.physics.model import CpuJob, Load, initial_state
from joulie_simulator.workload.engine import Engine, NodeSpeed, speed_from_truth
from joulie_simulator.workload.podtruth import Holder, Meters, NodeShape, PodTruth
from joulie_workload.pods import ANNOTATION_JOB_ID, LABEL_PART_OF, PART_OF, pod_manifest, pod_name
from joulie_workload.trace import Job

pb: Any = _pb2  # generated without type stubs in this build
pb_grpc: Any = _pb2_grpc

OTHERS_EVERY_S = 10.0
"""How often the Pods that are not the workload's are listed (wall seconds): a Pod started since shows in
the emulated kubelet's CPU time up to this much later."""
BUCKETS = (1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200, 14400, 43200, 86400)


class JobMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        self.submitted = Counter("joulie_sim_job_submitted", "Jobs submitted as Pods.", ["class"], registry=self.registry)
        self.completed = Counter("joulie_sim_job_completed", "Jobs completed (Pod deleted).", ["class", "node"], registry=self.registry)
        self.completion = Histogram("joulie_sim_job_completion_seconds", "Bind to completion, trace seconds.",
                                    buckets=BUCKETS, registry=self.registry)
        self.running = Gauge("joulie_sim_jobs_running", "Jobs running on a node.", registry=self.registry)
        self.pending = Gauge("joulie_sim_jobs_pending", "Jobs submitted, not yet bound.", registry=self.registry)


@cache
def _profile(name: str) -> Profile | None:
    try:
        return builtin_profile(name)
    except (ProfileError, FileNotFoundError, KeyError, ValueError):
        return None


@cache
def _governor(name: str) -> tuple[float, float]:
    """(base, per-util) MHz of the governor's frequency target on a fresh node of this profile."""
    p = _profile(name)
    if p is None:
        return 0.0, 0.0
    socks = initial_state(p, "x").sockets
    n = max(len(socks), 1)
    return sum(s.freq_base_khz for s in socks) / n / 1000, sum(s.freq_per_util_khz for s in socks) / n / 1000


def speed_of(truth: Any) -> NodeSpeed:
    """Speed factors of one node from its gRPC NodeTruth."""
    p = _profile(truth.profile)
    if p is None:
        return NodeSpeed()
    base, per_util = _governor(truth.profile)
    uncapped = base + per_util * truth.load.cpu_util
    # A board whose clocks are locked runs slower under the lock, as speed_from_state has it.
    locks = [g.lock_max_mhz if g.HasField("lock_max_mhz") else None for g in truth.gpus]
    return speed_from_truth(p, truth.cpu_freq_mhz, uncapped, [g.cap_w for g in truth.gpus], [g.util for g in truth.gpus], locks)


def load_message(load: Load) -> Any:
    """The gRPC NodeLoad of ``load``; boards' phases only where the load has some (an unphased node sends none),
    and the job (Pod) holding each busy board."""
    jobs = [pb.GpuJob(index=j.index, job_id=j.job_id, compute_share=j.compute_share, namespace=j.namespace, pod=j.pod,
                      container=j.container) for j in load.gpu_jobs]
    cpu_jobs = [pb.CpuJob(namespace=j.namespace, pod=j.pod, container=j.container, busy_cores=j.busy_cores)
                for j in load.cpu_jobs]
    return pb.NodeLoad(cpu_util=load.cpu_util, gpu_util=list(load.gpu_util), gpu_phases=_phases_message(load.gpu_phases),
                       gpu_jobs=jobs, cpu_jobs=cpu_jobs)


def _phases_message(phases: tuple[tuple[Phase, ...], ...]) -> list[Any]:
    return [
        pb.GpuPhases(phases=[pb.GpuPhase(share=p.share, compute_share=p.compute_share, draw=p.draw) for p in b])
        for b in phases
    ]


@dataclass
class Record:
    """What happened to each job, for tests and the summary line."""

    created: dict[str, str] = field(default_factory=dict)
    """job id -> pod name"""
    bound: dict[str, str] = field(default_factory=dict)
    """job id -> node"""
    deleted: set[str] = field(default_factory=set)
    cpu_speeds: dict[str, list[float]] = field(default_factory=dict)
    """node -> the CPU speed factor at every tick a job ran there"""
    errors: list[str] = field(default_factory=list)


class WorkloadRunner:
    def __init__(
        self,
        api: k8s.ApiClient,
        emulator: str,
        jobs: Sequence[Job],
        cluster: str,
        *,
        tick_s: float = 1.0,
        time_scale: float = 1.0,
        max_submit_per_tick: int = 20,
        class_constraints: bool = True,
        placement: str = "hard",
        metrics: JobMetrics | None = None,
        clock: Callable[[], float] = time.monotonic,
        log: Callable[[str], None] = print,
    ) -> None:
        self.core = k8s.CoreV1Api(api)
        self.channel = grpc.insecure_channel(emulator)
        self.stub = pb_grpc.EmulatorServiceStub(self.channel)
        self.engine = Engine(list(jobs))
        self.cluster = cluster
        self.class_constraints = class_constraints
        self.placement = placement
        self.tick_s, self.time_scale = tick_s, time_scale
        self.max_submit = max_submit_per_tick
        self.metrics = metrics or JobMetrics()
        self.clock, self.log = clock, log
        self.record = Record()
        self.last_load: dict[str, Load] = {}
        self.by_pod: dict[tuple[str, str], str] = {}
        self._t0: float | None = None
        self._last_now = 0.0
        self._failing = 0
        self._retry_at = 0.0
        self.truth = PodTruth()
        self.truth_lock = threading.Lock()
        self._holders: dict[str, list[Holder]] = {}
        """The Pods whose load each node runs since the last SetNodeLoad (the truth's holders)."""
        self._others: dict[str, tuple[CpuJob, ...]] = {}
        """Each node's running Pods that are not the workload's (their containers, idle), as last listed."""
        self._others_at: float | None = None
        self._others_failed = ""
        """Why the last LIST of them failed ("" when it answered): logged once per outage."""

    def now_s(self) -> float:
        if self._t0 is None:
            self._t0 = self.clock()
        return (self.clock() - self._t0) * self.time_scale

    def _submit(self, now: float) -> None:
        for job in self.engine.due(now, self.max_submit):
            body = pod_manifest(job, self.cluster, self.class_constraints, self.placement)
            name = body["metadata"]["name"]
            pod = k8s.V1Pod.from_dict(body)
            assert pod is not None  # from_dict of a dict is never None
            try:
                self.core.create_namespaced_pod(job.namespace, pod)
            except ApiException as e:
                if e.status != 409:
                    self.record.errors.append(f"job {job.job_id}: creating pod {job.namespace}/{name}: HTTP {e.status} {e.reason}")
                    self.log(self.record.errors[-1])
                    continue
            self.record.created[job.job_id] = name
            self.by_pod[(job.namespace, name)] = job.job_id
            self.metrics.submitted.labels(job.workload_class).inc()

    def _bindings(self, now: float, gpus: dict[str, int]) -> None:
        # No pod waits for a node: nothing to look for. The LIST of every job's pod each tick was
        # 1.3 MB/s of kube-apiserver's answers at 1000 Nodes, long after every pod had been bound.
        if not self.engine.awaiting_binding():
            return
        for b in self._bound_pods():
            job_id = b.job_id or self.by_pod.get((b.namespace, b.name), "")
            run = self.engine.runs.get(job_id)
            if run is None or not run.submitted or run.start_s is not None:
                continue
            self.engine.bind(job_id, b.node, now, gpus.get(b.node, 0))
            self.record.bound[job_id] = b.node

    def _bound_pods(self) -> list[PodBinding]:
        """The workload's bound Pods, decoded from the LIST's JSON (the client's typed models took about
        a CPU second for 1000 Pods, each tick while any Pod waited for a node)."""
        resp: Any = self.core.list_pod_for_all_namespaces(label_selector=f"{LABEL_PART_OF}={PART_OF}",
                                                          _preload_content=False)
        items = response_json(resp).get("items") or []
        return [b for b in (pod_binding(i) for i in items if isinstance(i, dict)) if b is not None]

    def tick(self) -> None:
        now = self.now_s()
        dt = max(0.0, now - self._last_now)
        nodes = self.stub.ListNodes(pb.ListNodesRequest(), timeout=10).nodes
        truths = {t.node: t for t in nodes}
        self._read_truth(truths)
        speeds = {name: speed_of(t) for name, t in truths.items()}
        for node in {r.node for r in self.engine.running()}:
            sp = speeds.get(node)
            if sp is not None:
                self.record.cpu_speeds.setdefault(node, []).append(sp.cpu)
        for c in self.engine.step(self._last_now, dt, speeds):
            run = self.engine.runs[c.job_id]
            name = self.record.created.get(c.job_id, "")
            try:
                self.core.delete_namespaced_pod(name, run.job.namespace, grace_period_seconds=0)
            except ApiException as e:
                if e.status != 404:
                    self.record.errors.append(f"job {c.job_id}: deleting pod {run.job.namespace}/{name}: HTTP {e.status} {e.reason}")
                    self.log(self.record.errors[-1])
            self.record.deleted.add(c.job_id)
            self.metrics.completed.labels(c.workload_class, c.node).inc()
            self.metrics.completion.observe(c.duration_s)
        self._last_now = now
        self._submit(now)
        gpus = {name: len(t.gpus) for name, t in truths.items()}
        self._bindings(now, gpus)
        cpus: dict[str, float] = {}
        for name, t in truths.items():
            p = _profile(t.profile)
            cpus[name] = (p.node.cpu - p.node.reserved_cpu_m / 1000) if p else 1.0
        self._list_others()
        for name, load in self.engine.loads(cpus, gpus).items():
            load = replace(load, cpu_jobs=load.cpu_jobs + self._others.get(name, ()))
            if self.last_load.get(name) == load and _same_load(truths[name].load, load):
                continue
            self.stub.SetNodeLoad(pb.SetNodeLoadRequest(node=name, load=load_message(load)), timeout=10)
            self.last_load[name] = load
        self._holders = holders(self.engine.running())
        running = self.engine.running()
        self.metrics.running.set(len(running))
        self.metrics.pending.set(sum(1 for r in self.engine.runs.values() if r.submitted and r.start_s is None))

    def _read_truth(self, truths: Mapping[str, Any]) -> None:
        """Step 6: each node's meters, split between the Pods whose load it ran since the last reading."""
        with self.truth_lock:
            for name, t in truths.items():
                p = _profile(t.profile)
                if p is None:
                    continue
                # The CPU as the power model composes it (each socket's package), on every node: what RAPL's
                # package zones count where there are some, and what hw.energy{hw.type=cpu} exports everywhere.
                meters = Meters(
                    t.at.seconds + t.at.nanos / 1e9,
                    t.host_energy_j,
                    tuple(g.energy_mj / 1000 for g in t.gpus),
                    sum(pkg.energy_j for pkg in t.packages),
                )
                shape = NodeShape(float(p.node.cpu), len(t.gpus), p.physics.cpu.idle_pkg_w * len(t.packages))
                self.truth.read(name, meters, shape, self._holders.get(name, ()))

    def _list_others(self) -> None:
        """Every ``OTHERS_EVERY_S``: the running Pods that are not the workload's (the smoke's own, a
        DaemonSet's), so the emulated kubelet's cAdvisor counts them too, idle: a node's CPU time then names
        every Pod on it, as a real kubelet's does. One LIST of those Pods only (a label selector), not of the
        workload's thousands."""
        now = self.clock()
        if self._others_at is not None and now - self._others_at < OTHERS_EVERY_S:
            return
        self._others_at = now  # a failed LIST too waits its turn: no LIST per tick through an outage
        try:
            pods = self.core.list_pod_for_all_namespaces(label_selector=f"{LABEL_PART_OF}!={PART_OF}",
                                                         field_selector="status.phase=Running")
        except Exception as e:
            # An API blip must not cost the tick its SetNodeLoad: the last list stands until one answers.
            if not isinstance(e, ApiException) and not unanswered(e):
                raise
            if not self._others_failed:
                self.log(f"workload: listing the Pods that are not the workload's failed ({short_error(e)}); "
                         f"the last list kept, tried again every {OTHERS_EVERY_S:g} s")
            self._others_failed = short_error(e)
            return
        if self._others_failed:
            self.log("workload: listing the Pods that are not the workload's again")
            self._others_failed = ""
        self._others = idle_pods(pods.items)

    def truth_document(self, at_s: float | None = None) -> dict[str, Any]:
        """The per-Pod truth so far, or as it stood at ``at_s`` (Unix seconds; ``/debug/pod-truth?at=``).
        Raises ``TruthFormatError`` for an instant it cannot answer for."""
        with self.truth_lock:
            return (self.truth if at_s is None else self.truth.at(at_s)).document()

    def run(self, stop: threading.Event | None = None, timeout_s: float = 0.0) -> bool:
        """Tick until every job is done (True), ``stop`` is set or ``timeout_s`` wall seconds pass (False)."""
        stop = stop or threading.Event()
        started = time.monotonic()
        self.now_s()
        while not self.engine.finished:
            if stop.is_set() or (timeout_s and time.monotonic() - started > timeout_s):
                return False
            t0 = time.monotonic()
            if self.clock() >= self._retry_at:
                try:
                    self.tick()
                except Exception as e:
                    # The kubernetes client raises urllib3's MaxRetryError when nothing listens
                    # (issue 23: it used to end the run on the first tick of an outage).
                    if not isinstance(e, (grpc.RpcError, ApiException)) and not unanswered(e):
                        raise
                    self._outage(e, self.clock())
                else:
                    if self._failing:
                        self.log(f"workload: reaching the emulator and the API server again after {self._failing} "
                                 "failed ticks")
                        self._failing = 0
                        self._retry_at = 0.0
            stop.wait(max(0.0, self.tick_s - (time.monotonic() - t0)))
        return True

    def _outage(self, e: Exception, now: float) -> None:
        """Count a failed tick and schedule the next try; only the first of an outage is logged."""
        if not self._failing:
            what = f"{type(e).__name__}: {e.code().name}: {e.details()}" if isinstance(e, grpc.Call) else short_error(e)
            self.log(f"workload: tick failed ({what}); retrying quietly with backoff")
        self._retry_at = now + DEFAULT_DELAYS_S[min(self._failing, len(DEFAULT_DELAYS_S) - 1)]
        self._failing += 1

    def close(self) -> None:
        self.channel.close()


@dataclass(frozen=True)
class PodBinding:
    """A workload Pod the scheduler bound: where, and which job (its annotation; "" without one)."""

    namespace: str
    name: str
    node: str
    job_id: str


def pod_binding(obj: Mapping[str, Any]) -> PodBinding | None:
    """A Pod (its JSON, as the API server sends it) as ``_bindings`` reads it; None while it is not bound."""
    meta, spec = obj.get("metadata") or {}, obj.get("spec") or {}
    node, name = spec.get("nodeName"), meta.get("name")
    if not isinstance(node, str) or not node or not isinstance(name, str):
        return None
    job_id = (meta.get("annotations") or {}).get(ANNOTATION_JOB_ID)
    return PodBinding(str(meta.get("namespace") or ""), name, node, job_id if isinstance(job_id, str) else "")


def holders(running: Any) -> dict[str, list[Holder]]:
    """The truth's holders by node: each running job's Pod, its requested and busy cores and its boards."""
    out: dict[str, list[Holder]] = {}
    for r in running:
        j = r.job
        out.setdefault(r.node, []).append(
            Holder(f"{j.namespace}/{pod_name(j.job_id)}", j.requests.cpu, j.requests.cpu * j.utilization.cpu,
                   tuple(r.gpu_indices)))
    return out


def idle_pods(pods: Any) -> dict[str, tuple[CpuJob, ...]]:
    """By node, each container of the bound ``pods`` (V1Pod objects) at 0 busy cores: the emulator runs
    none of their load."""
    out: dict[str, list[CpuJob]] = {}
    for pod in pods:
        meta, spec = pod.metadata, pod.spec
        if meta is None or spec is None or not spec.node_name or not meta.name:
            continue
        for c in spec.containers or []:
            out.setdefault(spec.node_name, []).append(CpuJob(meta.namespace or "default", meta.name, c.name, 0.0))
    return {n: tuple(sorted(js, key=lambda j: (j.namespace, j.pod, j.container))) for n, js in out.items()}


def _same_load(have: Any, want: Load) -> bool:
    """Whether the emulator's reported load (gRPC NodeLoad) is ``want``; a shorter GPU list leaves boards idle. Its
    containers too: a simulator started again has none until the runner sends them."""
    h, w = list(have.gpu_util), list(want.gpu_util)
    n = max(len(h), len(w))
    h, w = h + [0.0] * (n - len(h)), w + [0.0] * (n - len(w))
    jobs = sorted((j.namespace, j.pod, j.container, j.busy_cores) for j in have.cpu_jobs)
    same_jobs = jobs == sorted((j.namespace, j.pod, j.container, j.busy_cores) for j in want.cpu_jobs)
    return (abs(have.cpu_util - want.cpu_util) < 1e-9 and all(abs(a - b) < 1e-9 for a, b in zip(h, w, strict=True))
            and same_jobs)
