"""Benchmark: /filter and /prioritize at N nodes, with and without nodeCacheCapable, on loopback.

    ./pants run services/extender:bench -- --nodes 100,1000,5000 --pods 200

The extender runs in a separate (forked) process with a cache of N fresh twins and hardware
entries, so the load generator does not share its interpreter. Each simulated pod is what
kube-scheduler does per scheduling cycle: one /filter, then /prioritize on the nodes that
passed, serially, over one keep-alive connection. Bounded by --pods; prints p50/p99 per
endpoint and pods/s (cycles per second); /healthz is the HTTP floor measured in the same run.
It also prints the CPU each cycle cost the extender process and the load generator: on a shared
machine pods/s moves with everything else running, the CPU per cycle much less, and
1000 / (extender CPU ms per pod) is the rate one core spent on the extender alone would reach.
Not a test: nothing here gates on time.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import resource
import socket
import statistics
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import httpx
import msgspec
from rich.console import Console
from rich.table import Table

from joulie_extender.cache.store import StateCache
from joulie_extender.rules.powerest import HardwareInfo
from joulie_extender.rules.scoring import TwinView
from joulie_extender.settings import Settings
from joulie_extender.wire.scheduler import encode


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def node_name(i: int) -> str:
    return f"node-{i:05d}"


def filled_cache(n: int) -> StateCache:
    cache = StateCache()
    now = datetime.now(UTC)
    for i in range(n):
        name = node_name(i)
        gpu = i % 4 == 0
        cache.put_twin(name, TwinView(
            name, "eco" if i % 3 == 0 else "performance", headroom_score=float(i % 90), cooling_stress_score=float(i % 70),
            has_power_measurement=True, measured_power_w=500.0 + i % 1500, capped_power_w=2500.0,
            power_trend_w_per_min=float(i % 21 - 10), last_updated=now,
        ))
        cache.put_hardware(name, name, HardwareInfo(700.0, 128, gpu, 8 if gpu else 0, 700.0 if gpu else 0.0, "nvidia"))
    return cache


def _serve(n: int, port: int) -> None:
    import logging

    import uvicorn

    from joulie_extender.http.app import create_app
    from joulie_extender.http.server import UVICORN_HTTP

    logging.disable(logging.WARNING)
    # A long staleness keeps the twins fresh for however long the run takes.
    app = create_app(filled_cache(n), Settings(staleness_s=86400.0, max_body_bytes=64 * 2**20))
    uvicorn.run(app, host="127.0.0.1", port=port, http=UVICORN_HTTP, log_level="error", access_log=False)


def node_object(i: int) -> dict[str, Any]:
    """A Node roughly as kube-scheduler sends it (no managedFields, no images)."""
    name = node_name(i)
    return {
        "metadata": {
            "name": name, "uid": f"00000000-0000-0000-0000-{i:012d}", "resourceVersion": str(1000 + i),
            "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
                       "joulie.io/power-profile": "eco" if i % 3 == 0 else "performance",
                       "topology.kubernetes.io/zone": f"zone-{i % 4}", "joulie.io/rack": f"rack-{i % 40}"},
            "annotations": {"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
        },
        "spec": {"podCIDR": f"10.{i // 256 % 256}.{i % 256}.0/24"},
        "status": {
            "capacity": {"cpu": "128", "memory": "1024Gi", "pods": "110", "nvidia.com/gpu": "8"},
            "allocatable": {"cpu": "127", "memory": "1000Gi", "pods": "110", "nvidia.com/gpu": "8"},
            "conditions": [{"type": t, "status": "False" if t != "Ready" else "True",
                            "lastHeartbeatTime": "2026-01-01T00:00:00Z", "reason": "KubeletReady"}
                           for t in ("Ready", "MemoryPressure", "DiskPressure", "PIDPressure")],
            "nodeInfo": {"kubeletVersion": "v1.35.4", "osImage": "Debian", "architecture": "amd64"},
        },
    }


def pod_object(i: int) -> dict[str, Any]:
    gpus = {"nvidia.com/gpu": "2"} if i % 5 == 0 else {}
    return {
        "metadata": {"name": f"pod-{i}", "namespace": "bench",
                     "annotations": {"joulie.io/workload-class": "performance" if i % 2 else "standard"}},
        "spec": {"containers": [{"name": "c", "image": "x",
                                 "resources": {"requests": {"cpu": "4", "memory": "16Gi", **gpus}, "limits": gpus}}]},
    }


_TICKS_PER_S: int = os.sysconf("SC_CLK_TCK")


def process_cpu_s(pid: int) -> float:
    """User plus system CPU seconds of a process (``/proc/<pid>/stat`` fields 14 and 15)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICKS_PER_S


def own_cpu_s() -> float:
    me = resource.getrusage(resource.RUSAGE_SELF)
    return me.ru_utime + me.ru_stime


@dataclass
class Result:
    nodes: int
    mode: str
    filter_ms: list[float]
    prioritize_ms: list[float]
    wall_s: float
    pods: int
    server_cpu_s: float
    client_cpu_s: float

    @property
    def pods_per_s(self) -> float:
        return self.pods / self.wall_s

    @property
    def server_cpu_ms_per_pod(self) -> float:
        return self.server_cpu_s * 1000 / self.pods

    @property
    def client_cpu_ms_per_pod(self) -> float:
        return self.client_cpu_s * 1000 / self.pods


def _pct(values: list[float], q: int) -> float:
    """The q-th percentile (1..99)."""
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1] if len(values) > 1 else values[0]


class _FilterReply(msgspec.Struct):
    """What the load generator reads of a filter reply: the names, and the Nodes kept as bytes."""

    NodeNames: list[str] | None = None
    Nodes: msgspec.Raw = msgspec.Raw(b"null")  # raw bytes, JSON null included


_REPLY = msgspec.json.Decoder(_FilterReply)


def drive(client: httpx.Client, n: int, pods: int, cache_capable: bool, warmup: int, server_pid: int) -> Result:
    """Serial cycles as kube-scheduler makes them. The load generator does as little as it can in
    Python, so that on two shared cores the figure is the extender's: the full Node list is encoded
    once per run (kube-scheduler encodes its Node objects in Go every cycle, and they do not change
    here), and the filter reply's Nodes go into the prioritize request as the bytes they came in."""
    names = [node_name(i) for i in range(n)]
    node_list = b"null" if cache_capable else encode({"items": [node_object(i) for i in range(n)]})
    names_json = encode(names) if cache_capable else b"null"
    fl: list[float] = []
    pr: list[float] = []
    started = server_cpu0 = client_cpu0 = 0.0
    for k in range(warmup + pods):
        if k == warmup:
            started = time.perf_counter()
            server_cpu0, client_cpu0 = process_cpu_s(server_pid), own_cpu_s()
        pod = encode(pod_object(k))
        body = b'{"Pod":' + pod + b',"Nodes":' + node_list + b',"NodeNames":' + names_json + b"}"
        t0 = time.perf_counter()
        r = client.post("/filter", content=body, headers={"content-type": "application/json"})
        t1 = time.perf_counter()
        r.raise_for_status()
        reply = _REPLY.decode(r.content)
        body = b'{"Pod":' + pod + b',"NodeNames":' + encode(reply.NodeNames) + b',"Nodes":' + bytes(reply.Nodes) + b"}"
        t2 = time.perf_counter()
        p = client.post("/prioritize", content=body, headers={"content-type": "application/json"})
        t3 = time.perf_counter()
        p.raise_for_status()
        if k >= warmup:
            fl.append((t1 - t0) * 1000)
            pr.append((t3 - t2) * 1000)
    wall_s = time.perf_counter() - started
    return Result(n, "nodeCacheCapable" if cache_capable else "full Nodes", fl, pr, wall_s, pods,
                  process_cpu_s(server_pid) - server_cpu0, own_cpu_s() - client_cpu0)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="joulie-extender-bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", default="100,1000,5000", help="comma-separated node counts")
    parser.add_argument("--pods", type=int, default=200, help="scheduling cycles per (nodes, mode); bounded load")
    parser.add_argument("--warmup", type=int, default=10)
    args = parser.parse_args(argv)
    counts = [int(x) for x in args.nodes.split(",") if x.strip()]
    console = Console(width=160)
    results: list[Result] = []
    floors: dict[int, float] = {}
    ctx = multiprocessing.get_context("fork")
    for n in counts:
        port = free_port()
        proc = ctx.Process(target=_serve, args=(n, port), daemon=True)
        proc.start()
        try:
            with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60.0) as client:
                deadline = time.monotonic() + 60
                while True:
                    try:
                        client.get("/healthz")
                        break
                    except httpx.TransportError:
                        if time.monotonic() > deadline or not proc.is_alive():
                            raise
                        time.sleep(0.05)
                floor = []
                for _ in range(200):
                    t0 = time.perf_counter()
                    client.get("/healthz")
                    floor.append((time.perf_counter() - t0) * 1000)
                floors[n] = statistics.median(floor)
                for cache_capable in (True, False):
                    console.print(f"[dim]{n} nodes, {'nodeCacheCapable' if cache_capable else 'full Nodes'}: "
                                  f"{args.pods} pods ...[/dim]")
                    assert proc.pid is not None
                    results.append(drive(client, n, args.pods, cache_capable, args.warmup, proc.pid))
        finally:
            proc.terminate()
            proc.join(10)
    table = Table(title="joulie-extender on loopback (serial scheduling cycles: /filter then /prioritize)")
    for col in ("nodes", "request carries", "filter p50 ms", "filter p99 ms", "prioritize p50 ms", "prioritize p99 ms",
                "pods/s", "extender CPU ms/pod", "one-core pods/s", "client CPU ms/pod", "/healthz p50 ms (floor)"):
        table.add_column(col, justify="right")
    for r in results:
        table.add_row(str(r.nodes), r.mode, f"{_pct(r.filter_ms, 50):.2f}", f"{_pct(r.filter_ms, 99):.2f}",
                      f"{_pct(r.prioritize_ms, 50):.2f}", f"{_pct(r.prioritize_ms, 99):.2f}", f"{r.pods_per_s:.0f}",
                      f"{r.server_cpu_ms_per_pod:.2f}", f"{1000 / max(r.server_cpu_ms_per_pod, 1e-9):.0f}",
                      f"{r.client_cpu_ms_per_pod:.2f}", f"{floors[r.nodes]:.2f}")
    console.print(table)
    console.print(f"load average during the run: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    console.print("pods/s counts the whole cycle as the client saw it. The client encodes the full Node list once "
                  "per run and passes the filter reply's Nodes to /prioritize as bytes (kube-scheduler re-encodes "
                  "them in Go each cycle: services/extender:schedbench measures that); its CPU is the client column.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
