"""Command line of joulie-simulator: the parser and the dispatch to each subcommand.

``emulate``: emulate the hardware of the nodes of a spec (trees under ``--root``, served by FUSE
under ``<root>/fuse`` in fuse mode), step them on one tick, publish the truth (``/debug/emulate``,
gRPC, OTLP), optionally with an emulated BMC per node (``--bmc``: Redfish, ``bmc/``), and the facility
around them (ambient, racks, cooling, PUE; docs/facility-model.md). ``profiles``: list or check
hardware profiles. ``nodes``: print the Node objects a spec implies. ``curve``: throughput, power and
energy per work versus a power cap, per workload kind (the device models). ``workload``,
``workloadgen``, ``traceextract``: run, generate or extract a workload trace. Each subcommand's flags
and run live in ``commands/``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from joulie_api.version import service_version
from joulie_hwprofiles.schema import Profile, ProfileError, builtin_profile_names, load_profile
from joulie_simulator.commands import emulate as emulate_cmd
from joulie_simulator.emulation.spec import NodeEntry, SpecError, load_spec, parse_inline, resolve_profiles

NAME = "joulie-simulator"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=NAME, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--version", action="version", version=f"{NAME} {service_version(__package__ or 'joulie_simulator')}"
    )
    sub = parser.add_subparsers(dest="command")
    emulate_cmd.add_parser(sub)
    pr = sub.add_parser("profiles", help="list builtin profiles or check profile files")
    pr.add_argument("files", nargs="*", type=Path, help="profile files to check (none: list the builtin ones)")
    nd = sub.add_parser("nodes", help="print the Node objects of a spec as JSON lines")
    nsrc = nd.add_mutually_exclusive_group(required=True)
    nsrc.add_argument("--spec", type=Path)
    nsrc.add_argument("--nodes")
    nd.add_argument("--profiles-dir", type=Path)
    from joulie_simulator.commands import workload as workload_commands

    workload_commands.add_parsers(sub)
    from joulie_simulator.commands import curve as curve_cmd

    curve_cmd.add_parser(sub)
    return parser


def _entries(args: argparse.Namespace) -> list[tuple[NodeEntry, Profile]]:
    if args.spec:
        return resolve_profiles(load_spec(args.spec), args.profiles_dir, str(args.spec))
    return resolve_profiles(parse_inline(args.nodes), args.profiles_dir, "--nodes")


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if args.command in ("workload", "workloadgen", "traceextract"):
            from joulie_simulator.commands import workload as workload_commands

            return workload_commands.run(args)
        if args.command == "emulate":
            return emulate_cmd.run(args, _entries(args))
        if args.command == "curve":
            from joulie_simulator.commands import curve as curve_cmd

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
