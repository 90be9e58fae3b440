"""Benchmark (not a test): agent CPU cost per reconcile on an 8-GPU node.

    ./pants run services/agent:bench [-- --iterations 300]

Builds a temp tree (2-socket RAPL, 96 cpufreq policies, /dev/nvidiactl) and a stand-in
nvidia-smi with 8 GPUs, then times reconciles with a CPU cap (RAPL) and a GPU cap in force, as
a 10 s loop would run them. CPU time is the agent's own plus its children's (the GPU tool runs),
from getrusage. Figures, not a gate.
"""

from __future__ import annotations

import argparse
import resource
import tempfile
from collections.abc import Callable
from pathlib import Path

from joulie_agent.discovery.catalog import load_catalog
from joulie_agent.discovery.status import status_document
from joulie_agent.enforce.node import NodeController, NodeOptions
from joulie_agent.fixtures import testtrees
from joulie_agent.host.hostread import HostPaths
from joulie_agent.host.toolrun import make_runner
from joulie_agent.kube.agentkube import SkipUnchanged
from joulie_agent.loop.agent import REDISCOVER_S
from joulie_agent.telemetry.metrics import AgentMetrics
from joulie_api.generated.nodetwin import CPUCapSpec, GPUCapSpec, GPUPowerCap, NodeTwinSpec
from joulie_common.clock import FakeClock

LOOP_S = 10.0


def cpu_s() -> float:
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def measure(fn: Callable[[], object], n: int) -> float:
    """Mean CPU milliseconds per call."""
    t0 = cpu_s()
    for _ in range(n):
        fn()
    return (cpu_s() - t0) / n * 1000


def build(root: Path) -> testtrees.FakeGPUs:
    testtrees.rapl_node(root, sockets=2)
    testtrees.cpufreq_node(root, policies=96, driver="intel_pstate")
    testtrees.write(root / "dev" / "nvidiactl", "")
    return testtrees.fake_nvidia_smi(root, n=8)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="joulie-agent-bench", description=__doc__)
    ap.add_argument("--iterations", type=int, default=300)
    args = ap.parse_args(argv)
    spec = NodeTwinSpec(node_name="bench", profile="eco", cpu=CPUCapSpec(package_power_cap_watts=120),
                        gpu=GPUCapSpec(power_cap=GPUPowerCap(cap_watts_per_gpu=250)))
    with tempfile.TemporaryDirectory(prefix="joulie-agent-bench-") as tmp:
        root = Path(tmp)
        gpus = build(root)
        rows: list[tuple[str, float]] = []
        for label, verify_s in (("steady (GPU limits re-read every 60 s)", 60.0),
                                ("worst case (GPU limits re-read every reconcile)", 0.0),
                                ("agent only (no GPU tool run in the window)", 1e9)):
            clock = FakeClock()
            c = NodeController("bench", HostPaths.under(root), load_catalog(), make_runner(str(gpus.bin_dir)), None,
                               clock, AgentMetrics(), NodeOptions(gpu_verify_interval_s=verify_s))

            def discover(c: NodeController = c) -> None:
                c.discover({}, {"nvidia.com/gpu": "8"})

            discover_ms = measure(discover, 5)
            writes = SkipUnchanged(300.0)

            def reconcile(c: NodeController = c, clock: FakeClock = clock, writes: SkipUnchanged = writes) -> None:
                clock.advance(LOOP_S)
                assert c.hardware is not None
                doc = status_document(c.hardware)
                if writes.due("hw", doc, clock.t):
                    writes.done("hw", doc, clock.t)
                cpu, gpu = c.reconcile(spec)
                if writes.due("status", (cpu, gpu), clock.t):
                    writes.done("status", (cpu, gpu), clock.t)
                    cpu.status(clock), gpu.status(clock)

            reconcile()  # first reconcile writes the caps; steady state is what a loop repeats
            if gpus.limit_w(0) != 250.0 or testtrees.pl1(root, "intel-rapl:0") != "120000000":
                raise SystemExit("bench: caps were not applied; the figures would be meaningless")
            if not rows:
                rows.append(("discovery incl. nvidia-smi (per call)", discover_ms))
            rows.append((f"reconcile, {label}", measure(reconcile, args.iterations)))
        energy = root / "sys/class/powercap/intel-rapl:0/energy_uj"

        def one_read() -> str:
            return energy.read_text()

        baseline = measure(one_read, 2000)
    print(f"joulie-agent reconcile cost, 8-GPU node (2 sockets, 96 cpufreq policies), {args.iterations} reconciles")
    print(f"{'what':62} {'CPU ms':>9} {'% of 1 core @10 s':>18}")
    for what, ms in rows[1:]:
        print(f"{what:62} {ms:9.2f} {ms / (LOOP_S * 1000) * 100:17.3f}%")
    disc = rows[0][1]
    print(f"{rows[0][0]:62} {disc:9.2f} {disc / (REDISCOVER_S * 1000) * 100:17.3f}%  (every {REDISCOVER_S:.0f} s)")
    steady = rows[1][1] + disc * LOOP_S / REDISCOVER_S
    print(f"{'steady total per 10 s loop, discovery amortised':62} {steady:9.2f} {steady / (LOOP_S * 10):17.3f}%")
    print(f"{'baseline: one sysfs read':62} {baseline:9.4f}   (steady reconcile = "
          f"{rows[1][1] / baseline:.0f}x one read)")
    print("goal: <= 1 % of one core at a 10 s loop")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
