"""The ``workload``, ``workloadgen`` and ``traceextract`` subcommands of joulie-simulator."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from pathlib import Path
from typing import Any

from joulie_simulator.commands.flags import duration
from joulie_workload import alibaba
from joulie_workload.extract import ExtractOptions, extract_swf, parse_queue_classes
from joulie_workload.gen import GenOptions, generate
from joulie_workload.kinds import KINDS, parse_shares
from joulie_workload.trace import TraceError, dump_lines, load_trace

COMMANDS = ("workload", "workloadgen", "traceextract")


def add_parsers(sub: Any) -> None:
    wl = sub.add_parser("workload", help="run a trace as real Pods on a simulated cluster")
    wl.add_argument("--trace", type=Path, required=True, help="trace JSONL file, or a directory of *.jsonl parts")
    wl.add_argument("--cluster", required=True, help="cluster spec name: Pods select sim.joulie.io/cluster=<name>")
    wl.add_argument("--kubeconfig", default=os.environ.get("KUBECONFIG", ""), help="default $KUBECONFIG, else in-cluster")
    wl.add_argument("--emulator", default="127.0.0.1:18081", help="the emulator's gRPC address (default 127.0.0.1:18081)")
    wl.add_argument("--tick", type=duration("--tick"), default=1.0, help="wall time per tick: seconds, or 500ms, 2s (default 1)")
    wl.add_argument("--time-scale", type=float, default=1.0, help="trace seconds per wall second (default 1)")
    wl.add_argument("--metrics", default="127.0.0.1:18082",
                    help="address of /metrics and of /debug/pod-truth, the per-Pod energy truth for checks and "
                         "benchmarks only: never give it to a Joulie component ('' = off)")
    wl.add_argument("--timeout", type=duration("--timeout"), default=0.0,
                    help="give up after this much wall time: seconds, or 90s, 1h30m (0 = never)")
    wl.add_argument("--no-class-constraints", action="store_true",
                    help="Pods without the power-profile affinity of their class (a cluster without Joulie)")
    wl.add_argument("--placement", choices=["hard", "soft"], default="hard",
                    help="soft: only performance Pods get a power-profile affinity (never eco); eco and general work "
                         "may run anywhere, the extender steers it (the work-aware policy). Default hard")
    wl.add_argument("--go-file", type=Path,
                    help="serve /metrics at once but start the trace's clock only when this file exists (lets a "
                         "benchmark start every component first, then measure from the first job)")
    wl.add_argument("--stay", action="store_true",
                    help="once every job is done, keep serving /metrics until signalled (a supervised runner that "
                         "exits is taken for a crash)")
    gen = sub.add_parser("workloadgen", help="write a synthetic trace (deterministic per seed)")
    d = GenOptions()
    gen.add_argument("--jobs", type=int, default=d.jobs)
    gen.add_argument("--seed", type=int, default=d.seed)
    gen.add_argument("--mean-interarrival-s", type=float, default=d.mean_interarrival_s)
    gen.add_argument("--perf-ratio", type=float, default=d.perf_ratio)
    gen.add_argument("--eco-ratio", type=float, default=d.eco_ratio)
    gen.add_argument("--gpu-ratio", type=float, default=d.gpu_ratio,
                     help="share of GPU jobs when --kind-shares is not given (training 5/8, inference 3/8 of them)")
    gen.add_argument("--kind-shares", default="",
                     help=f"KIND=SHARE,... of {', '.join(KINDS)} (normalised; default from --gpu-ratio: "
                          "gpu-training, gpu-inference, cpu-compute, cpu-memory at 0.25,0.15,0.4,0.2)")
    gen.add_argument("--cpu-median-s", type=float, default=d.cpu_median_s)
    gen.add_argument("--gpu-median-s", type=float, default=d.gpu_median_s)
    gen.add_argument("--diurnal-amplitude", type=float, default=d.diurnal_amplitude,
                     help="0..1 (1 excluded): arrivals follow a daily cycle, rate x (1 + A sin(2 pi t / day)); 0.6 "
                          "makes the peak 4x the trough (default 0: no cycle)")
    gen.add_argument("--day-s", type=float, default=d.day_s, help="the cycle's period in seconds (default 86400)")
    gen.add_argument("--namespace", default=d.namespace)
    gen.add_argument("--out", default="-", help="output file ('-' = stdout)")
    ex = sub.add_parser("traceextract", help="normalise an SWF trace (Parallel Workloads Archive) or the Alibaba GPU "
                        "trace (cluster-trace-gpu-v2023 pod CSV) into ours")
    ex.add_argument("--in", dest="input", type=Path, required=True,
                    help="SWF file, or an Alibaba cluster-trace-gpu-v2023 pod list (*.csv; rules: joulie_workload.alibaba)")
    ex.add_argument("--out", default="-", help="output file ('-' = stdout)")
    ex.add_argument("--time-scale", type=float, default=1.0, help="divide submit times and runtimes by this")
    ex.add_argument("--max-cpus", type=int, default=64, help="cores per job at most (default 64)")
    ex.add_argument("--queue-classes", default="", help="QUEUE=CLASS,... (class performance, eco or general)")
    ex.add_argument("--namespace", default="default")
    ex.add_argument("--limit", type=int, default=0, help="keep the first N usable jobs (0 = all)")
    ex.add_argument("--memory-bound-kb", type=float, default=ExtractOptions().memory_bound_kb,
                    help="memory per processor (KB, SWF field 7 else 10) from which a job is cpu-memory (default 2 GiB)")
    ex.add_argument("--max-gpus", type=int, default=0, help="*.csv: GPUs per pod at most (default 0: no cap)")
    ex.add_argument("--max-memory-mi", type=int, default=0, help="*.csv: MiB per pod at most (default 0: no cap)")


def _emit(lines: list[str], out: str) -> None:
    text = "".join(line + "\n" for line in lines)
    if out == "-":
        sys.stdout.write(text)
    else:
        Path(out).write_text(text, encoding="utf-8")


def run(args: argparse.Namespace) -> int:
    try:
        if args.command == "workloadgen":
            jobs = generate(GenOptions(
                jobs=args.jobs, seed=args.seed, mean_interarrival_s=args.mean_interarrival_s, perf_ratio=args.perf_ratio,
                eco_ratio=args.eco_ratio, gpu_ratio=args.gpu_ratio, cpu_median_s=args.cpu_median_s,
                gpu_median_s=args.gpu_median_s, namespace=args.namespace, diurnal_amplitude=args.diurnal_amplitude,
                day_s=args.day_s, kind_shares=parse_shares(args.kind_shares) if args.kind_shares else None))
            _emit(list(dump_lines(jobs)), args.out)
            print(f"workloadgen: {len(jobs)} jobs, seed {args.seed}", file=sys.stderr)
            return 0
        if args.command == "traceextract":
            try:
                text = args.input.read_text(encoding="utf-8", errors="replace")
            except OSError as e:
                raise TraceError(f"{args.input}: cannot read: {e.strerror or e}") from None
            if args.input.suffix == alibaba.SUFFIX:
                ali = alibaba.extract_alibaba(text.splitlines(), str(args.input), alibaba.AlibabaOptions(
                    time_scale=args.time_scale, max_cpus=args.max_cpus, max_gpus=args.max_gpus,
                    max_memory_mi=args.max_memory_mi, namespace=args.namespace, limit=args.limit))
                _emit(list(dump_lines(ali.jobs)), args.out)
                print("\n".join(f"traceextract: {line}" for line in ali.summary.lines()), file=sys.stderr)
                return 0
            got = extract_swf(text.splitlines(), str(args.input), ExtractOptions(
                time_scale=args.time_scale, max_cpus=args.max_cpus, queue_classes=parse_queue_classes(args.queue_classes),
                namespace=args.namespace, limit=args.limit, memory_bound_kb=args.memory_bound_kb))
            _emit(list(dump_lines(got.jobs)), args.out)
            skipped = ", ".join(f"{n} {why}" for why, n in sorted(got.skipped.items())) or "none"
            print(f"traceextract: {len(got.jobs)} jobs kept; skipped: {skipped}", file=sys.stderr)
            return 0
        return _workload(args)
    except (TraceError, ValueError) as e:
        print(f"joulie-simulator: {e}", file=sys.stderr)
        return 2


def _workload(args: argparse.Namespace) -> int:
    from joulie_api.kubeconfig import api_client
    from joulie_simulator.workload.kube.debugserver import serve
    from joulie_simulator.workload.kube.runner import JobMetrics, WorkloadRunner

    if not args.tick > 0 or not args.time_scale > 0:
        raise ValueError("--tick and --time-scale: must be > 0")
    jobs = load_trace(args.trace)
    # --kubeconfig defaults to $KUBECONFIG; without either, only the Pod's service account.
    api = api_client(args.kubeconfig or None, in_cluster_only=True)
    metrics = JobMetrics()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    runner = WorkloadRunner(api, args.emulator, jobs, args.cluster, tick_s=args.tick, time_scale=args.time_scale,
                            class_constraints=not args.no_class_constraints, placement=args.placement, metrics=metrics)
    if args.metrics:
        host, _, port = args.metrics.rpartition(":")
        serve(host or "127.0.0.1", int(port), metrics.registry, runner.truth_document)
    print(f"workload: {len(jobs)} jobs from {args.trace} on cluster {args.cluster} (emulator {args.emulator})"
          + ("; Pods without class constraints" if args.no_class_constraints else "")
          + ("; soft placement (only performance Pods constrained)" if args.placement == "soft" else ""), flush=True)
    if args.go_file is not None:
        print(f"workload: waiting for {args.go_file} to start the trace's clock", flush=True)
        while not args.go_file.exists() and not stop.wait(0.1):
            pass
    try:
        done = runner.run(stop, args.timeout)
    finally:
        runner.close()
    rec = runner.record
    print(f"workload: {len(rec.created)} pods created, {len(rec.bound)} bound, {len(rec.deleted)} completed and deleted, "
          f"{len(rec.errors)} errors", flush=True)
    if done and args.stay:
        print(f"workload: all {len(jobs)} jobs done; serving /metrics until stopped (--stay)", flush=True)
        # A timed wait: the signal may land on a gRPC thread while the main thread sleeps in an
        # untimed lock acquire, and then the handler would only run once something else woke it.
        while not stop.wait(0.5):
            pass
    if not done and stop.is_set():
        # Stopped on purpose (simcluster down, Ctrl-C): not a failure unless the API refused something.
        print(f"workload: stopped by a signal with {len(jobs) - len(rec.deleted)} jobs unfinished", flush=True)
        return 1 if rec.errors else 0
    return 0 if done and not rec.errors else 1
