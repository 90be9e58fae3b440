"""kubectl joulie: status | top | node NAME | pods | jobs  (energy state from NodeTwin and NodeHardware)."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from datetime import datetime, timezone

from rich.console import Console, Group

from joulie_api.kube import server_message
from joulie_api.version import service_version
from joulie_kubectl import model, render
from joulie_kubectl.kube import ClusterState, api_client, read_state

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
    sub.add_parser("jobs", help="per GPU Pod: the lever (cap, clock lock), the estimate and the predicted slowdown")
    return p


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
