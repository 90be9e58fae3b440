"""The ``emulate`` subcommand: the simulator's composition root.

Emulate the hardware of the nodes of a spec (trees under ``--root``, served by FUSE under
``<root>/fuse`` in fuse mode), step them on one tick, publish the truth (``/debug/emulate``, gRPC,
OTLP), optionally with an emulated BMC per node (``--bmc``: Redfish, ``bmc/``), and the facility
around them (ambient, racks, cooling, PUE; docs/facility-model.md).

Each shell is imported where it is started, so that a command that does not start it (and a mode
that does not use it: pyfuse3 in files mode) never loads its libraries.
"""

from __future__ import annotations

import argparse
import gc
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from joulie_hwprofiles.schema import Profile
from joulie_simulator.commands.flags import duration
from joulie_simulator.emulation.gcclock import GcClock
from joulie_simulator.emulation.spec import NodeEntry
from joulie_simulator.emulation.tickclock import TickClock
from joulie_simulator.emulation.tickcost import TickCost
from joulie_simulator.facility import AmbientProfile, FacilityParams, cooling_model
from joulie_simulator.views.priority import DEFAULT_NICE, DEFAULT_RT_PRIORITY, raise_priority

if TYPE_CHECKING:
    from joulie_simulator.bmc.serving.app import BmcCredentials
    from joulie_simulator.emulation.emulator import Emulator
    from joulie_simulator.emulation.powerfaults import PowerOnFaults
    from joulie_simulator.facility.live import FacilityLive
    from joulie_simulator.views.files.trees import FileTrees

NAME = "joulie-simulator"

Stoppers = list[Callable[[], object]]


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:  # type: ignore[type-arg]
    em: argparse.ArgumentParser = sub.add_parser("emulate", help="emulate node hardware")
    src = em.add_mutually_exclusive_group(required=True)
    src.add_argument("--spec", type=Path, help="node spec YAML (nodes: [{name, profile}], pools: [{name, profile, count}])")
    src.add_argument("--nodes", help="inline spec: name=profile,pool*count=profile")
    em.add_argument("--profiles-dir", type=Path, help="extra profiles (YAML) besides the builtin ones")
    em.add_argument("--root", type=Path, default=Path("/var/lib/joulie-hwemu"), help="where the node trees live")
    em.add_argument("--mode", choices=["fuse", "files"], default="fuse", help="how agents reach the trees (default fuse)")
    em.add_argument("--files-on-read", action="store_true",
                    help="files mode: write each counter when it is read rather than every tick (fanotify pre-content "
                    "events: Linux 6.14+, CAP_SYS_ADMIN, a filesystem that allows them such as ext4; where refused, "
                    "said once and written every tick)")
    em.add_argument("--nice", type=int, default=DEFAULT_NICE,
                    help=f"scheduling priority of the simulator (default {DEFAULT_NICE}: it stands for hardware, which answers "
                         "reads at once; needs root or CAP_SYS_NICE, else left and said; 0 leaves it)")
    em.add_argument("--fuse-rt-priority", type=int, default=DEFAULT_RT_PRIORITY,
                    help=f"SCHED_RR priority of the FUSE view's serving thread (default {DEFAULT_RT_PRIORITY}; 0: normal "
                         "scheduling); needs root or CAP_SYS_NICE, else left and said")
    em.add_argument("--tick", type=duration("--tick", allow_zero=False), default=1.0,
                    help="time per tick: seconds, or 500ms, 2s (default 1)")
    em.add_argument("--http", default="127.0.0.1:18080", help="address of /debug/emulate ('' = off)")
    em.add_argument("--grpc", default="127.0.0.1:18081", help="address of the gRPC API ('' = off)")
    em.add_argument("--otlp-endpoint", default="", help="OTLP/HTTP metrics URL, e.g. http://127.0.0.1:9090/api/v1/otlp/v1/metrics")
    em.add_argument("--otlp-interval", type=duration("--otlp-interval"), default=5.0,
                    help="time between OTLP pushes: seconds, or 500ms, 1m (default 5)")
    em.add_argument(
        "--otlp-logs-endpoint", default="", help="OTLP/HTTP logs URL for the joulie.sim.* events, e.g. http://127.0.0.1:4318/v1/logs"
    )
    em.add_argument("--pod-resources-root", default=None,
                    help="where each emulated NVIDIA node's kubelet pod-resources socket is served, "
                         "<dir>/<node>/pod-resources/kubelet.sock (default <root>/kubelet; '' = off)")
    em.add_argument("--telemetry-seed", type=int, default=0,
                    help="seeds each board's activity noise and each job's activity constants (default 0)")
    em.add_argument("--ticks", type=int, default=0, help="stop after this many ticks (0 = run until signalled)")
    em.add_argument("--bmc", default="", help="host the emulated BMCs (Redfish, one per node, free ports) listen on, e.g. 127.0.0.1 "
                    "('' = off); addresses in <root>/bmcs.json and GET /debug/bmcs")
    em.add_argument("--bmc-port-base", type=int, default=0,
                    help="the BMCs listen on the first free ports from this one upward (0 = ports the kernel picks); a base "
                    "below the ephemeral range keeps them off the ports a harness picks free for its other processes")
    em.add_argument("--bmc-credentials", type=Path, help="YAML/JSON file {username, password} the emulated BMCs accept (required with --bmc)")
    em.add_argument("--bmc-tls-cert", type=Path, help="PEM certificate: the emulated BMCs speak HTTPS (with --bmc-tls-key)")
    em.add_argument("--bmc-tls-key", type=Path, help="PEM private key of --bmc-tls-cert")
    em.add_argument("--bmc-failure-share", type=float, default=0.0,
                    help="share of power-ons the emulated BMCs refuse with HTTP 500, the node left off (default 0; emulation/powerfaults.py)")
    em.add_argument("--bmc-hang-share", type=float, default=0.0,
                    help="share of power-ons the emulated BMCs accept without the node ever booting (default 0)")
    em.add_argument("--bmc-fault-seed", type=int, default=0, help="seed of the BMC faults' draws (default 0)")
    em.add_argument("--power-time-scale", type=float, default=1.0,
                    help="boot and shutdown last the profiles' boot_s/shutdown_s times this (default 1; a CI preset shortens them)")
    em.add_argument("--facility", action=argparse.BooleanOptionalAction, default=True,
                    help="model the facility (ambient, racks from joulie.io/rack and joulie.io/cooling-zone labels, "
                         "cooling, PUE) and export it (default on)")
    em.add_argument("--ambient", default="22,8,86400,0", metavar="BASE_C,AMPLITUDE_C,PERIOD_S[,PHASE_S]",
                    help="outdoor ambient over emulated time: base + amplitude sin(2 pi (t + phase) / period) (default 22,8,86400,0)")
    em.add_argument("--cooling-model", default="reference", help="cooling model: reference (default) or chiller")
    em.add_argument("--facility-other-w", type=float, default=0.0, help="facility power beside IT and cooling, W (default 0)")
    em.add_argument("--inlet-rise-c-per-kw", type=float, default=0.3,
                    help="rack inlet above its zone's supply air per kW of rack IT power (default 0.3)")
    return em


def facility_params(args: argparse.Namespace) -> FacilityParams:
    """The facility flags as parameters; ValueError names the flag."""
    parts = [p.strip() for p in args.ambient.split(",")]
    try:
        if len(parts) not in (3, 4):
            raise ValueError("expected 3 or 4 numbers")
        nums = [float(p) for p in parts]
        ambient = AmbientProfile(*nums)
    except ValueError as e:
        raise ValueError(f"--ambient: {args.ambient!r}: {e} (BASE_C,AMPLITUDE_C,PERIOD_S[,PHASE_S])") from None
    try:
        cooling = cooling_model(args.cooling_model)
    except ValueError as e:
        raise ValueError(f"--cooling-model: {e}") from None
    for flag, value in (("--facility-other-w", args.facility_other_w), ("--inlet-rise-c-per-kw", args.inlet_rise_c_per_kw)):
        if not value >= 0:
            raise ValueError(f"{flag}: {value!r} must be >= 0")
    return FacilityParams(ambient=ambient, cooling=cooling, other_w=args.facility_other_w,
                          inlet_rise_c_per_kw=args.inlet_rise_c_per_kw)


class Refused(Exception):
    """A flag or input that stops ``emulate`` before it starts; printed after the program name."""


@dataclass
class Emulation:
    """What ``emulate`` runs once its flags are accepted."""

    emu: Emulator
    root: Path
    facility: FacilityLive | None
    bmc_credentials: BmcCredentials | None


GC_YOUNG_THRESHOLD = 100_000
"""Tracked objects allocated (net of those freed) before a young collection (CPython's default: 700)."""


def run(args: argparse.Namespace, entries: list[tuple[NodeEntry, Profile]]) -> int:
    """Check the flags and build the emulator; start the views and servers; tick until signalled
    (or ``--ticks``); stop them in start order; write the node ledgers."""
    # Before any thread starts (they inherit it): the FUSE view's one serving thread first of all.
    print(raise_priority(args.nice), flush=True)
    try:
        em = prepare(args, entries)
    except Refused as e:
        print(f"{NAME}: {e}", file=sys.stderr)
        return 2
    from joulie_simulator.views.files.trees import FileTrees

    trees = FileTrees(em.root, em.emu, persist_only=args.mode == "fuse", on_read=args.files_on_read)
    trees.ensure()
    stoppers: Stoppers = []
    tick_cost = TickCost()
    stop = _stop_on_signals()
    fuse = None
    try:
        if args.mode == "fuse":
            from joulie_simulator.views.fuse import FuseServer

            fuse = FuseServer(em.emu, em.root / "fuse", rt_priority=args.fuse_rt_priority)
            fuse.start()
            print(fuse.scheduling, flush=True)
        bmcs, bmc_faults = (_start_bmcs(args, em, em.bmc_credentials, stoppers) if em.bmc_credentials is not None
                            else (None, None))
        if args.http:
            _start_debug_http(args, em, bmcs, tick_cost, stoppers, bmc_faults)
        if args.grpc:
            _start_grpc(args, em, stoppers)
        _start_otlp(args, em, stoppers)
        _start_pod_resources(args, em, stoppers)
        print(f"emulating {len(em.emu.nodes)} nodes in {args.mode} mode under {em.root}", flush=True)
        # What start-up built (the nodes' physics, the trees' entries, the servers) is held for the
        # whole run: frozen, a full collection inside a tick walks only what came later (as the
        # controller's watch caches settle theirs; joulie_api's helper would import the kube client).
        gc.collect()
        gc.freeze()
        # A tick replaces each node's state objects: at 1000 Nodes tens of thousands of tracked
        # objects made and freed a tick. At the default threshold (700) young collections ran inside
        # every files-mode tick, scanning objects the tick frees anyway: 4-5.4 ms of its CPU (the
        # spec's 1000 Nodes, three alternations in one process; 0 at 100 000, where 30 ticks ran no
        # collection). A collection still comes when that many outlive their tick.
        gc.set_threshold(GC_YOUNG_THRESHOLD, *gc.get_threshold()[1:])
        _tick_until_stopped(args, em.emu, trees, tick_cost, stop)
    finally:
        for stop_fn in stoppers:
            stop_fn()
        # Both modes spread the node ledgers over ticks (the root's combined ledger is per tick).
        trees.flush_node_ledgers()
        if fuse is not None:
            fuse.stop()
    return 0


def prepare(args: argparse.Namespace, entries: list[tuple[NodeEntry, Profile]]) -> Emulation:
    """The checks that refuse to start (in this order), the emulator resumed from the trees' ledgers,
    the facility model, the BMC credentials; :class:`Refused` names what is wrong."""
    from joulie_simulator.emulation.emulator import Emulator
    from joulie_simulator.views.files.ledger import load_states

    pairs = [(e.name, p) for e, p in entries]
    try:
        params = facility_params(args) if args.facility else None
    except ValueError as e:
        raise Refused(str(e)) from None
    if args.mode == "fuse" and not os.path.exists("/dev/fuse"):
        raise Refused("--mode fuse: /dev/fuse is missing; give the container /dev/fuse or use --mode files")
    if args.files_on_read and args.mode != "files":
        raise Refused("--files-on-read goes with --mode files (FUSE mode renders every file when it is read)")
    root: Path = args.root
    root.mkdir(parents=True, exist_ok=True)
    if not args.power_time_scale >= 0:
        raise Refused(f"--power-time-scale: {args.power_time_scale} is not a number >= 0")
    emu = Emulator(pairs, tick_s=args.tick, states=load_states(root, pairs), power_time_scale=args.power_time_scale,
                   telemetry_seed=getattr(args, "telemetry_seed", 0) or 0)
    facility = _facility(emu, entries, params) if params is not None else None
    return Emulation(emu, root, facility, _bmc_credentials(args) if args.bmc else None)


def _facility(emu: Emulator, entries: list[tuple[NodeEntry, Profile]], params: FacilityParams) -> FacilityLive:
    from joulie_simulator.facility.live import FacilityLive

    try:
        return FacilityLive(emu, {e.name: e.labels for e, _ in entries}, params)
    except ValueError as e:  # a rack labelled into two cooling zones
        raise Refused(f"facility: {e}") from None


def _bmc_credentials(args: argparse.Namespace) -> BmcCredentials:
    from joulie_simulator.bmc.serving.app import CredentialsError, load_credentials

    if args.bmc_credentials is None or (args.bmc_tls_cert is None) != (args.bmc_tls_key is None):
        raise Refused("--bmc needs --bmc-credentials, and --bmc-tls-cert goes with --bmc-tls-key")
    try:
        return load_credentials(args.bmc_credentials)
    except CredentialsError as e:
        raise Refused(f"--bmc-credentials: {e}") from None


def _stop_on_signals() -> threading.Event:
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    return stop


def _addr(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    return host or "127.0.0.1", int(port)


def _start_bmcs(args: argparse.Namespace, em: Emulation, credentials: BmcCredentials,
                stoppers: Stoppers) -> tuple[dict[str, Any], PowerOnFaults]:
    """One emulated BMC per node; their addresses in ``<root>/bmcs.json`` (and returned, for
    ``/debug/bmcs``), and their power-on faults (``POST /debug/bmc/faults`` sets them later)."""
    from joulie_simulator.bmc.serving.fleet import BmcFleet, BmcTls
    from joulie_simulator.emulation.powerfaults import PowerOnFaults

    tls = BmcTls(args.bmc_tls_cert, args.bmc_tls_key) if args.bmc_tls_cert else None
    try:
        faults = PowerOnFaults(args.bmc_failure_share, args.bmc_hang_share, args.bmc_fault_seed)
    except ValueError as e:
        raise Refused(str(e)) from None
    fleet = BmcFleet(em.emu, credentials, host=args.bmc, tls=tls, port_base=args.bmc_port_base, faults=faults).start()
    stoppers.append(fleet.stop)
    fleet.write(em.root / "bmcs.json")
    bmcs = fleet.document()
    print(f"emulated BMCs: {len(fleet.addresses)} on {args.bmc} ({fleet.scheme}); addresses in {em.root / 'bmcs.json'}"
          + (f"; power-ons refused {faults.failure_share:g}, hung {faults.hang_share:g} (emulated faults)" if faults.active
             else ""), flush=True)
    return bmcs, faults


def _start_debug_http(args: argparse.Namespace, em: Emulation, bmcs: dict[str, Any] | None, tick_cost: TickCost,
                      stoppers: Stoppers, bmc_faults: PowerOnFaults | None = None) -> None:
    from joulie_simulator.serving.http_debug import DebugServer

    host, port = _addr(args.http)
    http = DebugServer(em.emu, host, port, bmcs=bmcs, facility=em.facility, tick_cost=tick_cost, bmc_faults=bmc_faults)
    http.start()
    stoppers.append(http.stop)
    print(f"/debug/emulate at http://{host}:{http.port}/debug/emulate", flush=True)


def _start_grpc(args: argparse.Namespace, em: Emulation, stoppers: Stoppers) -> None:
    from joulie_simulator.serving.grpc_api import serve

    server, gport = serve(em.emu, args.grpc, em.facility)
    stoppers.append(lambda: server.stop(0))
    print(f"gRPC at {args.grpc.rpartition(':')[0]}:{gport}", flush=True)


def _start_pod_resources(args: argparse.Namespace, em: Emulation, stoppers: Stoppers) -> None:
    """The emulated kubelets' pod-resources sockets (serving/podresources.py)."""
    root = getattr(args, "pod_resources_root", None)
    if root == "":
        return
    from joulie_simulator.serving.podresources import PodResourcesServers

    servers = PodResourcesServers(em.emu, Path(root) if root is not None else em.root / "kubelet")
    if not servers.nodes:
        return
    servers.start()
    stoppers.append(servers.stop)
    print(f"pod-resources API for {len(servers.nodes)} NVIDIA nodes under {servers.root}", flush=True)


def _start_otlp(args: argparse.Namespace, em: Emulation, stoppers: Stoppers) -> None:
    """The metrics pusher (else a note that /metrics serves them) and the event exporter."""
    if args.otlp_endpoint:
        from joulie_simulator.serving.otlp import OtlpPusher

        pusher = OtlpPusher(em.emu, args.otlp_endpoint, args.otlp_interval, em.facility)
        pusher.start()
        stoppers.append(pusher.stop)
        print(f"OTLP metrics pushed to {args.otlp_endpoint} every {args.otlp_interval:g}s", flush=True)
    else:
        print("OTLP metrics push off (--otlp-endpoint empty); /metrics serves them for a scraper", flush=True)
    if args.otlp_logs_endpoint:
        from joulie_simulator.serving.otlp import OtlpEventExporter

        events = OtlpEventExporter(em.emu, args.otlp_logs_endpoint, interval_s=1.0)
        events.start()
        stoppers.append(events.stop)


def _tick_until_stopped(args: argparse.Namespace, emu: Emulator, trees: FileTrees, tick_cost: TickCost,
                        stop: threading.Event) -> None:
    """One tick every ``--tick`` seconds on the wall clock (none while the clock is frozen; one right
    after the last when that overran), each stepping the nodes by the time since the last
    (``TickClock``), until signalled or ``--ticks`` are done; the collector's CPU inside each tick
    measured (``GcClock``)."""
    covered = TickClock(args.tick, emu.clock)  # a late tick steps the nodes by the time it was late too
    with GcClock() as gc_clock:
        _tick_loop(args, emu, trees, tick_cost, stop, covered, gc_clock)


def _tick_loop(args: argparse.Namespace, emu: Emulator, trees: FileTrees, tick_cost: TickCost, stop: threading.Event,
               covered: TickClock, gc_clock: GcClock) -> None:
    done = 0
    next_t = time.monotonic()
    # One log line per minute of ticks with their cost (also on /debug/emulate's tickCost).
    report_every = max(1, round(60 / args.tick))
    while not stop.is_set():
        next_t += args.tick
        if emu.frozen:
            covered.pause()
        else:
            gc_clock.take()  # a collection between ticks is not the tick's
            t0, c0 = time.monotonic(), time.thread_time()
            if args.mode == "files":
                trees.tick(covered.covered())
                sp = trees.split
                parts = {"read-back": sp.read_back_ms, "physics": sp.physics_ms, "ledgers": sp.ledgers_ms, "files": sp.files_ms}
            else:
                emu.tick(covered.covered())
                c1 = time.thread_time()
                trees.flush_ledgers()
                c2 = time.thread_time()
                trees.persist_writes()
                c3 = time.thread_time()
                parts = {"physics": (c1 - c0) * 1000, "ledgers": (c2 - c1) * 1000, "persist": (c3 - c2) * 1000}
            tick_cost.record((time.monotonic() - t0) * 1000, (time.thread_time() - c0) * 1000, parts, gc_clock.take())
            done += 1
            if tick_cost.count % report_every == 0:
                print(f"{tick_cost.line()}; {emu.steady_nodes} of {len(emu.nodes)} nodes steady (physics skipped)", flush=True)
            if args.ticks and done >= args.ticks:
                break
        now = time.monotonic()
        # Late: no ticks in a row to catch up (each costs a whole tick's CPU on a machine already
        # short of it); the next tick covers the time since this one, however long.
        next_t = max(next_t, now)
        stop.wait(next_t - now)
