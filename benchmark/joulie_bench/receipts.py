"""Energy receipts in the benchmark: each finished job's receipt as the controller would compute it,
against the emulator's truth for that job (docs/energy-receipts.md).

**The receipt** (``ReceiptWatch.observe``, every ``OBSERVE_S`` virtual seconds: a Prometheus rate
window) reads only what a cluster exposes: the energy counters of each node (the host meter, each GPU
board, the CPU packages), which boards each Pod holds (the kubelet's pod-resources API; here the
engine's binding), its CPU request and kind label, when it started and finished, and the limits in
force (what the agent wrote); the idle draws are the controller's model's (``package_idle_w``,
``board_idle_w`` from the NodeHardware maxima). It calls the controller's ``attribute`` and
``counterfactual`` (``joulie_controller.api``).

**The truth** (``ReceiptWatch.truth_tick``, every tick, from the emulator's state and the engine's
jobs): the same allocation conventions for what has no physical owner (the idle of the CPU packages
by requested cores over all cores, the platform by allocation share), and the physics' own split for
what has one: a board's energy belongs to the job whose load it ran that tick (all of it); the
packages' energy above the profile's true idle (``idle_pkg_w``) belongs to the jobs by their busy
cores (``cpu request x cpu utilisation``: package power is linear in the busy share and every busy
core runs at one clock, ``physics.cpu``). So the error a receipt shows is what the controller cannot
see: the jobs' real utilisation behind their requests, its model of the idle draws, and the rate
window's edges.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from joulie_bench.nodes import BenchNode
from joulie_controller.api import (
    Conditions,
    Holding,
    IdleFloor,
    Ledger,
    NodeEnergy,
    Receipt,
    attribute,
    board_idle_w,
    conditions_for_kind,
    counterfactual,
    package_busy,
    package_idle_w,
)
from joulie_hwprofiles.schema import Profile
from joulie_simulator.api import Emulator, Engine, JobRun
from joulie_simulator.api import NodeState as _NodeState
from joulie_workload.trace import Job

OBSERVE_S = 15.0
"""The receipt's interval: the controller's rate window over the energy counters."""


@dataclass(frozen=True)
class _Counters:
    host_j: float
    gpu_j: tuple[float, ...]
    cpu_j: float


def _counters(st: _NodeState) -> _Counters:
    return _Counters(st.host_energy_j, tuple(g.energy_j for g in st.gpus), sum(s.energy_j for s in st.sockets))


def _delta(now: _Counters, before: _Counters | None) -> _Counters:
    if before is None:
        return now
    return _Counters(
        now.host_j - before.host_j,
        tuple(a - b for a, b in zip(now.gpu_j, before.gpu_j, strict=True)),
        now.cpu_j - before.cpu_j,
    )


@dataclass(frozen=True)
class ReceiptRow:
    """One finished job: its receipt and its truth, J; the time the caps added, receipt and truth."""

    job_id: str
    namespace: str
    kind: str
    node: str
    gpus: int
    run_s: float
    receipt: Receipt
    truth: Receipt
    true_added_s: float
    by_request_j: float
    """The receipt's energy with the CPU busy part split by requests alone."""

    @property
    def error(self) -> float:
        """Receipt energy over truth, minus 1."""
        return self.receipt.total_j / self.truth.total_j - 1.0 if self.truth.total_j > 0 else 0.0

    @property
    def by_request_error(self) -> float:
        return self.by_request_j / self.truth.total_j - 1.0 if self.truth.total_j > 0 else 0.0


@dataclass
class ReceiptWatch:
    nodes: Sequence[BenchNode]
    """The nodes as the controller knows them (NodeHardware maxima, allocatable cores)."""
    true_profile: Mapping[str, Profile]
    """The emulator's profiles (the truth's idle draws)."""
    jobs: Mapping[str, Job]
    """The jobs as their Pods show them (requests, kind label)."""
    observe_s: float = OBSERVE_S
    ledger: Ledger = field(default_factory=Ledger)
    by_request: Ledger = field(default_factory=Ledger)
    """The same receipts with the CPU busy part split by requests alone (a node without cgroup CPU time)."""
    truth: dict[str, Receipt] = field(default_factory=dict)
    truth_unallocated_j: float = 0.0
    floors: dict[str, IdleFloor] = field(default_factory=dict)
    """Each node's measured idle draws (the model's until a node is seen without Pods)."""
    cpu_time_s: dict[str, float] = field(default_factory=dict)
    """Each job's CPU time, core-seconds: the load the emulator ran for it (its cgroup's usage counter)."""
    _cpu_time_seen: dict[str, float] = field(default_factory=dict)
    _tick_counters: dict[str, _Counters] = field(default_factory=dict)
    _seen: dict[str, _Counters] = field(default_factory=dict)
    _start_s: float = 0.0

    def start(self, emu: Emulator, idle_w: Mapping[str, Mapping[str, float]]) -> None:
        """The counters before the first tick (both ledgers count from here), and each node's idle floors
        as measured empty before the trace (``idle_w``: by node, by device kind; a controller that ran
        before the jobs came has seen its nodes empty, which ``IdleFloor.learn`` records)."""
        for n in self.nodes:
            self._tick_counters[n.name] = self._seen[n.name] = _counters(emu.node(n.name).state)
            idle = idle_w.get(n.name, {})
            gpu = idle.get("gpu", 0.0) / n.gpus if n.gpus else None
            self.floors[n.name] = IdleFloor(idle.get("cpu"), gpu)

    def truth_tick(self, t_s: float, dt_s: float, emu: Emulator, ran: Sequence[JobRun]) -> None:
        """The tick ``[t_s, t_s + dt_s]``, after the engine's step; ``ran``: the jobs that were running
        when it began (the ones whose load the emulator ran: a job done inside the tick ran to its end)."""
        for n in self.nodes:
            st = emu.node(n.name).state
            now = _counters(st)
            d = _delta(now, self._tick_counters.get(n.name))
            self._tick_counters[n.name] = now
            runs = [r for r in ran if r.node == n.name]
            idle_j = min(max(d.cpu_j, 0.0), self.true_profile[n.name].physics.cpu.idle_pkg_w * len(st.sockets) * dt_s)
            busy_cores = {r.job.job_id: r.job.requests.cpu * r.job.utilization.cpu for r in runs}
            for jid, cores in busy_cores.items():
                self.cpu_time_s[jid] = self.cpu_time_s.get(jid, 0.0) + cores * dt_s
            total_busy = sum(busy_cores.values())
            shares = _allocation_shares(n, {r.job.job_id: (r.job.requests.cpu, len(r.gpu_indices)) for r in runs})
            rest_j = d.host_j - sum(d.gpu_j) - d.cpu_j
            billed = 0.0
            for r in runs:
                jid = r.job.job_id
                # The allocation conventions bill the time the Pod held its allocation (start to finish).
                held = _held_s(r, t_s, t_s + dt_s) / dt_s
                part = Receipt(
                    gpu_j=sum(d.gpu_j[i] for i in r.gpu_indices if i < len(d.gpu_j)),
                    cpu_busy_j=(d.cpu_j - idle_j) * busy_cores[jid] / total_busy if total_busy > 0 else 0.0,
                    cpu_idle_j=held * idle_j * min(1.0, r.job.requests.cpu / n.cpus) if n.cpus > 0 else 0.0,
                    platform_j=held * rest_j * shares[jid],
                    held_s=held * dt_s,
                )
                billed += part.total_j
                self.truth[jid] = self.truth.get(jid, Receipt()) + part
            self.truth_unallocated_j += d.host_j - billed

    def due(self, t_s: float) -> bool:
        return t_s - self._start_s >= self.observe_s - 1e-9

    def observe(self, t_s: float, emu: Emulator, engine: Engine) -> None:
        """Close the interval ``[start, t_s]``: each node's counter deltas, split by :func:`attribute`."""
        t0 = self._start_s
        for n in self.nodes:
            st = emu.node(n.name).state
            now = _counters(st)
            d = _delta(now, self._seen.get(n.name))
            self._seen[n.name] = now
            holdings, kinds = [], []
            for r in engine.runs.values():
                if r.node != n.name or r.start_s is None:
                    continue
                held = _held_s(r, t0, t_s)
                if held <= 0:
                    continue
                job = self.jobs[r.job.job_id]
                used = self.cpu_time_s.get(r.job.job_id, 0.0) - self._cpu_time_seen.get(r.job.job_id, 0.0)
                self._cpu_time_seen[r.job.job_id] = self.cpu_time_s.get(r.job.job_id, 0.0)
                holdings.append(Holding(r.job.job_id, held, r.gpu_indices, job.requests.cpu, used))
                kinds.append((job.kind, job.requests.cpu / n.cpus if n.cpus > 0 else 0.0))
            hw = n.profile
            energy = NodeEnergy(
                t_s - t0,
                d.host_j,
                dict(enumerate(d.gpu_j)),
                d.cpu_j,
                n.cpus,
                package_idle_w(n.cpu_max_w_per_socket) * hw.cpu.sockets,
                board_idle_w(hw.gpus.max_w) if hw.gpus is not None else 0.0,
            )
            self.floors[n.name] = floor = self.floors.get(n.name, IdleFloor()).learn(energy, holdings)
            energy = floor.apply(energy)
            split = attribute(energy, holdings)
            self.by_request.add(n.name, energy, attribute(energy, [replace(h, cpu_used_core_s=None) for h in holdings]))
            busy = package_busy(kinds)
            self.ledger.add(
                n.name,
                energy,
                split,
                {h.pod: counterfactual(split.pods[h.pod], self._conditions(n, st, h, busy)) for h in holdings},
            )
        self._start_s = t_s

    def _conditions(self, n: BenchNode, st: _NodeState, h: Holding, busy: float) -> Conditions:
        job = self.jobs[h.pod]
        g = n.profile.gpus
        if h.gpus and g is not None:
            limits = [st.gpus[i].limit_w for i in h.gpus if i < len(st.gpus)]
            limit = sum(limits) / len(limits) if limits else g.default_w
            # The lock as the agent reports it read back (controlStatus.gpu.clockLock), over the board's top clock.
            locks = [min(1.0, (st.gpus[i].lock_max_mhz or g.sm_clock_max_mhz) / g.sm_clock_max_mhz)
                     for i in h.gpus if i < len(st.gpus)]
            lock = sum(locks) / len(locks) if locks else 1.0
            return conditions_for_kind(job.kind, "gpu", limit, g.default_w, g.max_w, lock_ratio=lock)
        ref = n.cpu_max_w_per_socket
        limits = [s.rapl_requested_w if s.rapl_requested_w is not None else ref for s in st.sockets]
        limit = sum(limits) / len(limits) if limits else ref
        return conditions_for_kind(job.kind, "cpu", limit, ref, ref, busy)

    def rows(self, engine: Engine) -> list[ReceiptRow]:
        """Every finished job's receipt against its truth."""
        out = []
        for r in engine.runs.values():
            jid = r.job.job_id
            if r.done_s is None or r.start_s is None or jid not in self.ledger.pods or jid not in self.truth:
                continue
            job = self.jobs[jid]
            out.append(
                ReceiptRow(
                    jid,
                    job.namespace,
                    job.kind,
                    r.node,
                    len(r.gpu_indices),
                    r.done_s - r.start_s,
                    self.ledger.pods[jid],
                    self.truth[jid],
                    r.slow_s,
                    self.by_request.pods[jid].total_j,
                )
            )
        return out


def _held_s(r: JobRun, t0: float, t1: float) -> float:
    """How long of ``[t0, t1]`` the job ran (its Pod's start and finish times)."""
    if r.start_s is None:
        return 0.0
    return max(0.0, min(t1, r.done_s if r.done_s is not None else t1) - max(t0, r.start_s))


def _allocation_shares(n: BenchNode, held: Mapping[str, tuple[float, int]]) -> dict[str, float]:
    """The platform's allocation share of each job (cores; on a GPU node the mean of cores and boards),
    the convention ``joulie_controller``'s ``attribute`` bills by."""
    cores = max(n.cpus, sum(c for c, _ in held.values()))
    if n.gpus == 0:
        return {j: c / cores if cores > 0 else 0.0 for j, (c, _) in held.items()}
    boards = max(n.gpus, sum(g for _, g in held.values()))
    return {j: 0.5 * (c / cores if cores > 0 else 0.0) + 0.5 * g / boards for j, (c, g) in held.items()}


@dataclass(frozen=True)
class ReceiptSummary:
    """One run's receipts against truth: the figures the report prints."""

    jobs: int
    mean_abs_error: float
    worst_abs_error: float
    by_request_mean_abs_error: float
    by_request_worst_abs_error: float
    """The same with the CPU busy part split by requests alone."""
    closure_error: float
    """|sum(receipts) + unallocated - node meters| / node meters."""
    unallocated_share: float
    saved_j: float
    saved_low_j: float
    saved_high_j: float
    added_s: float
    true_added_s: float


def summarise(rows: Sequence[ReceiptRow], ledger: Ledger) -> ReceiptSummary:
    errs = [abs(r.error) for r in rows]
    req = [abs(r.by_request_error) for r in rows]
    metered = sum(ledger.metered_j.values())
    unallocated = sum(r.total_j for r in ledger.unallocated.values())
    return ReceiptSummary(
        len(rows),
        sum(errs) / len(errs) if errs else 0.0,
        max(errs, default=0.0),
        sum(req) / len(req) if req else 0.0,
        max(req, default=0.0),
        ledger.closure_error(),
        unallocated / metered if metered > 0 else 0.0,
        sum(r.receipt.saved_j for r in rows),
        sum(r.receipt.saved_low_j for r in rows),
        sum(r.receipt.saved_high_j for r in rows),
        sum(r.receipt.added_s for r in rows),
        sum(r.true_added_s for r in rows),
    )
