"""Benchmark: the real kube-scheduler placing Pods on KWOK Nodes, alone and calling the extender.

    ./pants run services/extender:schedbench -- --nodes 1000 --pods 5000

One real control plane (etcd, kube-apiserver) and KWOK keeping N fake Nodes Ready; every Node
gets a fresh NodeTwin and NodeHardware, as the controller manager and agents would publish them.
Then, for each arm in turn (--arms): M Pods are created in a namespace of their own while no
scheduler runs, a fresh kube-scheduler is started, and the time until every Pod is bound gives
pods/s. The arms are kube-scheduler alone (`none`), and with the extender (a watch-fed cache, in
a process of its own) in `ncc` (nodeCacheCapable: true) and `full` (full Node objects) wire mode.
The extender's own time per /filter and /prioritize request is measured inside it (server side,
without the client's HTTP and encoding). Printed: pods/s per arm, its ratio to the scheduler
alone in the same run, and extender p50/p99. Not a test: nothing here gates on time.

kube-scheduler's client is set to 1000 QPS (its default of 50 would bound every arm at the same
rate and hide the extender's cost). A scheduler start takes 1-2 s of each arm's time, in every arm.

An arm ends early when no Pod has bound for --stall-s (some can never bind): its row then counts
the Pods bound until the last bind, and the Pods left unbound are listed by their PodScheduled
condition (reason and message, grouped), so a filter that rejects every Node says so at once.
"""

from __future__ import annotations

import argparse
import multiprocessing
import statistics
import tempfile
import threading
import time
import urllib.request
from collections.abc import Awaitable, Callable, MutableMapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec
from kubernetes import client as k8s
from kubernetes import watch as k8s_watch
from kubernetes.client.exceptions import ApiException
from rich.console import Console
from rich.table import Table

from joulie_api.backoff import Backoff
from joulie_api.kube import NODE_HARDWARE, NODE_TWIN, JoulieClient
from joulie_api.kubeconfig import api_client
from joulie_api.names import FIELD_MANAGER_AGENT, FIELD_MANAGER_CONTROLLER_MANAGER, object_name_for_node
from joulie_extender.bench.stall import StallWatch, group_reasons, report_lines, why
from joulie_localcluster.controlplane import start_control_plane
from joulie_localcluster.kwok import KWOK_TAINT_KEY, start_kwok
from joulie_localcluster.nodes import create_node
from joulie_localcluster.procs import free_port
from joulie_localcluster.scheduler import ExtenderConfig, start_scheduler
from joulie_localcluster.tools import load_tools

CRD_DIR = Path("charts/joulie/crds")
ARMS = {"none": None, "ncc": True, "full": False}
"""Arm id -> nodeCacheCapable (None: kube-scheduler without the extender)."""
SCHEDULER_QPS = 1000.0

Scope = MutableMapping[str, Any]
Asgi = Callable[[Scope, Callable[[], Awaitable[Any]], Callable[[Any], Awaitable[None]]], Awaitable[None]]


class _Timing:
    """ASGI wrapper recording how long the app took per /filter and /prioritize request."""

    def __init__(self, app: Asgi, durations: dict[str, list[float]]) -> None:
        self._app, self._durations = app, durations

    async def __call__(self, scope: Scope, receive: Callable[[], Awaitable[Any]],
                       send: Callable[[Any], Awaitable[None]]) -> None:
        path = scope.get("path", "") if scope["type"] == "http" else ""
        if path in ("/filter", "/prioritize"):
            t0 = time.perf_counter()
            await self._app(scope, receive, send)
            self._durations[path.strip("/")].append((time.perf_counter() - t0) * 1000)
        else:
            await self._app(scope, receive, send)


def _serve_extender(kubeconfig: str, port: int) -> None:
    import logging

    import uvicorn

    from joulie_extender.cache.watch import WatchCache
    from joulie_extender.http.app import create_app
    from joulie_extender.http.server import UVICORN_HTTP
    from joulie_extender.settings import Settings

    logging.disable(logging.WARNING)
    cache = WatchCache(api_client(kubeconfig))
    cache.start()
    cache.wait_synced(120)
    durations: dict[str, list[float]] = {"filter": [], "prioritize": []}
    app = create_app(cache, Settings(debug_endpoints=True))

    @app.get("/bench/durations")
    async def bench_durations() -> dict[str, list[float]]:
        return durations

    uvicorn.run(_Timing(app, durations), host="127.0.0.1", port=port, http=UVICORN_HTTP, log_level="error",
                access_log=False)


def _get(url: str, timeout_s: float = 5.0) -> bytes:
    with urllib.request.urlopen(url, timeout=timeout_s) as resp:
        return bytes(resp.read())


def _wait_extender(url: str, nodes: int, timeout_s: float = 180.0) -> None:
    """Until the extender serves and its cache holds every Node's twin and hardware."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            dbg = msgspec.json.decode(_get(url + "/debug/scoring"))
            if all(dbg["cacheSynced"].values()) and len(dbg["nodes"]) >= nodes:
                return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"the extender at {url} did not sync {nodes} twins within {timeout_s:.0f} s")
        time.sleep(0.5)


def _node_name(i: int) -> str:
    return f"bench-{i:05d}"


def _make_node(api: k8s.ApiClient, i: int) -> None:
    name = _node_name(i)
    gpus = 8 if i % 4 == 0 else 0
    profile = "eco" if i % 3 == 0 else "performance"
    alloc = {"cpu": "64", "memory": "512Gi", "pods": "110", **({"nvidia.com/gpu": str(gpus)} if gpus else {})}
    create_node(k8s.CoreV1Api(api), name, {"kubernetes.io/hostname": name, "joulie.io/power-profile": profile},
                alloc, kwok=True)
    no_wait = Backoff(delays_s=())
    controller = JoulieClient(api, FIELD_MANAGER_CONTROLLER_MANAGER, no_wait)
    agent = JoulieClient(api, FIELD_MANAGER_AGENT, no_wait)
    obj = object_name_for_node(name)
    capped_w, measured_w = 2500.0, 400.0 + (i * 37) % 1800
    controller.apply(NODE_TWIN, obj, {"spec": {"nodeName": name, "profile": profile}})
    controller.apply_status(NODE_TWIN, obj, {
        "schedulableClass": profile,
        "powerMeasurement": {"source": "prometheus", "measuredNodePowerW": measured_w, "nodeCappedPowerW": capped_w,
                             "powerTrendWPerMin": float(i % 21 - 10)},
        "predictedPowerHeadroomScore": (capped_w - measured_w) / capped_w * 100,
        "predictedCoolingStressScore": float(i % 60),
        # Fresh for the whole run: the controller would refresh it every tick.
        "lastUpdated": datetime(2100, 1, 1, tzinfo=UTC).isoformat(),
    })
    hw: dict[str, Any] = {"cpu": {"sockets": 2, "totalCores": 64, "capRange": {"type": "package", "maxWattsPerSocket": 350}}}
    if gpus:
        hw["gpu"] = {"present": True, "count": gpus, "vendor": "nvidia", "capRangePerGpu": {"maxWatts": 700}}
    agent.apply(NODE_HARDWARE, obj, {"spec": {"nodeName": name}})
    agent.apply_status(NODE_HARDWARE, obj, hw)


def _pod(i: int) -> dict[str, Any]:
    gpus = {"nvidia.com/gpu": "1"} if i % 10 == 0 else {}
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": f"p-{i:05d}", "annotations": {"joulie.io/workload-class": "performance" if i % 5 == 0
                                                           else "standard"},
                     "labels": {"joulie.io/workload-kind": ("cpu-compute", "cpu-memory", "gpu-inference")[i % 3]}},
        "spec": {"tolerations": [{"key": KWOK_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}],
                 "containers": [{"name": "work", "image": "fake",
                                 "resources": {"requests": {"cpu": "100m", "memory": "64Mi", **gpus}, "limits": gpus}}]},
    }


@dataclass
class ArmResult:
    arm: str
    pods: int
    wall_s: float
    filter_ms: list[float]
    prioritize_ms: list[float]
    unbound: list[tuple[int, str]] = field(default_factory=list)
    """(Pods, why) of the Pods that never bound (an arm that stalled)."""

    @property
    def pods_per_s(self) -> float:
        return self.pods / self.wall_s


def _pct(values: list[float], q: int) -> str:
    if not values:
        return "-"
    return f"{statistics.quantiles(values, n=100, method='inclusive')[q - 1] if len(values) > 1 else values[0]:.2f}"


def _count_bound(api: k8s.ApiClient, namespace: str, total: int, done: threading.Event, deadline_s: float,
                 bound: set[str]) -> None:
    """Watch the namespace until `total` Pods have a node (sets `done`); `bound` holds their names."""
    core = k8s.CoreV1Api(api)
    while not done.is_set() and time.monotonic() < deadline_s:
        w = k8s_watch.Watch()  # type: ignore[no-untyped-call]
        try:
            # A new watch starts with every existing Pod, so nothing bound in between is missed.
            for event in w.stream(core.list_namespaced_pod, namespace, timeout_seconds=30):  # type: ignore[no-untyped-call]
                pod = event["object"]
                if pod.spec.node_name:
                    bound.add(pod.metadata.name)
                if len(bound) >= total:
                    done.set()
                    w.stop()  # type: ignore[no-untyped-call]
                    break
        except ApiException:  # e.g. 504 "Too large resource version" while the watch cache catches up
            time.sleep(0.5)


def _unbound_reasons(api: k8s.ApiClient, namespace: str) -> list[tuple[int, str]]:
    """Why the namespace's unbound Pods stayed so: their PodScheduled conditions, grouped."""
    reasons = []
    for pod in k8s.CoreV1Api(api).list_namespaced_pod(namespace).items:
        if pod.spec is not None and pod.spec.node_name:
            continue
        conditions = (pod.status.conditions if pod.status is not None else None) or []
        cond = next((c for c in conditions if c.type == "PodScheduled"), None)
        reasons.append(why(cond.reason, cond.message) if cond is not None else why(None, None))
    return group_reasons(reasons)


def _wait_bound(done: threading.Event, bound: set[str], deadline: float, stall_s: float) -> tuple[bool, float]:
    """(every Pod bound, when the last one bound), waiting until all are, the deadline, or a stall."""
    stall = StallWatch(stall_s)
    while not done.wait(1.0):
        now = time.monotonic()
        if stall.observe(now, len(bound)) or now > deadline:
            assert stall.last_change_s is not None
            return False, stall.last_change_s
    return True, time.monotonic()


def _run_arm(arm: str, tools: Any, cp: Any, api: k8s.ApiClient, nodes: int, pods: int, console: Console,
             stall_s: float) -> ArmResult:
    core = k8s.CoreV1Api(api)
    namespace = f"bench-{arm}"
    core.create_namespace(k8s.V1Namespace(metadata=k8s.V1ObjectMeta(name=namespace)))
    ncc = ARMS[arm]
    proc = None
    extender = None
    if ncc is not None:
        port = free_port()
        proc = multiprocessing.get_context("spawn").Process(
            target=_serve_extender, args=(str(cp.kubeconfig), port), daemon=True)
        proc.start()
        url = f"http://127.0.0.1:{port}"
        _wait_extender(url, nodes)
        extender = ExtenderConfig(url_prefix=url, weight=5, http_timeout="5s", node_cache_capable=ncc)
    try:
        console.print(f"[dim]{arm}: creating {pods} Pods ...[/dim]")
        with ThreadPoolExecutor(8) as pool:
            # The client sends a dict body as it is (no V1Pod round trip for thousands of Pods).
            list(pool.map(lambda i: core.create_namespaced_pod(namespace, _pod(i)), range(pods)))  # type: ignore[arg-type]
        done = threading.Event()
        deadline = time.monotonic() + 120 + pods / 2
        bound: set[str] = set()
        watcher = threading.Thread(target=_count_bound, args=(api, namespace, pods, done, deadline, bound), daemon=True)
        watcher.start()
        console.print(f"[dim]{arm}: scheduling ...[/dim]")
        started = time.monotonic()
        scheduler = start_scheduler(tools, cp, extender=extender, qps=SCHEDULER_QPS)
        unbound: list[tuple[int, str]] = []
        try:
            complete, last_bind = _wait_bound(done, bound, deadline, stall_s)
            wall = max(last_bind - started, 1e-3)
            if not complete:
                done.set()  # ends the bound-counting watch
                unbound = _unbound_reasons(api, namespace)
                console.print(f"[yellow]{arm}: {pods - len(bound)} of {pods} Pods unbound, nothing bound for "
                              f"{stall_s:.0f} s (see {scheduler.log_path}):[/yellow]")
                for line in report_lines(unbound):
                    console.print(f"  {line}", markup=False)
        finally:
            scheduler.stop()
        durations: dict[str, list[float]] = {"filter": [], "prioritize": []}
        if extender is not None:
            durations = msgspec.json.decode(_get(extender.url_prefix + "/bench/durations", 30))
        return ArmResult(arm, len(bound) if unbound else pods, wall, durations["filter"], durations["prioritize"],
                         unbound)
    finally:
        if proc is not None:
            proc.terminate()
            proc.join(10)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="joulie-extender-schedbench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--pods", type=int, default=5000, help="Pods per arm")
    parser.add_argument("--stall-s", type=float, default=60.0,
                        help="end an arm when no Pod has bound for this long, and say why the rest did not")
    parser.add_argument("--arms", default="none,ncc,full", help=f"comma-separated, of {', '.join(ARMS)}")
    args = parser.parse_args(argv)
    arms = [a.strip() for a in args.arms.split(",") if a.strip()]
    unknown = [a for a in arms if a not in ARMS]
    if unknown:
        parser.error(f"--arms: unknown {', '.join(unknown)}; known: {', '.join(ARMS)}")
    console = Console(width=160, stderr=True)
    tools = load_tools()
    workdir = Path(tempfile.mkdtemp(prefix="joulie-schedbench-"))
    cp = start_control_plane(tools, workdir, crd_dir=CRD_DIR, timeout_s=60)
    results: list[ArmResult] = []
    try:
        start_kwok(tools, cp)
        api = cp.api_client()
        console.print(f"[dim]creating {args.nodes} KWOK Nodes with twins and hardware ...[/dim]")
        t0 = time.monotonic()
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda i: _make_node(api, i), range(args.nodes)))
        console.print(f"[dim]... in {time.monotonic() - t0:.0f} s[/dim]")
        for arm in arms:
            results.append(_run_arm(arm, tools, cp, api, args.nodes, args.pods, console, args.stall_s))
    finally:
        cp.stop()
    base = next((r for r in results if r.arm == "none"), None)
    table = Table(title=f"kube-scheduler on {args.nodes} KWOK Nodes, {args.pods} Pods per arm")
    for col in ("arm", "pods/s", "vs scheduler alone", "extender filter p50 ms", "p99", "extender prioritize p50 ms",
                "p99", "requests", "unbound"):
        table.add_column(col, justify="right")
    for r in results:
        ratio = f"{r.pods_per_s / base.pods_per_s:.2f}" if base is not None else "-"
        table.add_row(r.arm, f"{r.pods_per_s:.0f}", ratio, _pct(r.filter_ms, 50), _pct(r.filter_ms, 99),
                      _pct(r.prioritize_ms, 50), _pct(r.prioritize_ms, 99), str(len(r.filter_ms) + len(r.prioritize_ms)),
                      str(sum(n for n, _ in r.unbound)) if r.unbound else "0")
    Console(width=160).print(table)
    for r in results:
        if r.unbound:
            Console(width=160).print(f"{r.arm}: Pods left unbound", *report_lines(r.unbound), sep="\n  ", markup=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
