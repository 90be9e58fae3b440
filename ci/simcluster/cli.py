"""simcluster: the simulated cluster harness. Subcommands so far:

``render-nodes --spec FILE``  the fake Node objects of the spec, one JSON object per line
``agents --spec FILE [--daemonset FILE]``  which Nodes the agent DaemonSet reaches, and why not the others

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

from simcluster.agents import agent_daemonset, select_agents
from simcluster.nodes import render_nodes
from simcluster.spec import SpecError, load_spec


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
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
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

