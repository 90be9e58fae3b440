"""Benchmark (not a test): CPU cost of one power export on an 8-GPU, 2-socket node.

    ./pants run services/agent:exportbench [-- --exports 300]

Builds a temp tree (2-socket RAPL with DRAM zones) and exports to an OTLP/HTTP sink on
127.0.0.1 that answers 200, so the figure includes the SDK's protobuf encoding and the HTTP
request. GPU power comes either from an in-process reader (what NVML costs: a library call) or
from the stand-in nvidia-smi (a process per export, the fallback when NVML is absent). CPU time
is the agent's own plus its children's (getrusage). Figures, not a gate; the issue's budget is
1 % of a core at a 10 s interval, i.e. 100 ms of CPU per export. Peak RSS is reported too.
"""

from __future__ import annotations

import argparse
import http.server
import resource
import tempfile
import threading
from pathlib import Path

from joulie_agent.discovery.gputools import GPUDevice, Inventory
from joulie_agent.fixtures import testtrees
from joulie_agent.host import hostread
from joulie_agent.host.hostread import HostPaths
from joulie_agent.host.toolrun import make_runner
from joulie_agent.telemetry.otlpexport import PowerExporter, otlp_exporter
from joulie_common.procstatus import KIB_PER_MIB, rss_kib

INTERVAL_S = 10.0


class _Sink(http.server.BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # (http.server's name)
        self.rfile.read(int(self.headers.get("content-length") or 0))
        self.send_response(200)
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def cpu_s() -> float:
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def rss_mib() -> float:
    return rss_kib() / KIB_PER_MIB


def bench(exports: int, tool: bool) -> tuple[float, float]:
    """Mean CPU milliseconds per export, and the RSS growth (MiB) over the exports after the warm-up."""
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Sink)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        testtrees.rapl_node(root, sockets=2)
        paths = HostPaths.under(root)
        if tool:
            gpus = testtrees.fake_nvidia_smi(root, n=8)
            run = make_runner(str(gpus.bin_dir), 5.0)

            def read_gpus() -> Inventory | None:
                return hostread.gpu_inventory("nvidia", run, None)
        else:
            inv = Inventory("nvidia", "nvml", [GPUDevice(i, draw_w=400.0 + i) for i in range(8)])

            def read_gpus() -> Inventory | None:
                return inv
        facts = hostread.read_facts(paths, {}, {}, make_runner(str(root / "no-bin"), 1.0), None)
        facts.gpu = read_gpus()
        t = [0.0]
        ex = PowerExporter(otlp_exporter(f"http://127.0.0.1:{srv.server_address[1]}/v1/metrics"), INTERVAL_S,
                           monotonic=lambda: t[0])
        assert ex.set_node("bench-node", paths, facts, read_gpus) is None
        ex.export_once()  # warm-up: imports, first connection
        start, rss0 = cpu_s(), rss_mib()
        for i in range(exports):
            t[0] = (i + 1) * INTERVAL_S
            assert ex.export_once(), "the sink refused an export"
        # The sink's handler threads run in this process: subtract nothing, so the figure is an upper bound.
        per_export_ms = (cpu_s() - start) / exports * 1000
        growth = rss_mib() - rss0
        ex.stop()
    srv.shutdown()
    return per_export_ms, growth


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--exports", type=int, default=300)
    args = p.parse_args()
    for label, tool in (("NVML-like in-process GPU reader", False), ("nvidia-smi stand-in (a process per export)", True)):
        n = args.exports if not tool else max(args.exports // 5, 10)
        ms, growth = bench(n, tool)
        print(f"{label}: {ms:.2f} ms CPU per export = {ms / (INTERVAL_S * 1000) * 100:.3f} % of a core at "
              f"{INTERVAL_S:.0f} s (sink included); RSS {rss_mib():.0f} MiB, {growth:+.1f} MiB over {n} exports")


if __name__ == "__main__":
    main()
