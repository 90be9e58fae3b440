"""kubectl joulie: status | top | node NAME | pods | jobs  (energy state from NodeTwin and NodeHardware) |
receipt POD | receipts  (energy receipts from the Pods' joulie.io/energy-receipt annotation)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

from rich.console import Console, Group

from joulie_api.kube import server_message
from joulie_api.names import ANNOTATION_ENERGY_RECEIPT
from joulie_api.version import service_version
from joulie_kubectl import model, powerview, render
from joulie_kubectl.kube import ClusterState, api_client, read_pods, read_state

NAME = "kubectl-joulie"
NO_TWINS = "No NodeTwin resources found. Is Joulie installed?"


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="kubectl joulie", description=__doc__)
    p.add_argument("--version", action="version", version=f"{NAME} {service_version('joulie_kubectl')}")
    p.add_argument("--kubeconfig", help="kubeconfig file (default: KUBECONFIG or ~/.kube/config)")
    p.add_argument("--context", help="kubeconfig context (default: the current context)")
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("status", help="cluster summary and one row per node")
    top = sub.add_parser("top", help="live dashboard, refreshed every --interval seconds")
    top.add_argument("--interval", type=float, default=2.0, help="seconds between refreshes (default 2)")
    top.add_argument("--iterations", type=int, default=0, help="stop after N refreshes (default: until Ctrl-C)")
    node = sub.add_parser("node", help="one node in detail")
    node.add_argument("name")
    sub.add_parser("pods", help="where performance and standard pods run")
    sub.add_parser("power", help="per node: power state and why it is warm or asleep (forecast, floor, rate limit, "
                                 "power cycles left, Pending Pods, idle, BMC)")
    sub.add_parser("jobs", help="per GPU Pod: the lever (cap, clock lock), the estimate and the predicted slowdown")
    receipt = sub.add_parser("receipt", help="one Pod's energy receipt (energy by device, saved by caps)")
    receipt.add_argument("pod")
    receipt.add_argument("-n", "--namespace", default="default")
    receipt.add_argument("-o", "--output", choices=("table", "json"), default="table")
    receipts = sub.add_parser("receipts", help="the energy receipts of a namespace's Pods, with its totals")
    scope = receipts.add_mutually_exclusive_group()
    scope.add_argument("-n", "--namespace", default="default")
    scope.add_argument("-A", "--all-namespaces", action="store_true", help="every namespace, and the cluster total")
    receipts.add_argument("-o", "--output", choices=("table", "json"), default="table")
    return p


def receipt_command(args: argparse.Namespace, pods: list[dict[str, Any]], out: Console, err: Console) -> int:
    """``receipt`` and ``receipts``: read from the Pods' annotations (no NodeTwin needed)."""
    rows = model.receipt_rows(pods)
    if args.command == "receipt":
        if not pods:
            err.print(f"{NAME}: no Pod {args.pod!r} in namespace {args.namespace!r}")
            return 1
        if not rows:
            err.print(f"{NAME}: Pod {args.namespace}/{args.pod} has no {ANNOTATION_ENERGY_RECEIPT} annotation yet")
            return 1
        if args.output == "json":
            out.print_json(json.dumps(model.receipt_json(rows[0])))
        else:
            out.print(render.receipt_detail(rows[0]))
        return 0 if rows[0].receipt is not None else 1
    by_ns, cluster = model.receipt_totals(rows)
    if args.output == "json":
        out.print_json(json.dumps({"pods": [model.receipt_json(r) for r in rows],
                                   "namespaces": {ns: t.to_json() for ns, t in by_ns.items()},
                                   "total": cluster.to_json()}))
    elif not rows:
        where = "any namespace" if args.all_namespaces else f"namespace {args.namespace!r}"
        out.print(f"No Pod in {where} carries a {ANNOTATION_ENERGY_RECEIPT} annotation.")
    else:
        out.print(render.receipts_table(rows, by_ns, cluster))
    return 0


def views(state: ClusterState, now: datetime) -> tuple[list[model.NodeRow], list[model.PodRow]]:
    rows = model.node_rows(state.twins, state.hardware, state.nodes, state.pods, now)
    return rows, model.pod_rows(state.pods, rows)


def status_view(state: ClusterState, now: datetime) -> Group:
    rows, _ = views(state, now)
    return Group(render.summary_text(model.summarize(rows, state.pods)), render.status_table(rows, now))


def _now_utc() -> datetime:
    # timezone.utc, not datetime.UTC (3.11+): the wheel runs on Python 3.9+ (py39_test.py).
    return datetime.now(timezone.utc)  # noqa: UP017


def run(argv: list[str] | None = None, *, console: Console | None = None,
        clock: Callable[[], datetime] = _now_utc, sleep: Callable[[float], None] = time.sleep) -> int:
    args = build_parser().parse_args(argv)
    out = console or Console()
    err = Console(stderr=True)
    try:
        api = api_client(args.kubeconfig, args.context)
    except Exception as exc:  # any kubeconfig problem is reported, not a traceback
        err.print(f"{NAME}: cannot load kubeconfig: {exc}")
        return 1

    def fetch() -> ClusterState | None:
        try:
            return read_state(api)
        except Exception as exc:  # API and transport errors alike end with a message
            err.print(f"{NAME}: reading from the API server failed: {server_message(exc)}")
            return None

    if args.command in ("receipt", "receipts"):
        try:
            ns = None if getattr(args, "all_namespaces", False) else args.namespace
            found = read_pods(api, ns, args.pod if args.command == "receipt" else None)
        except Exception as exc:  # API and transport errors alike end with a message
            err.print(f"{NAME}: reading from the API server failed: {server_message(exc)}")
            return 1
        return receipt_command(args, found, out, err)
    state = fetch()
    if state is None:
        return 1
    if not state.twins:
        out.print(NO_TWINS)
        return 0
    now = clock()
    if args.command == "status":
        out.print(status_view(state, now))
    elif args.command == "pods":
        _, pods = views(state, now)
        out.print(render.placement_text(pods))
        out.print(render.pods_table(pods))
    elif args.command == "power":
        power = powerview.power_rows(state.twins)
        if not power:
            out.print("No power states: the power policy is off (POWER_POLICY=none, docs/suspend-resume.md).")
        else:
            out.print(render.power_table(power, now))
    elif args.command == "jobs":
        jobs = model.job_rows(state.twins)
        if not jobs:
            out.print("No per-Pod decisions: the work-aware policy (POLICY_TYPE=work_aware_v1) writes them for GPU Pods.")
        else:
            out.print(render.jobs_table(jobs))
    elif args.command == "node":
        rows, pods = views(state, now)
        match = [r for r in rows if args.name in (r.node, r.raw_twin.get("metadata", {}).get("name"))]
        if not match:
            err.print(f"{NAME}: no NodeTwin for node {args.name!r}; known nodes: {', '.join(r.node for r in rows)}")
            return 1
        out.print(render.node_detail(match[0], pods, now))
    else:  # top
        i = 0
        while True:
            rows, pods = views(state, now)
            if out.is_terminal:
                out.clear()
            out.print(f"kubectl joulie top  {now:%Y-%m-%d %H:%M:%S} UTC  (every {args.interval:g}s; Ctrl-C to quit)")
            out.print(status_view(state, now))
            out.print(render.placement_text(pods))
            i += 1
            if args.iterations and i >= args.iterations:
                break
            try:
                sleep(args.interval)
            except KeyboardInterrupt:
                break
            state = fetch() or state
            now = clock()
    return 0


def main() -> None:
    try:
        sys.exit(run())
    except KeyboardInterrupt:
        sys.exit(130)


if __name__ == "__main__":
    main()
