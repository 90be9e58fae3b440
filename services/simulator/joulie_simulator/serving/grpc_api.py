"""The EmulatorService of proto/joulie/sim/v1/emulator.proto over the emulator."""

from __future__ import annotations

import contextlib
import math
import queue
from collections.abc import Iterator
from concurrent import futures
from typing import Any

import grpc
from google.protobuf.timestamp_pb2 import Timestamp

from joulie.sim.v1 import emulator_pb2 as _pb2
from joulie.sim.v1 import emulator_pb2_grpc as _pb2_grpc
from joulie_simulator.emulation import emulator as em
from joulie_simulator.facility.live import FacilityLive, check_c
from joulie_simulator.physics.gpu import Phase
from joulie_simulator.physics.model import CpuJob, GpuJob, Load

# This build generates the protobuf modules without type stubs (the mypy plugin is off), so they
# are used untyped here; the loopback tests check the messages.
pb: Any = _pb2
pb_grpc: Any = _pb2_grpc

_FAULTS = {
    pb.FAULT_KIND_VIEW_UNAVAILABLE: "view_unavailable",
    pb.FAULT_KIND_STALE_COUNTERS: "stale_counters",
    pb.FAULT_KIND_WRITE_DENIED: "write_denied",
    pb.FAULT_KIND_GPU_TOOL_FAILURE: "gpu_tool_failure",
    pb.FAULT_KIND_TELEMETRY_GAP: "telemetry_gap",
    pb.FAULT_KIND_GPU_TOOL_HANG: "gpu_tool_hang",
}
_FAULT_KINDS = {v: k for k, v in _FAULTS.items()}
_EVENTS = {
    em.EVENT_TICK: pb.EVENT_KIND_TICK,
    em.EVENT_CPU_CAP: pb.EVENT_KIND_CPU_CAP_WRITTEN,
    em.EVENT_GPU_CAP: pb.EVENT_KIND_GPU_CAP_SET,
    em.EVENT_FAULT_INJECTED: pb.EVENT_KIND_FAULT_INJECTED,
    em.EVENT_FAULT_CLEARED: pb.EVENT_KIND_FAULT_CLEARED,
    em.EVENT_VIEW_RESTARTED: pb.EVENT_KIND_NODE_VIEW_RESTARTED,
    em.EVENT_LOAD: pb.EVENT_KIND_LOAD_CHANGED,
    em.EVENT_WRITE_REJECTED: pb.EVENT_KIND_WRITE_REJECTED,
}


def _now() -> Timestamp:
    ts = Timestamp()
    ts.GetCurrentTime()
    return ts


def load_phases(load: Any) -> tuple[tuple[Phase, ...], ...] | None:
    """``Load.gpu_phases`` from a gRPC NodeLoad; None when a value is outside 0..1.

    A client that predates phases sends none: every board then runs one phase of natural draw
    ``gpu_util``, as before.
    """
    boards = tuple(tuple(Phase(p.share, p.compute_share, p.draw) for p in b.phases) for b in load.gpu_phases)
    if any(not 0 <= v <= 1 for b in boards for p in b for v in (p.share, p.compute_share, p.draw)):
        return None
    return boards


def load_jobs(load: Any) -> tuple[GpuJob, ...] | str:
    """``Load.gpu_jobs`` from a gRPC NodeLoad, or what is wrong with them (a compute share outside 0..1,
    a board held twice, a job without an id)."""
    jobs = tuple(GpuJob(j.index, j.job_id, j.compute_share, j.namespace, j.pod, j.container) for j in load.gpu_jobs)
    for j in jobs:
        if not 0 <= j.compute_share <= 1:
            return f"load: gpu_jobs: board {j.index}: compute_share {j.compute_share:g} is outside 0..1"
        if not j.job_id:
            return f"load: gpu_jobs: board {j.index}: job_id is empty"
    if len({j.index for j in jobs}) != len(jobs):
        return "load: gpu_jobs: a board is named twice"
    return jobs


def load_cpu_jobs(load: Any) -> tuple[CpuJob, ...] | str:
    """``Load.cpu_jobs`` from a gRPC NodeLoad, or what is wrong with them (no Pod named, busy cores not a
    finite number >= 0)."""
    jobs = tuple(CpuJob(j.namespace, j.pod, j.container, j.busy_cores) for j in load.cpu_jobs)
    for j in jobs:
        if not j.pod or not j.namespace:
            return f"load: cpu_jobs: {j.namespace}/{j.pod}: a job names its Pod's namespace and name"
        if not math.isfinite(j.busy_cores) or j.busy_cores < 0:
            return f"load: cpu_jobs: {j.namespace}/{j.pod}: busy_cores {j.busy_cores:g} must be a finite number >= 0"
    return jobs


class EmulatorServicer(_pb2_grpc.EmulatorServiceServicer):
    def __init__(self, emu: em.Emulator, facility: FacilityLive | None = None) -> None:
        self.emu = emu
        self.facility = facility

    def _truth(self, node: str, context: grpc.ServicerContext) -> Any:
        try:
            t = self.emu.truth(node)
        except em.NotEmulated as e:
            context.abort(grpc.StatusCode.NOT_FOUND, str(e))
        freqs = [p["freqMHz"] for p in t["packages"] if p["freqMHz"]]
        return pb.NodeTruth(
            node=t["name"],
            profile=t["profile"],
            at=_now(),
            tick=t["tick"],
            host_power_w=t["host"]["powerW"],
            host_energy_j=t["host"]["energyJ"],
            load=pb.NodeLoad(cpu_util=t["load"]["cpuUtil"], gpu_util=t["load"]["gpuUtil"],
                             cpu_jobs=[pb.CpuJob(namespace=j.namespace, pod=j.pod, container=j.container,
                                                 busy_cores=j.busy_cores) for j in self.emu.node(node).state.load.cpu_jobs]),
            cpu_zones=[
                pb.CpuZoneTruth(
                    path=z["path"],
                    name=z["name"],
                    power_w=z["powerW"],
                    energy_uj=z["energyUJ"],
                    max_energy_range_uj=z["maxEnergyRangeUJ"],
                    cap_w=z["capW"],
                    cap_locked=z["capLocked"],
                )
                for z in t["zones"]
            ],
            gpus=[
                pb.GpuTruth(
                    index=g["index"],
                    uuid=g["uuid"],
                    model=g["model"],
                    power_w=g["powerW"],
                    cap_w=g["capW"],
                    min_cap_w=g["minCapW"],
                    max_cap_w=g["maxCapW"],
                    default_cap_w=g["defaultCapW"],
                    util=g["util"],
                    energy_mj=g["energyMJ"],
                    persistence_mode=g["persistenceMode"],
                    # Unset (HasField false) when the clocks are not locked.
                    lock_max_mhz=g.get("lockMaxMhz"),
                )
                for g in t["gpus"]
            ],
            cpu_freq_mhz=sum(freqs) / len(freqs) if freqs else 0.0,
            active_faults=self._faults(node),
            packages=[pb.CpuPackageTruth(socket=p["socket"], power_w=p["powerW"], energy_j=p["energyJ"]) for p in t["packages"]],
        )

    def _faults(self, node: str) -> list[Any]:
        return [
            pb.Fault(kind=_FAULT_KINDS[f.kind], ticks_left=f.ticks_left, target=f.target) for f in self.emu.node(node).faults
        ]

    def _clock(self) -> Any:
        return pb.ClockState(frozen=self.emu.frozen, tick=self.emu.tick_count, tick_seconds=self.emu.tick_s, now=_now())

    def ListNodes(self, request: Any, context: grpc.ServicerContext) -> Any:
        return pb.ListNodesResponse(nodes=[self._truth(n, context) for n in sorted(self.emu.nodes)], clock=self._clock())

    def GetNode(self, request: Any, context: grpc.ServicerContext) -> Any:
        return self._truth(request.node, context)

    def SetNodeLoad(self, request: Any, context: grpc.ServicerContext) -> Any:
        u = request.load.cpu_util
        if not 0 <= u <= 1 or any(not 0 <= g <= 1 for g in request.load.gpu_util):
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "load: cpu_util and gpu_util must be within 0..1")
        phases = load_phases(request.load)
        if phases is None:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "load: every phase's share, compute_share and draw must be within 0..1")
        jobs = load_jobs(request.load)
        if isinstance(jobs, str):
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, jobs)
        cpu_jobs = load_cpu_jobs(request.load)
        if isinstance(cpu_jobs, str):
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, cpu_jobs)
        try:
            self.emu.set_load(request.node, Load(cpu_util=u, gpu_util=tuple(request.load.gpu_util), gpu_phases=phases or (),
                                                 gpu_jobs=jobs, cpu_jobs=cpu_jobs))
        except em.NotEmulated as e:
            context.abort(grpc.StatusCode.NOT_FOUND, str(e))
        return self._truth(request.node, context)

    def SetClock(self, request: Any, context: grpc.ServicerContext) -> Any:
        self.emu.frozen = request.frozen
        return self._clock()

    def Step(self, request: Any, context: grpc.ServicerContext) -> Any:
        if not self.emu.frozen:
            context.abort(grpc.StatusCode.FAILED_PRECONDITION, "the clock runs free; SetClock(frozen=true) first")
        self.emu.step(request.ticks)
        return self._clock()

    def RestartNodeView(self, request: Any, context: grpc.ServicerContext) -> Any:
        try:
            self.emu.restart_view(request.node)
        except em.NotEmulated as e:
            context.abort(grpc.StatusCode.NOT_FOUND, str(e))
        return self._truth(request.node, context)

    def InjectFault(self, request: Any, context: grpc.ServicerContext) -> Any:
        kind = _FAULTS.get(request.fault.kind)
        if kind is None:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "fault.kind: must be set")
        try:
            self.emu.inject_fault(request.node, em.Fault(kind, request.fault.ticks_left, request.fault.target))
        except em.NotEmulated as e:
            context.abort(grpc.StatusCode.NOT_FOUND, str(e))
        return pb.FaultState(node=request.node, active_faults=self._faults(request.node))

    def ClearFaults(self, request: Any, context: grpc.ServicerContext) -> Any:
        try:
            self.emu.clear_faults(request.node)
        except em.NotEmulated as e:
            context.abort(grpc.StatusCode.NOT_FOUND, str(e))
        return pb.FaultState(node=request.node)

    def _facility(self, context: grpc.ServicerContext) -> FacilityLive:
        if self.facility is None:
            context.abort(grpc.StatusCode.FAILED_PRECONDITION, "this simulator runs no facility model")
        assert self.facility is not None
        return self.facility

    def _facility_state(self, f: FacilityLive) -> Any:
        r, c = f.reading(), f.control
        return pb.FacilityState(ambient_c=r.ambient_c, offset_c=c.offset_c, fixed_c=c.fixed_c, it_power_w=r.it_w,
                                cooling_power_w=r.cooling_w, facility_power_w=r.facility_w, pue=r.pue or 0.0)

    def GetFacility(self, request: Any, context: grpc.ServicerContext) -> Any:
        return self._facility_state(self._facility(context))

    def SetAmbient(self, request: Any, context: grpc.ServicerContext) -> Any:
        f = self._facility(context)
        which = request.WhichOneof("change")
        if which is None:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "change: set one of offset_c, fixed_c, clear")
        if which == "clear":
            f.set_ambient(clear=True)
            return self._facility_state(f)
        try:
            value = check_c(which, getattr(request, which))
        except ValueError as e:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(e))
        if which == "offset_c":
            f.set_ambient(offset_c=value)
        else:
            f.set_ambient(fixed_c=value)
        return self._facility_state(f)

    def StreamEvents(self, request: Any, context: grpc.ServicerContext) -> Iterator[Any]:
        q: queue.Queue[em.Event] = queue.Queue(maxsize=10000)
        nodes = set(request.nodes)

        def listen(ev: em.Event) -> None:
            if ev.name == em.EVENT_TICK and not request.include_ticks:
                return
            if nodes and ev.node and ev.node not in nodes:
                return
            with contextlib.suppress(queue.Full):  # a stalled client loses events rather than stalling the emulator
                q.put_nowait(ev)

        self.emu.listeners.append(listen)
        try:
            while context.is_active():
                try:
                    ev = q.get(timeout=0.2)
                except queue.Empty:
                    continue
                detail = f"{ev.file} {ev.message}".strip()
                if ev.error_type:
                    detail = f"{detail} error.type={ev.error_type}"
                yield pb.EmulatorEvent(
                    kind=_EVENTS.get(ev.name, pb.EVENT_KIND_UNSPECIFIED), node=ev.node, tick=ev.tick, at=_now(), message=detail, value_w=ev.value_w
                )
        finally:
            self.emu.listeners.remove(listen)


def serve(emu: em.Emulator, address: str = "127.0.0.1:0", facility: FacilityLive | None = None) -> tuple[grpc.Server, int]:
    """Start the gRPC server; returns it and the bound port."""
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8, thread_name_prefix="grpc"))
    pb_grpc.add_EmulatorServiceServicer_to_server(EmulatorServicer(emu, facility), server)
    port = server.add_insecure_port(address)
    server.start()
    return server, port


