"""One benchmark run: a trace on emulated nodes under one policy, on an accelerated (virtual) clock.

Everything that decides is the real code, driven in one process:
- the hardware: the simulator's ``Emulator`` (``physics.step_node``), clock frozen and stepped
  by ``dt_s`` virtual seconds per tick; caps reach it as the agent writes them, planned by the
  agent's own functions from the NodeTwin spec (``agentcaps``: RAPL limits in µW, NVML in mW);
- the jobs: the simulator's workload ``Engine`` (progress from frequency and caps) and the Pods
  of ``workload.pods`` (so the controller and extender read the same Pod objects a cluster has);
- the controller: its ``reconcile`` (``joulie_controller.api``) every ``reconcile_s`` (policy, FSM
  downgrade guard, caps, twin status), with each node's measured power from the emulator;
- placement: a small scheduler (filters: free CPU/GPU, the Pod's power-profile affinity against
  the node label; score: kube-scheduler's LeastAllocated plus, under Joulie, the extender's real
  ``score_node`` x 10 as kube-scheduler weighs an extender of weight 1); ties by node name.

The arms (policies A..ES: which controller policy, power policy, placement and caps) are one table,
``arms.ARMS``.

Per-GPU telemetry (``gputelemetry``): each reconcile, every running GPU Pod's samples of the boards it
holds, as a node's NVML/DCGM exporter gives them (``Snapshot.gpu_samples``), from which the controller
estimates each job, with the boards each Pod holds (``Snapshot.gpu_boards``, as ``hw.gpu.allocation`` names
them); the clock locks it writes to ``spec.gpu.clockLocks``, per group of boards, reach those boards as the
agent applies them (``agentcaps``). ``run(estimates=EstimateLog())`` records the estimates beside the truth.

Physics variants (``run(variant=...)``, ``joulie_simulator.api.VARIANTS``): the emulator runs each node's
profile with its physics moved, and the engine runs the jobs with their compute shares moved; the
controller's NodeHardware, the Node labels, the agent's cap ranges and the Pods come from the unmodified
profile and jobs, so the controller keeps its own model and kind priors.

Facility: the simulator's facility model (``joulie_simulator.facility.pue``, docs/facility-model.md;
one implementation for the simulated cluster and the benchmark): reference joulie-node-sim.md
§3.1.4 with the load fraction against the cluster's nameplate instead of a running peak, so
policies compare on one scale: ``T = 22 + 8 sin(2 pi t / 24 h)`` degC, ``load = IT / sum(node
TDP)``, ``PUE = clamp(1.08 + 0.006 (T - 15) + 0.04 load + 0.015 load (T - 15) / 15, 1, 3)``,
facility power = IT x PUE.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from joulie_api.names import (
    LABEL_MANAGED,
    LABEL_POOL,
    LABEL_POWER_PROFILE,
    LABEL_SIM_CLUSTER,
    PROFILE_ECO,
    TAINT_SUSPENDED,
    TAINT_SUSPENDED_EFFECT,
    object_name_for_node,
)
from joulie_bench.agentcaps import AgentCaps
from joulie_bench.arms import ARMS, SUSPEND_AFTER_S, Arm, settings_for
from joulie_bench.bmcfaults import BmcFaults
from joulie_bench.estimates import EstimateLog
from joulie_bench.gputelemetry import GpuTelemetry
from joulie_bench.gputelemetry import boards as gpu_boards
from joulie_bench.idlepower import idle_power_by_node_w, power_w, settle_idle
from joulie_bench.nodes import BenchNode, node_hardware
from joulie_bench.receipts import ReceiptWatch
from joulie_bench.receipts import summarise as summarise_receipts
from joulie_bench.result import DEVICE_KINDS, RunResult
from joulie_bench.stats import percentile
from joulie_bench.warmup import with_warmup
from joulie_common.clock import FakeClock
from joulie_controller.api import (
    BmcState,
    Measurement,
    Memory,
    NodeInfo,
    Settings,
    Snapshot,
    Taint,
    apply_in_memory,
    pod_key,
    reconcile,
)
from joulie_controller.shell_api import pod_info
from joulie_extender.api import (
    Coefficients,
    HardwareInfo,
    cluster_context,
    eco_class,
    extract_pod_demand,
    hardware_info,
    marginal_watts,
    score_node,
    twin_view,
    workload_kind,
)
from joulie_extender.api import workload_class as extender_workload_class
from joulie_simulator.api import (
    CALIBRATED,
    Emulator,
    Engine,
    Load,
    TelemetryNoise,
    physics_variant,
    speed_from_state,
    variant_jobs,
    variant_profile,
)
from joulie_simulator.api import pue as pue  # the benchmark's PUE, re-exported
from joulie_workload.pods import pod_manifest
from joulie_workload.trace import Job

OPEN_WARMUP_FRAC = 0.25
"""The open regime's window starts this far into the trace's arrival span (warm-up) and ends at the
last arrival, so jobs keep arriving through all of it."""
CLUSTER = "bench"
EPOCH = datetime(2026, 1, 1, tzinfo=UTC)
STALENESS = timedelta(minutes=5)
UNSCHEDULABLE: Final = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}
"""The condition kube-scheduler sets on a Pod it tried and found no node for."""
BMC_STATES: dict[str, BmcState] = {"on": "on", "off": "off", "booting": "powering-on", "shutting-down": "powering-off"}
"""The emulator's power states as a Redfish BMC reports them (ComputerSystem PowerState)."""


def run(
    jobs: Sequence[Job],
    nodes: Sequence[BenchNode],
    policy: str,
    seed: int,
    dt_s: float = 5.0,
    budget_frac: float = 0.6,
    horizon_s: float | None = None,
    reconcile_s: float = 60.0,
    suspend_after_s: float = SUSPEND_AFTER_S,
    variant: str = CALIBRATED,
    faults: BmcFaults | None = None,
    forecast_day_s: float = 86400.0,
    forecast_log: list[tuple[float, str, float]] | None = None,
    estimates: EstimateLog | None = None,
    warmup_s: float = 0.0,
) -> RunResult:
    """``variant``: the physics the emulator and the engine run (``joulie_simulator.api.VARIANTS``); the
    controller's view stays the calibrated profile and the jobs' Pods. ``faults``: the emulated BMCs'
    failing power-ons (``bmcfaults``). ``forecast_day_s``: FORECAST_DAY. ``forecast_log``: gets (virtual s,
    pool, forecast Pods/min) at each reconcile of a forecast arm. ``estimates``: filled with the
    controller's per-job estimates beside the truth after every reconcile. ``warmup_s``: the unit's tail
    replayed before it and the measurement started after it (``warmup``: the policy's own steady state)."""
    if policy not in ARMS:
        raise ValueError(f"policy: {policy!r} is not one of {', '.join(ARMS)}")
    s = settings_for(policy, nodes, budget_frac, reconcile_s, suspend_after_s, forecast_day_s)
    r = _Run(with_warmup(jobs, warmup_s), nodes, ARMS[policy], s, dt_s, variant, seed,
             measured=frozenset(j.job_id for j in jobs), measure_from_s=warmup_s)
    r.faults = faults if faults is not None else BmcFaults(seed=seed)
    r.forecast_log = forecast_log
    r.estimates = estimates
    last_submit = max((j.submit_s for j in jobs), default=0.0)
    horizon = horizon_s if horizon_s is not None else 20 * (last_submit + max((j.ideal_runtime_s for j in jobs), default=0.0)) + 3600
    horizon += warmup_s
    t = 0.0
    while not r.engine.finished and t < horizon:
        if t >= r.measure_from_s and not r.measuring:
            r.start_measuring()
        r.pending.extend(r.engine.due(t))
        if r.joulie and t >= r.next_reconcile:
            r.reconcile(t)
        if r.pending:
            r.schedule(t)
        r.step(t)
        t += dt_s
    return r.result(seed, t)


class _Run:
    """One policy's run of one trace: the emulator, the job engine, the controller's memory and the
    scheduler's free capacity, advanced one tick at a time by :func:`run`."""

    def __init__(self, jobs: Sequence[Job], nodes: Sequence[BenchNode], arm: Arm, s: Settings, dt_s: float,
                 variant: str = CALIBRATED, seed: int = 0, measured: frozenset[str] | None = None,
                 measure_from_s: float = 0.0) -> None:
        """``jobs``: every job the run replays; ``measured``: the ids whose figures it reports (all when None),
        counted from ``measure_from_s`` (the end of a warm-up)."""
        self.nodes, self.policy, self.s, self.dt_s = nodes, arm.id, s, dt_s
        self.measured_ids = measured if measured is not None else frozenset(j.job_id for j in jobs)
        self.jobs = [j for j in jobs if j.job_id in self.measured_ids]
        self.measure_from_s = measure_from_s
        self.measuring = False
        self.boots0 = self.reconciles0 = self.cap_writes0 = 0
        v = physics_variant(variant)
        self.variant = v.name
        # The emulator's truth under the variant; everything Joulie reads (NodeHardware, labels, the agent's
        # cap ranges, the Pods) keeps coming from ``nodes`` and ``jobs`` as given.
        moved = {id(p): variant_profile(p, v) for p in {id(n.profile): n.profile for n in nodes}.values()}
        self.true_nodes = [BenchNode(n.name, moved[id(n.profile)]) for n in nodes]  # one object per profile, as before
        self.true_profile = {n.name: n.profile for n in self.true_nodes}
        self.joulie = arm.controller
        self.write_caps = arm.writes_caps
        self.suspend = arm.power_policy != "none"
        self.packs = arm.packs
        self.cordoned: set[str] = set()
        """Nodes the power policy cordoned and tainted (suspending, off, resuming until uncordoned, failed)."""
        self.clock = FakeClock(t=0.0)  # virtual seconds, moved by hand each tick
        self.emu = Emulator([(n.name, n.profile) for n in self.true_nodes], tick_s=dt_s, clock=self.clock.monotonic)
        self.emu.frozen = True
        self.by_name = {n.name: n for n in nodes}
        self.engine = Engine(variant_jobs(jobs, v))
        self.telemetry = GpuTelemetry(seed, TelemetryNoise().scaled(v.telemetry_noise_scale))
        self.estimates: EstimateLog | None = None
        self.placement = "soft" if arm.placement == "soft" else "hard"
        self.manifests = {j.job_id: pod_manifest(j, CLUSTER, with_class_constraints=arm.placement != "none",
                                                    placement=self.placement)
                          for j in jobs}
        self.hardware = {n.name: node_hardware(n) for n in nodes}
        self.caps = AgentCaps.for_nodes(self.emu, [(n.name, n.profile) for n in nodes], self.hardware)
        self.hw_info: dict[str, HardwareInfo] = {name: hardware_info(h) for name, h in self.hardware.items()}
        self.labels: dict[str, str] = {}
        self.twins: dict[str, Any] = {}
        self.memory = Memory()
        self.coeffs = Coefficients()
        self.nameplate = sum(n.tdp_w for n in nodes)
        self.free_cpu = {n.name: n.cpus for n in nodes}
        self.free_gpu = {n.name: n.gpus for n in nodes}
        self.pending: list[Job] = []
        self.last_load: dict[str, Load] = {}
        self.it_j = self.fac_j = 0.0
        self.idle_kind_j = dict.fromkeys(DEVICE_KINDS, 0.0)
        self.off_s = 0.0  # node-seconds powered off
        self.kind_j = dict.fromkeys(DEVICE_KINDS, 0.0)
        self.idle_node_w = idle_power_by_node_w(self.true_nodes, dt_s)
        self.receipts = ReceiptWatch(nodes, self.true_profile, {j.job_id: j for j in jobs})
        self.receipts.start(self.emu, self.idle_node_w)
        self.reconciles = 0
        self.next_reconcile = 0.0
        self.faults = BmcFaults()
        self.forecast_log: list[tuple[float, str, float]] | None = None
        first = min((j.submit_s for j in self.jobs), default=0.0)
        last = max((j.submit_s for j in self.jobs), default=0.0)
        self.open_start_s = first + OPEN_WARMUP_FRAC * (last - first)
        self.open_end_s = last
        self.open_marks: list[tuple[float, float, float]] = []
        """(IT J, facility J, ideal job-seconds done) when the open window starts and when it ends."""

    def start_measuring(self) -> None:
        """The warm-up is over: the energy, time off, boots, reconciles and cap writes count from here."""
        self.measuring = True
        self.it_j = self.fac_j = self.off_s = 0.0
        self.kind_j = dict.fromkeys(DEVICE_KINDS, 0.0)
        self.idle_kind_j = dict.fromkeys(DEVICE_KINDS, 0.0)
        self.boots0 = sum(self.emu.node(n.name).boots for n in self.nodes)
        self.reconciles0, self.cap_writes0 = self.reconciles, self.caps.writes

    def reconcile(self, t: float) -> None:
        """The controller's reconcile on what runs now; its NodeTwin specs applied as the agent does."""
        self.next_reconcile += self.s.reconcile.interval_s
        self.reconciles += 1
        now = EPOCH + timedelta(seconds=t)
        infos = [self.node_info(n) for n in self.nodes]
        pods = []
        keys: dict[str, str] = {}
        for r in self.engine.runs.values():
            if r.submitted and r.done_s is None:
                m = self.manifests[r.job.job_id]
                # A job still waiting fits no node (the placement below tried every one): what
                # kube-scheduler says of such a Pod, which alone may wake or release a node.
                status: dict[str, Any] = {"phase": "Running" if r.running else "Pending"}
                if not r.running and not r.node:
                    status["conditions"] = [UNSCHEDULABLE]
                obj = {**m, "spec": {**m["spec"], "nodeName": r.node}, "status": status}
                pods.append(pod_info(obj))
                keys[r.job.job_id] = pod_key(pods[-1])
        meas = {n.name: Measurement(self.emu.node(n.name).state.host_power_w) for n in self.nodes}
        bmc = ({n.name: self.faults.reading(n.name, BMC_STATES[self.emu.power_state(n.name)]) for n in self.nodes}
               if self.suspend else {})
        samples = self.telemetry.samples(self.emu, self.engine, self.true_profile, keys)
        snap = Snapshot(now, infos, pods, self.hardware, self.twins, meas, bmc=bmc, gpu_samples=samples,
                        gpu_boards=gpu_boards(self.emu, self.engine, keys))
        result = reconcile(snap, self.s, self.memory)
        self.faults.settle(result.power_states)  # as the controller's loop forgets settled refusals
        if self.forecast_log is not None:
            self.forecast_log.extend((t, pool, need.rate_per_min) for pool, need in result.warm.items())
        if self.estimates is not None:
            self.estimates.record(t, [(r.job, keys[r.job.job_id], r.start_s or 0.0) for r in self.engine.running()
                                      if r.job.requests.gpu > 0], self.memory.job_estimates)
        self.twins = dict(apply_in_memory(snap, result, self.s.nodes.profile_label).twins)
        for a in result.power:
            self.carry_out(a.node, a.action, now)
        for o in result.outcomes:
            self.labels[o.node] = o.profile
            if self.write_caps and self.emu.power_state(o.node) == "on":  # no agent runs on a node that is not up
                twin = self.twins.get(object_name_for_node(o.node))
                self.caps.apply(o.node, twin.spec if twin is not None else None)

    def node_info(self, n: BenchNode) -> NodeInfo:
        """The Node as the controller reads it: labels (one suspend pool per hardware profile), the
        cordon and taint the power policy set, Ready only while the node is up."""
        labels = {LABEL_MANAGED: "true", LABEL_POOL: n.profile.name, LABEL_SIM_CLUSTER: CLUSTER,  # the Pods' nodeSelector
                  **({LABEL_POWER_PROFILE: self.labels[n.name]} if n.name in self.labels else {})}
        cordoned = n.name in self.cordoned
        return NodeInfo(n.name, labels, unschedulable=cordoned, allocatable_gpus=n.gpus, capacity_cpu=n.profile.node.cpu,
                        taints=(Taint(TAINT_SUSPENDED, "", TAINT_SUSPENDED_EFFECT),) if cordoned else (),
                        allocatable_cpu=n.cpus, allocatable_memory_bytes=n.profile.node.memory_ki * 1024.0,
                        ready=self.emu.power_state(n.name) == "on")

    def carry_out(self, node: str, action: str, now: datetime) -> None:
        """A power action as the controller's shell carries it out: the cordon and taint on the Node, the
        power through the node's BMC (here the emulator itself, as the emulated BMC drives it; a power-on
        the BMC refuses or hangs on, ``bmcfaults``, leaves the node off)."""
        if action == "cordon":
            self.cordoned.add(node)
        elif action == "uncordon":
            self.cordoned.discard(node)
        elif action == "off":
            self.emu.power_off(node, graceful=True)
        elif action == "on" and self.faults.power_on(node, now) == "ok":
            self.emu.power_on(node)

    def schedule(self, t: float) -> None:
        """Pending jobs in submit order; each takes the best node it fits on, one that fits nowhere waits
        (later jobs may start before it: backfill without reservations)."""
        now = EPOCH + timedelta(seconds=t)
        views = {n.name: twin_view(self.twins[object_name_for_node(n.name)]) for n in self.nodes
                 if object_name_for_node(n.name) in self.twins} if self.joulie else {}
        ctx = cluster_context(views.values(), now, STALENESS) if self.joulie else None
        still: list[Job] = []
        for j in self.pending:
            node = self._best_node(j, views, ctx, now)
            if node is None:
                still.append(j)
                continue
            self.free_cpu[node] -= j.requests.cpu
            self.free_gpu[node] -= j.requests.gpu
            self.engine.bind(j.job_id, node, t, self.by_name[node].gpus)
        self.pending = still

    def _best_node(self, j: Job, views: dict[str, Any], ctx: Any, now: datetime) -> str | None:
        """The kube-scheduler's choice as the bench models it: fit, the policy's class rules, least
        allocated, plus the extender's score (weight 10) under Joulie."""
        m = self.manifests[j.job_id]
        best: tuple[float, str] | None = None
        for n in self.nodes:
            if self.free_cpu[n.name] + 1e-9 < j.requests.cpu or self.free_gpu[n.name] < j.requests.gpu:
                continue
            if n.name in self.cordoned or self.emu.power_state(n.name) != "on":
                continue  # tainted joulie.io/suspended, or NotReady while off or booting
            prof = self.labels.get(n.name, "")
            if self.joulie and j.workload_class == "performance" and prof == PROFILE_ECO:
                continue
            if self.joulie and self.placement == "hard" and j.workload_class == "eco" and prof != PROFILE_ECO:
                continue
            la = (self.free_cpu[n.name] - j.requests.cpu) / n.cpus
            if n.gpus:
                la = (la + (self.free_gpu[n.name] - j.requests.gpu) / n.gpus) / 2
            score = 100.0 * (1.0 - la if self.packs else la)  # MostAllocated packs; LeastAllocated spreads
            if self.joulie and ctx is not None:
                wc = extender_workload_class(m)
                demand = extract_pod_demand(m, wc)
                mw = marginal_watts(demand, self.hw_info.get(n.name), wc, self.coeffs)
                score += 10.0 * score_node(views.get(n.name), mw, wc, ctx, now=now, staleness=STALENESS,
                                           workload_kind=workload_kind(m), eco_class=eco_class(m)).score
            if best is None or score > best[0] + 1e-9:
                best = (score, n.name)
        return best[1] if best is not None else None

    def step(self, t: float) -> None:
        """One tick: the jobs' loads into the emulator, its physics, the energy counted, the jobs advanced
        at the speed their nodes' state allows."""
        dt_s, nodes, emu = self.dt_s, self.nodes, self.emu
        loads = self.engine.loads({n.name: n.cpus for n in nodes}, {n.name: n.gpus for n in nodes})
        for name, load in loads.items():
            if self.last_load.get(name) != load:
                emu.set_load(name, load)
                self.last_load[name] = load
        self.clock.t = t + dt_s
        emu.tick(dt_s)
        it_w, by_kind = power_w(emu, nodes)
        for kind, w in by_kind.items():
            self.kind_j[kind] += w * dt_s
        self.it_j += it_w * dt_s
        self.fac_j += it_w * pue(it_w, self.nameplate, t) * dt_s
        for n in nodes:
            if emu.power_state(n.name) == "off":
                self.off_s += dt_s
                self.idle_kind_j["other"] += self.true_profile[n.name].physics.standby_w * dt_s
            else:
                for kind, w in self.idle_node_w[n.name].items():
                    self.idle_kind_j[kind] += w * dt_s
        speeds = {n.name: speed_from_state(self.true_profile[n.name], emu.node(n.name).state) for n in nodes}
        ran = self.engine.running()  # the jobs whose load this tick ran
        for c in self.engine.step(t, dt_s, speeds):
            r = self.engine.runs[c.job_id]
            self.free_cpu[c.node] += r.job.requests.cpu
            self.free_gpu[c.node] += r.job.requests.gpu
        self.receipts.truth_tick(t, dt_s, emu, ran)
        if self.receipts.due(t + dt_s):
            self.receipts.observe(t + dt_s, emu, self.engine)
        for mark in (self.open_start_s, self.open_end_s):  # energy and work of this tick both counted
            if t < mark <= t + dt_s and len(self.open_marks) < 2:
                self.open_marks.append((self.it_j, self.fac_j, self.work_done_s()))

    def work_done_s(self) -> float:
        """Ideal job-seconds done so far: each job's progress (on its main device) x its ideal runtime."""
        done = 0.0
        for r in self.engine.runs.values():
            if r.start_s is None:
                continue
            w = r.job.work
            left = r.gpu_left / w.gpu_units if w.gpu_units > 0 else (r.cpu_left / w.cpu_units if w.cpu_units > 0 else 0.0)
            done += (1.0 - min(1.0, max(0.0, left))) * r.job.ideal_runtime_s
        return done

    def idlepower_w(self) -> float:
        """Idle power after the run (not counted in the run's energy), caps as the policy left them."""
        settle_idle(self.emu, self.clock, self.nodes, self.dt_s)
        return power_w(self.emu, self.nodes)[0]

    def result(self, seed: int, end_s: float) -> RunResult:
        self.receipts.observe(end_s, self.emu, self.engine)  # the last interval, before the idle settle ticks on
        receipt_rows = self.receipts.rows(self.engine)
        idle_w = self.idlepower_w()
        own = [r for r in self.engine.runs.values() if r.job.job_id in self.measured_ids]
        done = [r for r in own if r.done_s is not None]
        first = min((j.submit_s for j in self.jobs), default=0.0)
        makespan = (max(r.done_s for r in done if r.done_s is not None) - first) if done else end_s
        slow = [r.slowdown for r in done if r.slowdown is not None]
        started = [r for r in own if r.start_s is not None]
        measured_s = end_s - self.measure_from_s
        span_s = max(end_s - first, 1e-9)
        cpu_s = sum(r.job.requests.cpu * ((r.done_s if r.done_s is not None else end_s) - (r.start_s or 0.0)) for r in started)
        gpu_s = sum(r.job.requests.gpu * ((r.done_s if r.done_s is not None else end_s) - (r.start_s or 0.0)) for r in started)
        total_gpus = sum(n.gpus for n in self.nodes)
        window_s = max(self.open_end_s - self.open_start_s, 1e-9)
        open_gpu_s = sum(r.job.requests.gpu * max(0.0, min(r.done_s if r.done_s is not None else end_s, self.open_end_s)
                                                   - max(r.start_s or 0.0, self.open_start_s)) for r in started)
        marks = self.open_marks + [(self.it_j, self.fac_j, self.work_done_s())] * (2 - len(self.open_marks))
        (it0, fac0, w0), (it1, fac1, w1) = marks[0], marks[1]
        return RunResult(
            policy=self.policy,
            seed=seed,
            it_energy_kwh=self.it_j / 3.6e6,
            facility_energy_kwh=self.fac_j / 3.6e6,
            makespan_s=makespan,
            jobs_total=len(self.jobs),
            jobs_completed=len(done),
            p95_slowdown=percentile(slow, 95),
            mean_it_power_w=self.it_j / measured_s if measured_s > 0 else 0.0,
            reconciles=self.reconciles - self.reconciles0,
            cap_writes=self.caps.writes - self.cap_writes0,
            end_s=end_s,
            idle_it_w=idle_w,
            idle_pue=pue(idle_w, self.nameplate, end_s),
            slowdowns=slow,
            jobs_per_node=dict(sorted(Counter(r.node for r in done if r.node).items())),
            first_submit_s=first,
            energy_by_kind_kwh={k: j / 3.6e6 for k, j in self.kind_j.items()},
            idle_by_kind_kwh={k: j / 3.6e6 for k, j in self.idle_kind_j.items()},
            open_start_s=self.open_start_s,
            open_end_s=self.open_end_s,
            open_it_energy_kwh=(it1 - it0) / 3.6e6,
            open_facility_energy_kwh=(fac1 - fac0) / 3.6e6,
            open_work_h=(w1 - w0) / 3600.0,
            waits_s=[(r.start_s or 0.0) - r.job.submit_s for r in started],
            boots=sum(self.emu.node(n.name).boots for n in self.nodes) - self.boots0,
            node_hours_off=self.off_s / 3600.0,
            cpu_utilisation=cpu_s / (sum(n.cpus for n in self.nodes) * span_s),
            gpu_utilisation=gpu_s / (total_gpus * span_s) if total_gpus else 0.0,
            completions=sorted((r.done_s, r.slowdown) for r in done if r.done_s is not None and r.slowdown is not None),
            variant=self.variant,
            run_s={r.job.job_id: r.done_s - r.start_s for r in done if r.done_s is not None and r.start_s is not None},
            open_gpu_utilisation=open_gpu_s / (total_gpus * window_s) if total_gpus else 0.0,
            receipts=receipt_rows,
            receipt_summary=summarise_receipts(receipt_rows, self.receipts.ledger),
        )

