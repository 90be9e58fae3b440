"""Command line of joulie-simulator.

``emulate``: emulate the hardware of the nodes of a spec (trees under ``--root``, served by FUSE
under ``<root>/fuse`` in fuse mode), step them on one tick, publish the truth (``/debug/emulate``,
gRPC, OTLP), optionally with an emulated BMC per node (``--bmc``: Redfish, ``bmc/``), and the facility
around them (ambient, racks, cooling, PUE; docs/facility-model.md). ``profiles``: list or check
hardware profiles. ``nodes``: print the Node objects a spec implies. ``curve``: throughput, power and
energy per work versus a power cap, per workload kind (the device models; ``curve_cmd``).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from joulie_api.version import service_version
from joulie_hwprofiles.schema import Profile, ProfileError, builtin_profile_names, load_profile
from joulie_simulator.facility import AmbientProfile, FacilityParams, cooling_model
from joulie_simulator.spec import NodeEntry, SpecError, load_spec, parse_inline, resolve_profiles
from joulie_simulator.tickcost import TickCost

NAME = "joulie-simulator"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=NAME, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--version", action="version", version=f"{NAME} {service_version(__package__ or 'joulie_simulator')}"
    )
    sub = parser.add_subparsers(dest="command")
    em = sub.add_parser("emulate", help="emulate node hardware")
    src = em.add_mutually_exclusive_group(required=True)
    src.add_argument("--spec", type=Path, help="node spec YAML (nodes: [{name, profile}], pools: [{name, profile, count}])")
    src.add_argument("--nodes", help="inline spec: name=profile,pool*count=profile")
    em.add_argument("--profiles-dir", type=Path, help="extra profiles (YAML) besides the builtin ones")
    em.add_argument("--root", type=Path, default=Path("/var/lib/joulie-hwemu"), help="where the node trees live")
    em.add_argument("--mode", choices=["fuse", "files"], default="fuse", help="how agents reach the trees (default fuse)")
    em.add_argument("--tick", type=float, default=1.0, help="seconds per tick (default 1)")
    em.add_argument("--http", default="127.0.0.1:18080", help="address of /debug/emulate ('' = off)")
    em.add_argument("--grpc", default="127.0.0.1:18081", help="address of the gRPC API ('' = off)")
    em.add_argument("--otlp-endpoint", default="", help="OTLP/HTTP metrics URL, e.g. http://127.0.0.1:9090/api/v1/otlp/v1/metrics")
    em.add_argument("--otlp-interval", type=float, default=5.0, help="seconds between OTLP pushes (default 5)")
    em.add_argument(
        "--otlp-logs-endpoint", default="", help="OTLP/HTTP logs URL for the joulie.sim.* events, e.g. http://127.0.0.1:4318/v1/logs"
    )
    em.add_argument("--ticks", type=int, default=0, help="stop after this many ticks (0 = run until signalled)")
    em.add_argument("--bmc", default="", help="host the emulated BMCs (Redfish, one per node, free ports) listen on, e.g. 127.0.0.1 "
                    "('' = off); addresses in <root>/bmcs.json and GET /debug/bmcs")
    em.add_argument("--bmc-port-base", type=int, default=0,
                    help="the BMCs listen on the first free ports from this one upward (0 = ports the kernel picks); a base "
                    "below the ephemeral range keeps them off the ports a harness picks free for its other processes")
    em.add_argument("--bmc-credentials", type=Path, help="YAML/JSON file {username, password} the emulated BMCs accept (required with --bmc)")
    em.add_argument("--bmc-tls-cert", type=Path, help="PEM certificate: the emulated BMCs speak HTTPS (with --bmc-tls-key)")
    em.add_argument("--bmc-tls-key", type=Path, help="PEM private key of --bmc-tls-cert")
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
    pr = sub.add_parser("profiles", help="list builtin profiles or check profile files")
    pr.add_argument("files", nargs="*", type=Path, help="profile files to check (none: list the builtin ones)")
    nd = sub.add_parser("nodes", help="print the Node objects of a spec as JSON lines")
    nsrc = nd.add_mutually_exclusive_group(required=True)
    nsrc.add_argument("--spec", type=Path)
    nsrc.add_argument("--nodes")
    nd.add_argument("--profiles-dir", type=Path)
    from joulie_simulator.workload import commands as workload_commands

    workload_commands.add_parsers(sub)
    from joulie_simulator import curve_cmd

    curve_cmd.add_parser(sub)
    return parser


def _entries(args: argparse.Namespace) -> list[tuple[NodeEntry, Profile]]:
    if args.spec:
        return resolve_profiles(load_spec(args.spec), args.profiles_dir, str(args.spec))
    return resolve_profiles(parse_inline(args.nodes), args.profiles_dir, "--nodes")


def _addr(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    return host or "127.0.0.1", int(port)


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


def emulate(args: argparse.Namespace) -> int:
    from joulie_simulator.emulator import Emulator
    from joulie_simulator.facility_live import FacilityLive
    from joulie_simulator.files.ledger import load_states
    from joulie_simulator.files.trees import FileTrees

    entries = _entries(args)
    pairs = [(e.name, p) for e, p in entries]
    try:
        params = facility_params(args) if args.facility else None
    except ValueError as e:
        print(f"{NAME}: {e}", file=sys.stderr)
        return 2
    if args.mode == "fuse" and not os.path.exists("/dev/fuse"):
        print(f"{NAME}: --mode fuse: /dev/fuse is missing; give the container /dev/fuse or use --mode files", file=sys.stderr)
        return 2
    root: Path = args.root
    root.mkdir(parents=True, exist_ok=True)
    if not args.power_time_scale >= 0:
        print(f"{NAME}: --power-time-scale: {args.power_time_scale} is not a number >= 0", file=sys.stderr)
        return 2
    emu = Emulator(pairs, tick_s=args.tick, states=load_states(root, pairs), power_time_scale=args.power_time_scale)
    facility = None
    if params is not None:
        try:
            facility = FacilityLive(emu, {e.name: e.labels for e, _ in entries}, params)
        except ValueError as e:  # a rack labelled into two cooling zones
            print(f"{NAME}: facility: {e}", file=sys.stderr)
            return 2
    bmc_creds = None
    if args.bmc:
        from joulie_simulator.bmc.app import CredentialsError, load_credentials

        if args.bmc_credentials is None or (args.bmc_tls_cert is None) != (args.bmc_tls_key is None):
            print(f"{NAME}: --bmc needs --bmc-credentials, and --bmc-tls-cert goes with --bmc-tls-key", file=sys.stderr)
            return 2
        try:
            bmc_creds = load_credentials(args.bmc_credentials)
        except CredentialsError as e:
            print(f"{NAME}: --bmc-credentials: {e}", file=sys.stderr)
            return 2
    trees = FileTrees(root, emu, persist_only=args.mode == "fuse")
    trees.ensure()
    stoppers: list[Callable[[], object]] = []
    tick_cost = TickCost()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    fuse = None
    try:
        if args.mode == "fuse":
            from joulie_simulator.fuse_view import FuseServer

            fuse = FuseServer(emu, root / "fuse")
            fuse.start()
        bmcs = None
        if bmc_creds is not None:
            from joulie_simulator.bmc.fleet import BmcFleet, BmcTls

            tls = BmcTls(args.bmc_tls_cert, args.bmc_tls_key) if args.bmc_tls_cert else None
            fleet = BmcFleet(emu, bmc_creds, host=args.bmc, tls=tls, port_base=args.bmc_port_base).start()
            stoppers.append(fleet.stop)
            fleet.write(root / "bmcs.json")
            bmcs = fleet.document()
            print(f"emulated BMCs: {len(fleet.addresses)} on {args.bmc} ({fleet.scheme}); addresses in {root / 'bmcs.json'}", flush=True)
        if args.http:
            from joulie_simulator.http_debug import DebugServer

            host, port = _addr(args.http)
            http = DebugServer(emu, host, port, bmcs=bmcs, facility=facility, tick_cost=tick_cost)
            http.start()
            stoppers.append(http.stop)
            print(f"/debug/emulate at http://{host}:{http.port}/debug/emulate", flush=True)
        if args.grpc:
            from joulie_simulator.grpc_api import serve

            server, gport = serve(emu, args.grpc, facility)
            stoppers.append(lambda: server.stop(0))
            print(f"gRPC at {args.grpc.rpartition(':')[0]}:{gport}", flush=True)
        if args.otlp_endpoint:
            from joulie_simulator.otlp import OtlpPusher

            pusher = OtlpPusher(emu, args.otlp_endpoint, args.otlp_interval, facility)
            pusher.start()
            stoppers.append(pusher.stop)
            print(f"OTLP metrics pushed to {args.otlp_endpoint} every {args.otlp_interval:g}s", flush=True)
        else:
            print("OTLP metrics push off (--otlp-endpoint empty); /metrics serves them for a scraper", flush=True)
        if args.otlp_logs_endpoint:
            from joulie_simulator.otlp import OtlpEventExporter

            events = OtlpEventExporter(emu, args.otlp_logs_endpoint, interval_s=1.0)
            events.start()
            stoppers.append(events.stop)
        print(f"emulating {len(pairs)} nodes in {args.mode} mode under {root}", flush=True)
        done = 0
        next_t = time.monotonic()
        # One log line per minute of ticks with their cost (also on /debug/emulate's tickCost).
        report_every = max(1, round(60 / args.tick))
        while not stop.is_set():
            next_t += args.tick
            if not emu.frozen:
                t0, c0 = time.monotonic(), time.thread_time()
                if args.mode == "files":
                    trees.tick()
                else:
                    emu.tick()
                    trees.flush_ledgers()
                    trees.persist_writes()
                tick_cost.record((time.monotonic() - t0) * 1000, (time.thread_time() - c0) * 1000)
                done += 1
                if tick_cost.count % report_every == 0:
                    print(tick_cost.line(), flush=True)
                if args.ticks and done >= args.ticks:
                    break
            stop.wait(max(0.0, next_t - time.monotonic()))
    finally:
        for stop_fn in stoppers:
            stop_fn()
        # Both modes spread the node ledgers over ticks (the root's combined ledger is per tick).
        trees.flush_node_ledgers()
        if fuse is not None:
            fuse.stop()
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if args.command in ("workload", "workloadgen", "traceextract"):
            from joulie_simulator.workload import commands as workload_commands

            return workload_commands.run(args)
        if args.command == "emulate":
            return emulate(args)
        if args.command == "curve":
            from joulie_simulator import curve_cmd

            return curve_cmd.run(args)
        if args.command == "profiles":
            if not args.files:
                print("\n".join(builtin_profile_names()))
                return 0
            for f in args.files:
                load_profile(f)
                print(f"{f}: ok")
            return 0
        if args.command == "nodes":
            from joulie_hwprofiles.nodeobject import node_object
            for e, p in _entries(args):
                print(json.dumps(node_object(p, e.name, e.labels), sort_keys=True))
            return 0
    except (ProfileError, SpecError) as e:
        print(f"{NAME}: {e}", file=sys.stderr)
        return 2
    parser.print_help()
    return 0


if __name__ == "__main__":
    sys.exit(main())
