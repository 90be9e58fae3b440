"""The job engine: who runs where, how fast, when it is done. Pure: no I/O, time is an argument.

Progress (one formula for the Kubernetes shell and the benchmark)::

    cpu_rate = cores * throughput(r_cpu, c_cpu)        core-seconds of work per second
    gpu_rate = gpus  * throughput(r_gpu, c_gpu)        GPU-seconds of work per second
    throughput(r, c) = 1 / (c / r + 1 - c)              physics.speed: the share c of the work's time
                                                        follows the clock, the rest waits on memory
    r_cpu    = f_eff / f_uncapped                       the busy cores' clock under the node's limit
                                                        over their clock without it (physics.cpu;
                                                        1 when the node has no cpufreq)
    r_gpu    = the SM clock ratio the board sustains    physics.gpu.clock_ratio_for_limit, mean over
               under its enforced limit at its util,    the job's boards
               and at most its clock lock               (lock_max_mhz / sm_clock_max_mhz)
    done     when cpuUnits and gpuUnits are both used up (the completion time is interpolated
             inside the tick, so results do not depend on the tick length to first order)

``c_cpu``, ``c_gpu`` are the job's ``sensitivity`` (its compute-bound share, drawn from its workload
kind: ``joulie_workload.kinds``). So an uncapped node runs a job at full speed; a RAPL limit that
pulls the busy cores to 60 % of their clock runs compute-bound work (c = 1) at 60 % speed and
memory-bound work (c = 0.35) at 81 %; a GPU limit that leaves 80 % of the SM clock costs
training (c about 0.5) 11 % and decode (c about 0.25) 6 %. Slowdown of a job = (finish - submit) /
ideal runtime.

A job with serving phases (the trace's ``phases``, ``Job.gpu_phase_mix``) runs its GPU work as
that mix: ``gpu_rate = gpus * OperatingPoint.throughput`` of its phases on its boards under their
limits and locks (``physics.gpu.board_operating_point``: each phase finds its own clock, its time
stretches by ``c / r + 1 - c``; mean over the job's boards), so a cap slows the high-draw prefill
share and leaves a decode share drawing less than the cap alone. A job without phases runs
exactly as above.

A node's load follows its jobs: ``cpu_util = min(1, sum(cores * u_cpu) / node cores)`` and each
board carries the GPU utilisation of the job holding it (lowest free board indices first), and,
for a job with phases, the phases (``Load.gpu_phases``); ``Load.gpu_jobs`` names the job, its Pod
(``joulie_workload.pods``) and its GPU compute share on each board it holds, for the emulated kubelet's
pod-resources API and the boards' activity signals.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

from joulie_hwprofiles.schema import GpuPhysics, Profile
from joulie_simulator.physics.gpu import Phase, board_operating_point, clock_ratio_for_limit
from joulie_simulator.physics.gpusignals import mean_compute_share
from joulie_simulator.physics.model import CpuJob, GpuJob, Load, NodeState
from joulie_simulator.physics.speed import throughput
from joulie_workload.pods import POD_CONTAINER, pod_name
from joulie_workload.trace import Job

EPS = 1e-9


@dataclass(frozen=True)
class NodeSpeed:
    """Per-node clock ratios in (0, 1]: the CPU's busy cores and, per board index, the GPU's SM clock.

    ``board``, ``gpu_limits_w`` and ``gpu_locks`` (per board: enforced limit, lock ratio, 1 = none)
    let a job with serving phases find its own operating point on its boards."""

    cpu: float = 1.0
    gpus: tuple[float, ...] = ()
    board: GpuPhysics | None = None
    gpu_limits_w: tuple[float, ...] = ()
    gpu_locks: tuple[float, ...] = ()

    def gpu(self, indices: Iterable[int]) -> float:
        vals = [self.gpus[i] if i < len(self.gpus) else 1.0 for i in indices]
        return sum(vals) / len(vals) if vals else 1.0

    def phased_gpu(self, indices: Iterable[int], phases: tuple[Phase, ...]) -> float:
        """Throughput of work running as ``phases`` on the boards ``indices`` (mean over them; 1 unknown)."""
        g = self.board
        vals = [
            board_operating_point(g, phases, self.gpu_limits_w[i], self.gpu_locks[i] if i < len(self.gpu_locks) else 1.0).throughput
            for i in indices
            if g is not None and i < len(self.gpu_limits_w)
        ]
        return sum(vals) / len(vals) if vals else 1.0


FULL_SPEED = NodeSpeed()


def cpu_factor(eff_khz: float, uncapped_khz: float) -> float:
    if uncapped_khz <= 0 or eff_khz <= 0:
        return 1.0
    return max(0.0, min(1.0, eff_khz / uncapped_khz))


def gpu_factor(g: GpuPhysics, util: float, enforced_cap_w: float) -> float:
    """The SM clock ratio a board running ``util`` sustains under ``enforced_cap_w`` (1: no slowdown)."""
    if util <= 0:
        return 1.0
    return clock_ratio_for_limit(g, util, enforced_cap_w)


def lock_ratio(profile: Profile, lock_max_mhz: float | None) -> float:
    """A clock lock as a share of the board's maximum SM clock (1: not locked)."""
    if lock_max_mhz is None or profile.gpus is None:
        return 1.0
    return lock_max_mhz / profile.gpus.sm_clock_max_mhz


def _gpu_speed(
    profile: Profile, cpu: float, caps_w: list[float], utils: list[float], locks: list[float | None]
) -> NodeSpeed:
    """The node's speed from its CPU ratio and, per board, enforced limit, util and clock lock."""
    g = profile.physics.gpu
    if g is None:
        return NodeSpeed(cpu, ())
    ratios = [lock_ratio(profile, m) for m in locks] + [1.0] * (len(caps_w) - len(locks))
    gpus = tuple(
        gpu_factor(g, u, c) if k >= 1.0 else min(gpu_factor(g, u, c), k)
        for c, u, k in zip(caps_w, utils, ratios, strict=False)
    )
    return NodeSpeed(cpu, gpus, g, tuple(caps_w), tuple(ratios))


def speed_from_state(profile: Profile, state: NodeState) -> NodeSpeed:
    """Speed factors from an emulated node's state (the benchmark has the state itself)."""
    cpu = 1.0
    if profile.cpufreq is not None and state.sockets:
        eff = sum(s.eff_khz for s in state.sockets) / len(state.sockets)
        cur = sum(s.cur_khz for s in state.sockets) / len(state.sockets)
        cpu = cpu_factor(eff, cur)
    gs = state.gpus
    return _gpu_speed(profile, cpu, [t.enforced_w for t in gs], [t.util for t in gs], [t.lock_max_mhz for t in gs])


def speed_from_truth(
    profile: Profile,
    eff_mhz: float,
    uncapped_mhz: float,
    gpu_caps_w: Iterable[float],
    gpu_utils: Iterable[float],
    gpu_locks_mhz: Iterable[float | None] = (),
) -> NodeSpeed:
    """Speed factors from the emulator's truth as the gRPC API lists it (the Kubernetes shell);
    ``gpu_locks_mhz`` per board, where the truth carries the clock locks."""
    cpu = cpu_factor(eff_mhz, uncapped_mhz) if profile.cpufreq is not None else 1.0
    caps, utils = list(gpu_caps_w), list(gpu_utils)
    n = min(len(caps), len(utils))
    return _gpu_speed(profile, cpu, caps[:n], utils[:n], list(gpu_locks_mhz)[:n])


def job_phases(job: Job) -> tuple[Phase, ...]:
    """The serving phases of a job's GPU work (``Job.gpu_phase_mix``); none for a job without ``phases``."""
    if job.phases is None:
        return ()
    return tuple(Phase(share, c, u) for share, c, u in job.gpu_phase_mix())


@dataclass
class JobRun:
    job: Job
    submitted: bool = False
    node: str = ""
    gpu_indices: tuple[int, ...] = ()
    start_s: float | None = None
    done_s: float | None = None
    cpu_left: float = 0.0
    gpu_left: float = 0.0
    slow_s: float = 0.0
    """Seconds of running time lost to caps so far (for reporting)."""

    @property
    def running(self) -> bool:
        return self.start_s is not None and self.done_s is None

    @property
    def slowdown(self) -> float | None:
        if self.done_s is None:
            return None
        return (self.done_s - self.job.submit_s) / max(self.job.ideal_runtime_s, EPS)


@dataclass(frozen=True)
class Completion:
    job_id: str
    workload_class: str
    node: str
    at_s: float
    duration_s: float
    """Bind to completion."""


@dataclass
class Engine:
    jobs: list[Job]
    runs: dict[str, JobRun] = field(default_factory=dict)
    submitted_total: dict[str, int] = field(default_factory=dict)
    """joulie_sim_job_submitted_total{class}"""
    completed_total: dict[tuple[str, str], int] = field(default_factory=dict)
    """joulie_sim_job_completed_total{class,node}"""
    completion_seconds: list[float] = field(default_factory=list)
    """Observations of joulie_sim_job_completion_seconds (bind to completion)."""

    def __post_init__(self) -> None:
        self.jobs = sorted(self.jobs, key=lambda j: (j.submit_s, j.job_id))
        self.runs = {j.job_id: JobRun(j, cpu_left=j.work.cpu_units, gpu_left=j.work.gpu_units) for j in self.jobs}
        self._next = 0

    def awaiting_binding(self) -> bool:
        """Whether a job was submitted whose pod has not been bound yet."""
        return any(r.submitted and r.start_s is None for r in self.runs.values())

    def due(self, now_s: float, limit: int = 0) -> list[Job]:
        """Jobs whose submit time has come (at most ``limit``, 0 = all), marked submitted."""
        out: list[Job] = []
        while self._next < len(self.jobs) and self.jobs[self._next].submit_s <= now_s + EPS:
            if limit and len(out) >= limit:
                break
            j = self.jobs[self._next]
            self.runs[j.job_id].submitted = True
            self.submitted_total[j.workload_class] = self.submitted_total.get(j.workload_class, 0) + 1
            out.append(j)
            self._next += 1
        return out

    @property
    def next_submit_s(self) -> float | None:
        return self.jobs[self._next].submit_s if self._next < len(self.jobs) else None

    def busy_gpus(self, node: str) -> set[int]:
        return {i for r in self.runs.values() if r.running and r.node == node for i in r.gpu_indices}

    def bind(self, job_id: str, node: str, now_s: float, node_gpus: int) -> JobRun:
        """The job's pod was bound to ``node``: it starts running there (on the lowest free boards)."""
        r = self.runs[job_id]
        if r.start_s is not None:
            return r
        busy = self.busy_gpus(node)
        free = [i for i in range(node_gpus) if i not in busy]
        want = r.job.requests.gpu
        r.gpu_indices = tuple(free[:want]) if len(free) >= want else tuple(range(want))
        r.node, r.start_s = node, now_s
        return r

    def running(self) -> list[JobRun]:
        return [r for r in self.runs.values() if r.running]

    def step(self, now_s: float, dt_s: float, speeds: Mapping[str, NodeSpeed]) -> list[Completion]:
        """Advance every running job from ``now_s`` by ``dt_s`` at its node's speed."""
        done: list[Completion] = []
        for r in self.runs.values():
            if not r.running or r.start_s is None:
                continue
            start = max(now_s, r.start_s)
            span = now_s + dt_s - start
            if span <= 0:
                continue
            sp = speeds.get(r.node, FULL_SPEED)
            j = r.job
            f_cpu = throughput(sp.cpu, j.sensitivity.cpu)
            phases = job_phases(j)
            if phases and sp.board is not None:
                f_gpu = sp.phased_gpu(r.gpu_indices, phases)
            else:
                f_gpu = throughput(sp.gpu(r.gpu_indices), j.sensitivity.gpu)
            cpu_rate = j.requests.cpu * max(f_cpu, EPS)
            gpu_rate = j.requests.gpu * max(f_gpu, EPS) if j.requests.gpu else 0.0
            need = max(r.cpu_left / cpu_rate if r.cpu_left > 0 else 0.0,
                       r.gpu_left / gpu_rate if r.gpu_left > 0 and gpu_rate > 0 else 0.0)
            used = min(span, need)
            r.cpu_left = max(0.0, r.cpu_left - cpu_rate * used)
            r.gpu_left = max(0.0, r.gpu_left - gpu_rate * used)
            slowest = min(f_cpu if j.work.cpu_units > 0 else 1.0, f_gpu if j.work.gpu_units > 0 else 1.0)
            r.slow_s += used * (1.0 - slowest)
            if need <= span + EPS:
                r.cpu_left = r.gpu_left = 0.0
                r.done_s = start + need
                dur = r.done_s - r.start_s
                key = (j.workload_class, r.node)
                self.completed_total[key] = self.completed_total.get(key, 0) + 1
                self.completion_seconds.append(dur)
                done.append(Completion(j.job_id, j.workload_class, r.node, r.done_s, dur))
        return done

    def loads(self, node_cpus: Mapping[str, float], node_gpus: Mapping[str, int]) -> dict[str, Load]:
        """The load every node in ``node_cpus`` carries from its running jobs (idle nodes included)."""
        cpu: dict[str, float] = dict.fromkeys(node_cpus, 0.0)
        gpu: dict[str, list[float]] = {n: [0.0] * node_gpus.get(n, 0) for n in node_cpus}
        # Only nodes running a job with phases carry them, so a trace without phases loads as before.
        phased: dict[str, list[tuple[Phase, ...]]] = {}
        held: dict[str, list[GpuJob]] = {}
        busy: dict[str, list[CpuJob]] = {}
        for r in self.runs.values():
            if not r.running or r.node not in cpu:
                continue
            cpu[r.node] += r.job.requests.cpu * r.job.utilization.cpu
            busy.setdefault(r.node, []).append(CpuJob(r.job.namespace, pod_name(r.job.job_id), POD_CONTAINER,
                                                      r.job.requests.cpu * r.job.utilization.cpu))
            phases = job_phases(r.job)
            share = mean_compute_share(phases) if phases else r.job.sensitivity.gpu
            for i in r.gpu_indices:
                if i < len(gpu[r.node]):
                    gpu[r.node][i] = r.job.utilization.gpu
                    held.setdefault(r.node, []).append(
                        GpuJob(i, r.job.job_id, share, r.job.namespace, pod_name(r.job.job_id), POD_CONTAINER))
                    if phases:
                        phased.setdefault(r.node, [()] * len(gpu[r.node]))[i] = phases
        return {
            n: Load(
                cpu_util=min(1.0, cpu[n] / node_cpus[n]) if node_cpus[n] > 0 else 0.0,
                gpu_util=tuple(gpu[n]),
                gpu_phases=tuple(phased.get(n, ())),
                gpu_jobs=tuple(sorted(held.get(n, ()), key=lambda j: j.index)),
                cpu_jobs=_cpu_jobs(busy.get(n, []), node_cpus[n]),
            )
            for n in node_cpus
        }

    @property
    def finished(self) -> bool:
        return all(r.done_s is not None for r in self.runs.values())


def _cpu_jobs(jobs: list[CpuJob], cores: float) -> tuple[CpuJob, ...]:
    """Each job's busy cores, scaled down together where they ask for more than the node has (the node's
    ``cpu_util`` stops at 1: its cores are shared out, as the kernel's scheduler shares them)."""
    total = sum(j.busy_cores for j in jobs)
    k = min(1.0, cores / total) if total > 0 and cores > 0 else 1.0
    return tuple(sorted((replace(j, busy_cores=j.busy_cores * k) for j in jobs), key=lambda j: (j.namespace, j.pod)))
