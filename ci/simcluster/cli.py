"""simcluster: the simulated cluster harness. Subcommands so far:

``render-nodes --spec FILE``  the fake Node objects of the spec, one JSON object per line
``agents --spec FILE [--daemonset FILE]``  which Nodes the agent DaemonSet reaches, and why not the others
``up [--spec FILE] [--crds DIR]``  start (or reuse) the process runtime and apply the spec's Nodes
``status``  the recorded processes, API readiness and Nodes
``down``  stop the recorded processes; remove the state dir unless ``SIMCLUSTER_KEEP=1``

The state directory is ``$SIMCLUSTER_DIR`` or ``~/.cache/joulie/simcluster/$SIMCLUSTER_NAME``
(name default ``joulie-sim``); see :mod:`simcluster.state`.

``--spec`` defaults to ``$SIMCLUSTER_SPEC``. ``--daemonset`` is a rendered agent DaemonSet manifest
(YAML); without it, the chart's default (nodeSelector joulie.io/managed=true, no tolerations).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

import yaml

from simcluster import runtime
from simcluster.agents import agent_daemonset, select_agents
from simcluster.nodes import render_nodes
from simcluster.spec import SpecError, load_spec
from simcluster.state import StateDir, state_dir


def _load_daemonset(path: Path) -> dict[str, Any]:
    try:
        docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
    except OSError as e:
        raise SpecError(f"{path}: cannot read: {e.strerror}") from e
    except yaml.YAMLError as e:
        raise SpecError(f"{path}: not valid YAML: {e}") from e
    found = [d for d in docs if isinstance(d, dict) and d.get("kind") == "DaemonSet"]
    if len(found) != 1:
        raise SpecError(f"{path}: (top level): expected exactly one DaemonSet, found {len(found)}")
    ds = found[0]
    if not isinstance(((ds.get("spec") or {}).get("template") or {}).get("spec"), dict):
        raise SpecError(f"{path}: spec.template.spec: required")
    return ds


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="simcluster", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    env_spec = os.environ.get("SIMCLUSTER_SPEC")
    for name, help_ in (("render-nodes", "print the spec's Node objects, one JSON per line"),
                        ("agents", "print which Nodes get an agent, and why the others do not")):
        sp = sub.add_parser(name, help=help_)
        sp.add_argument("--spec", type=Path, default=Path(env_spec) if env_spec else None, required=env_spec is None,
                        help="cluster spec YAML (default $SIMCLUSTER_SPEC)")
        if name == "agents":
            sp.add_argument("--daemonset", type=Path, help="rendered agent DaemonSet manifest (default: the chart default)")
    up = sub.add_parser("up", help="start (or reuse) the cluster and apply the spec's Nodes")
    up.add_argument("--spec", type=Path, default=Path(env_spec) if env_spec else None, required=env_spec is None,
                    help="cluster spec YAML (default $SIMCLUSTER_SPEC)")
    up.add_argument("--crds", type=Path, default=runtime.DEFAULT_CRD_DIR, help="CRD directory (default %(default)s)")
    sub.add_parser("status", help="processes, API readiness and Nodes of the recorded cluster")
    sub.add_parser("down", help="stop the cluster; SIMCLUSTER_KEEP=1 keeps the state dir")
    return p


def _runtime_command(args: argparse.Namespace) -> int:
    state = StateDir(state_dir())
    try:
        if args.command == "status":
            return runtime.status(state)
        if args.command == "down":
            runtime.down(state, keep=os.environ.get("SIMCLUSTER_KEEP", "") not in ("", "0"))
            return 0
        spec = load_spec(args.spec)
        runtime.up(state, spec, args.spec.read_text(), crd_dir=args.crds)
        return 0
    except SpecError as e:
        print(f"simcluster: {e}", file=sys.stderr)
        return 2
    except runtime.RuntimeFailure as e:
        print(f"simcluster {args.command}: {e}", file=sys.stderr)
        return 1


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command in ("up", "status", "down"):
        return _runtime_command(args)
    try:
        spec = load_spec(args.spec)
        nodes = render_nodes(spec)
        if args.command == "render-nodes":
            for node in nodes:
                print(json.dumps(node, separators=(",", ":")))
            return 0
        ds = _load_daemonset(args.daemonset) if args.daemonset else agent_daemonset()
    except SpecError as e:
        print(f"simcluster: {e}", file=sys.stderr)
        return 2
    eligible, excluded = select_agents(nodes, ds)
    width = max((len(n["metadata"]["name"]) for n in nodes), default=4)
    print(f"eligible: {len(eligible)} of {len(nodes)} nodes")
    for name in eligible:
        print(f"  {name}")
    print(f"excluded: {len(excluded)}")
    for name, reason in excluded:
        print(f"  {name:<{width}}  {reason}")
    return 0



if __name__ == "__main__":
    sys.exit(main())
