"""joulie-bench: the same trace under policies A, A-placement, B-E, over several seeds, with 95 % CIs.

    ./pants run benchmark:bench -- --seeds 5 --jobs 120 --out /tmp/bench

Each seed is one trace (``workloadgen``); every policy runs that same trace. The runs use an
ACCELERATED (virtual) clock: the emulator is frozen and stepped ``--dt`` virtual seconds at a
time, while the real controller code (``reconcile``: policy, FSM guard, caps, twin), the real
extender scoring and the simulator's physics and workload engine decide everything. Writes
``runs.csv`` (one row per policy and seed), ``summary.csv`` (mean and 95 % CI per policy),
``power.csv`` (boots, node-hours off, energy saved from idle, waits added; ``powerreport``),
``paired.csv`` (per-seed change against A with its 95 % CI, regimes ``completion`` and ``open``;
format in benchmark/README.md), ``paired_seeds.csv`` (every seed's own change), ``results.md``
(the tables in Markdown), ``energy_vs_makespan.png``, ``energy_split.png``, ``paired_change.png``
and the traces under
``--out``. ``--trace PATH`` runs a trace file (JSONL, or an SWF log through ``traceextract``), or
each ``*.jsonl``/``*.swf`` file of a directory, instead of generated traces (each file is one
paired unit, numbered like a seed).

``--preset gpu-busy`` runs a named scenario (``presets``: the GPUs allocated most of the time); its flags
are defaults, so a flag given beside it wins. ``--physics-variant NAME`` (repeatable, or a comma list;
default ``calibrated``) runs the emulator with its physics moved within published ranges while the
controller keeps its own model (``joulie_simulator.api.VARIANTS``; ``all`` moves every part at once);
with more than one variant each runs into ``--out/<variant>/`` and ``--out/variants.md`` sets them side
by side.

``--estimates-plot PATH`` runs ``--estimates-arm`` (default E) once more on the first trace with the
controller's per-job estimates recorded beside the emulator's truth (``estimates``): PATH (png, a handful
of GPU jobs) and PATH with ``.csv`` (every reconcile of every GPU job).
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from joulie_bench.arms import ARMS, BASELINE, SUSPEND_AFTER_S, SWEEP_ARM, describe_settings
from joulie_bench.bmcfaults import BmcFaults
from joulie_bench.estimates import EstimateLog, summary_lines
from joulie_bench.estimates import plot as estimates_plot
from joulie_bench.estimates import write_csv as estimates_csv
from joulie_bench.nodes import BenchNode
from joulie_bench.outputs import print_tables, summarise, write_outputs
from joulie_bench.presets import PRESETS, Preset, allocation_lines, apply_preset
from joulie_bench.result import RunResult
from joulie_bench.sim import run
from joulie_bench.tradeoff import TRADEOFF_HEADER, curve
from joulie_bench.tradeoff import csv_rows as tradeoff_csv_rows
from joulie_bench.tradeoff import plot as tradeoff_plot
from joulie_bench.variantreport import variant_summary
from joulie_hwprofiles.schema import ProfileError, builtin_profile
from joulie_simulator.api import CALIBRATED, VARIANTS, physics_variant
from joulie_workload import alibaba
from joulie_workload.chunks import cut_units
from joulie_workload.extract import ExtractOptions, extract_swf
from joulie_workload.gen import GenOptions, generate
from joulie_workload.kinds import parse_shares
from joulie_workload.trace import Job, TraceError, load_trace, write_trace

ACCELERATED_NOTE = (
    "NOTE: accelerated clock. Virtual time, stepped {dt:g} s per tick in one process; the decisions come from the\n"
    "real code: joulie_controller.reconcile (policy, FSM guard, caps, twin) every 60 s, the extender's score_node for\n"
    "placement, the simulator's Emulator/physics for power and caps (written as the agent writes them) and its\n"
    "workload engine for job progress. No Kubernetes API server is involved in these numbers."
)


def parse_nodes(text: str) -> list[BenchNode]:
    nodes: list[BenchNode] = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, _, count = part.partition("*")
        try:
            n = int(count) if count else 1
        except ValueError:
            raise ValueError(f"--nodes: {part!r}: count {count!r} is not an integer") from None
        if n <= 0:
            raise ValueError(f"--nodes: {part!r}: count must be > 0")
        prof = builtin_profile(name)
        nodes.extend(BenchNode(f"{name}-{i}", prof) for i in range(n))
    if not nodes:
        raise ValueError("--nodes: no nodes")
    return nodes


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="joulie-bench", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seeds", type=int, default=20, help="number of seeds (generated traces), 1..N (default 20)")
    p.add_argument("--first-seed", type=int, default=1)
    p.add_argument("--jobs", type=int, default=120, help="jobs per trace (default 120)")
    p.add_argument("--mean-interarrival-s", type=float, default=40.0)
    p.add_argument("--perf-ratio", type=float, default=0.3)
    p.add_argument("--eco-ratio", type=float, default=0.1)
    p.add_argument("--gpu-ratio", type=float, default=0.4)
    p.add_argument("--nodes", default="intel-xeon-2s-rapl*4,nvidia-h100-nvl-8gpu*2", help="profile*count,... (builtin profiles)")
    p.add_argument("--policies", default="A,A-placement,B,C,D,E,S,ES",
                   help=f"comma-separated policy ids of {', '.join(ARMS)} (letters alone, 'ABD', also work; A, the "
                   "baseline of paired.csv, is always run)")
    p.add_argument("--trace", type=Path, help="a trace file (JSONL, or an SWF log: *.swf), or a directory whose *.jsonl and "
                   "*.swf files each run as one trace; replaces the generated traces (--seeds, --jobs and the ratios are "
                   "then unused)")
    p.add_argument("--swf-time-scale", type=float, default=1.0,
                   help="SWF logs: divide submit and run times by this (compress a long log; default 1)")
    p.add_argument("--swf-chunk-jobs", type=int, default=200,
                   help="SWF logs: cut the log into consecutive chunks of N jobs, each one paired unit (default 200)")
    p.add_argument("--swf-chunks", type=int, default=10, help="SWF logs: at most this many chunks (default 10)")
    p.add_argument("--diurnal-amplitude", type=float, default=0.0,
                   help="generated traces: arrivals follow a daily cycle, rate x (1 + A sin(2 pi t / day)), 0 <= A < 1 "
                   "(0.6: the peak 4x the trough; default 0: none)")
    p.add_argument("--day-s", type=float, default=86400.0, help="generated traces: the daily cycle's period (default 86400)")
    p.add_argument("--kind-shares", default="", help="generated traces: share of each workload kind, e.g. "
                   "'gpu-inference=0.4,cpu-memory=0.6' (default: from --gpu-ratio)")
    p.add_argument("--dt", type=float, default=5.0, help="virtual seconds per tick (default 5)")
    p.add_argument("--budget-frac", type=float, default=0.6, help="policy D: budget as a fraction of the nodes' TDP sum")
    p.add_argument("--suspend-after", type=float, default=SUSPEND_AFTER_S,
                   help=f"S and ES: SUSPEND_AFTER in seconds (default {SUSPEND_AFTER_S:g}, the chart's)")
    p.add_argument("--warmup", type=float, default=0.0, metavar="SECONDS",
                   help="measure each unit from the policy's own steady state: its last SECONDS of arrivals replayed "
                        "before it and discarded, every figure counted from there (default 0: every node on at t=0; "
                        "benchmark/README.md, 'Warm-up')")
    p.add_argument("--bmc-failure-rate", type=float, default=0.0,
                   help="suspend arms: share of power-ons the emulated BMC refuses (HTTP 500), drawn from a generator "
                   "seeded by the seed (bmcfaults; default 0)")
    p.add_argument("--bmc-hang-rate", type=float, default=0.0,
                   help="suspend arms: share of power-ons the BMC accepts but the node never comes up (default 0)")
    p.add_argument("--suspend-sweep", default="",
                   help="comma-separated SUSPEND_AFTER values in seconds, e.g. '120,300,600,1200': ES runs again at each "
                   "and tradeoff.csv / tradeoff.png show energy against waiting")
    p.add_argument("--preset", choices=sorted(PRESETS), help="a named scenario; its values become the defaults of "
                   "the flags it sets: " + "; ".join(f"{n}: {pr.summary}" for n, pr in PRESETS.items()).replace("%", "%%"))
    p.add_argument("--physics-variant", action="append", metavar="NAME",
                   help=f"the emulator's physics (repeatable or comma-separated; default {CALIBRATED}); the controller "
                   f"keeps its own model: " + "; ".join(v.describe().split(" (range")[0] for v in VARIANTS.values()).replace(
                       "%", "%%"))
    p.add_argument("--estimates-plot", type=Path, metavar="PATH",
                   help="also run --estimates-arm on the first trace and plot the controller's per-job compute-share "
                   "estimates against the emulator's truth to PATH (png; the points to PATH with .csv)")
    p.add_argument("--estimates-arm", default="E", help="the arm --estimates-plot runs (default E)")
    p.add_argument("--out", type=Path, required=True)
    return p


def plot_estimates(args: argparse.Namespace, plan: Plan) -> None:
    """``--estimates-plot``: one more run of ``--estimates-arm`` on the first unit, its estimates written."""
    seed, name, jobs = plan.units[0]
    log = EstimateLog()
    run(jobs, plan.nodes, args.estimates_arm, seed, dt_s=args.dt, budget_frac=args.budget_frac,
        suspend_after_s=args.suspend_after, variant=plan.variant, faults=faults_for(args, seed),
        forecast_day_s=args.day_s, estimates=log, warmup_s=args.warmup)  # the run the tables come from
    path: Path = args.estimates_plot
    estimates_csv(path.with_suffix(".csv"), log)
    estimates_plot(path, log, log.chosen(), f"{args.estimates_arm} on {name} (physics variant {plan.variant}): "
                   "the controller's estimate of each job's compute share against the truth")
    print(f"\nestimates ({args.estimates_arm} on {name}, physics variant {plan.variant}):")
    for line in summary_lines(log):
        print("  " + line)
    print(f"wrote {path}, {path.with_suffix('.csv')}")


def parse_variants(values: Sequence[str] | None) -> list[str]:
    """``--physics-variant``: every name given (repeated or comma-separated), in order, once each;
    ``calibrated`` without any. An unknown name raises ValueError listing the names there are."""
    names = [n.strip() for v in (values or [CALIBRATED]) for n in v.split(",") if n.strip()]
    try:
        return list(dict.fromkeys(physics_variant(n).name for n in names)) or [CALIBRATED]
    except ValueError as e:
        raise ValueError(f"--physics-variant: {e}") from None


def parse_policies(text: str) -> list[str]:
    """``A,A-placement,E`` (ids, any case) or ``ABD`` (one letter each, single-letter ids only); A first,
    added when missing: it is paired.csv's baseline."""
    by_lower = {k.lower(): k for k in ARMS}
    raw = text.split(",") if "," in text or text.strip().lower() in by_lower else list(text.strip())
    ids = list(dict.fromkeys(by_lower.get(p.strip().lower(), p.strip()) for p in raw if p.strip()))
    bad = [p for p in ids if p not in ARMS]
    if bad or not ids:
        raise ValueError(f"--policies: {text!r}: {', '.join(map(repr, bad)) or 'no id'} is not a policy id; ids: "
                         f"{', '.join(ARMS)} (comma-separated)")
    return [BASELINE, *(p for p in ids if p != BASELINE)]


def trace_files(path: Path) -> list[Path]:
    """``--trace``: the file itself, or every ``*.jsonl``, ``*.swf`` and ``*.csv`` (Alibaba GPU trace) file of a
    directory (sorted), each one trace."""
    if path.is_dir():
        files = sorted([*path.glob("*.jsonl"), *path.glob("*.swf"), *path.glob(f"*{alibaba.SUFFIX}")])
        if not files:
            raise ValueError(f"--trace: {path}: no *.jsonl, *.swf or *.csv files in this directory")
        return files
    if not path.is_file():
        raise ValueError(f"--trace: {path}: no such file or directory")
    return [path]


def read_trace(path: Path, args: argparse.Namespace, max_cpus: int, max_gpus: int = 0) -> list[tuple[str, list[Job]]]:
    """``(unit name, jobs)``: a JSONL trace is one unit; an SWF log or an Alibaba GPU pod list goes through
    ``traceextract`` (cores and GPUs capped to the largest node, so every job fits somewhere) and is cut into
    consecutive chunks of ``--swf-chunk-jobs`` jobs (each re-based to start at 0), one paired unit each."""
    if path.suffix == ".swf":
        with path.open(encoding="utf-8", errors="replace") as f:
            got = extract_swf(f, str(path), ExtractOptions(time_scale=args.swf_time_scale, max_cpus=max_cpus))
        jobs, skipped, what = got.jobs, sum(got.skipped.values()), "SWF"
    elif path.suffix == alibaba.SUFFIX:
        if max_gpus <= 0:
            raise ValueError(f"--trace: {path}: an Alibaba GPU trace needs GPU nodes in --nodes (its GPU pods would "
                             "never be scheduled)")
        with path.open(encoding="utf-8") as f:
            ali = alibaba.extract_alibaba(f, str(path), alibaba.AlibabaOptions(
                time_scale=args.swf_time_scale, max_cpus=max_cpus, max_gpus=max_gpus))
        jobs, skipped, what = ali.jobs, sum(ali.skipped.values()), "Alibaba GPU trace"
        for line in ali.summary.lines():
            print(f"  {path.name}: {line}")
    else:
        return [(path.name, load_trace(path))]
    if not jobs:
        raise ValueError(f"--trace: {path}: no usable job in this {what} (skipped: {skipped})")
    size = max(1, args.swf_chunk_jobs)
    units = [(f"{path.name}#{i + 1}", u) for i, u in enumerate(cut_units(jobs, size, args.swf_chunks))]
    kinds = Counter(j.kind for j in jobs)
    print(f"  {path.name}: {what}, {len(jobs)} jobs extracted ({skipped} skipped; kinds "
          f"{', '.join(f'{k} {n}' for k, n in sorted(kinds.items()))}), {len(units)} chunks of up to {size} jobs, "
          f"time scale 1/{args.swf_time_scale:g}, cores capped at {max_cpus}")
    return units


def load_traces(args: argparse.Namespace, out: Path, max_cpus: int = 64,
                max_gpus: int = 0) -> list[tuple[int, str, list[Job]]]:
    """``(seed, trace name, jobs)`` per paired unit: the ``--trace`` files (numbered from ``--first-seed``)
    or one generated trace per seed, written under ``out/traces``."""
    if args.trace is not None:
        named = [u for f in trace_files(args.trace) for u in read_trace(f, args, max_cpus, max_gpus)]
        return [(args.first_seed + i, name, jobs) for i, (name, jobs) in enumerate(named)]
    shares = parse_shares(args.kind_shares) if args.kind_shares else None
    units = []
    for seed in range(args.first_seed, args.first_seed + args.seeds):
        jobs = generate(GenOptions(jobs=args.jobs, seed=seed, mean_interarrival_s=args.mean_interarrival_s,
                                   perf_ratio=args.perf_ratio, eco_ratio=args.eco_ratio, gpu_ratio=args.gpu_ratio,
                                   kind_shares=shares, diurnal_amplitude=args.diurnal_amplitude, day_s=args.day_s))
        name = f"seed-{seed}.jsonl"
        write_trace(out / "traces" / name, jobs)
        units.append((seed, name, jobs))
    return units


def progress_bar(total: int) -> Progress:
    """A bar on stderr while the runs go; none when stderr is not a terminal (logs, CI, tests)."""
    console = Console(stderr=True)
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    TimeRemainingColumn(), console=console, disable=not console.is_terminal)


def parse_sweep(text: str) -> list[float]:
    """``--suspend-sweep``: seconds, comma-separated; empty: no sweep."""
    values = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        try:
            v = float(part)
        except ValueError:
            raise ValueError(f"--suspend-sweep: {part!r} is not a number of seconds") from None
        if not v >= 0:
            raise ValueError(f"--suspend-sweep: {part!r} must be >= 0 seconds")
        values.append(v)
    return sorted(set(values))


def run_sweep(units: Sequence[tuple[int, str, list[Job]]], nodes: Sequence[BenchNode], args: argparse.Namespace,
              sweep: Sequence[float], done: Sequence[RunResult], variant: str = CALIBRATED) -> dict[float, list[RunResult]]:
    """ES once more per suspend time and unit (A's runs of the main loop are the baseline); the main
    loop's ES runs stand for ``--suspend-after`` itself."""
    out: dict[float, list[RunResult]] = {}
    es = [r for r in done if r.policy == SWEEP_ARM]
    if args.suspend_after in sweep and len(es) == len(units):
        out[args.suspend_after] = es
    todo = [a for a in sweep if a not in out]
    with progress_bar(len(units) * len(todo)) as bar:
        task = bar.add_task("sweep", total=len(units) * len(todo))
        for after_s in todo:
            for seed, name, jobs in units:
                bar.update(task, description=f"{SWEEP_ARM} SUSPEND_AFTER={after_s:g} s {name}")
                r = run(jobs, nodes, SWEEP_ARM, seed, dt_s=args.dt, budget_frac=args.budget_frac,
                        suspend_after_s=after_s, variant=variant, faults=faults_for(args, seed),
                        forecast_day_s=args.day_s, warmup_s=args.warmup)
                out.setdefault(after_s, []).append(r)
                bar.advance(task)
            rs = out[after_s]
            print(f"  sweep SUSPEND_AFTER={after_s:g} s: {len(rs)} runs, boots {sum(r.boots for r in rs)}, "
                  f"node-hours off {sum(r.node_hours_off for r in rs):.1f}", flush=True)
    return out


@dataclass(frozen=True)
class Plan:
    """The run as the command line asks for it, checked."""

    nodes: list[BenchNode]
    policies: list[str]
    sweep: list[float]
    units: list[tuple[int, str, list[Job]]]
    """``(seed, trace name, jobs)`` per paired unit."""
    variant: str = CALIBRATED
    """The physics variant the emulator runs (``--physics-variant``; one plan per variant)."""


def plan_run(args: argparse.Namespace, variant: str = CALIBRATED) -> Plan:
    """The nodes, arms, sweep and traces from ``args`` (generated traces are written under ``--out``);
    a bad option raises ValueError (or the profile's or trace's error) naming the flag."""
    nodes = parse_nodes(args.nodes)
    policies = parse_policies(args.policies)
    if args.seeds < 1:
        raise ValueError("--seeds: need at least 1 (20 or more for meaningful CIs)")
    if not args.dt > 0:
        raise ValueError("--dt: must be > 0")
    sweep = parse_sweep(args.suspend_sweep)
    if not args.warmup >= 0:
        raise ValueError(f"--warmup: {args.warmup:g} must be >= 0 seconds")
    if not args.suspend_after >= 0:
        raise ValueError(f"--suspend-after: {args.suspend_after:g} must be >= 0 seconds")
    faults_for(args, 0)  # the rates' ranges, before any run
    (args.out / "traces").mkdir(parents=True, exist_ok=True)
    return Plan(nodes, policies, sweep, load_traces(args, args.out, max_cpus=int(max(n.cpus for n in nodes)),
                                                     max_gpus=max(n.gpus for n in nodes)), variant)


def announce(args: argparse.Namespace, plan: Plan) -> str:
    """Print what runs (the clock, the cluster, the traces, each arm's settings); returns the traces' line."""
    print(ACCELERATED_NOTE.format(dt=args.dt))
    if args.trace is not None:
        source = f"traces: {len(plan.units)} from {args.trace} ({', '.join(f'{s}={n}' for s, n, _ in plan.units)})"
    else:
        source = (f"trace: {args.jobs} jobs, mean inter-arrival {args.mean_interarrival_s:g} s, perf {args.perf_ratio:g} / "
                  f"eco {args.eco_ratio:g} / gpu {args.gpu_ratio:g}{'; kinds ' + args.kind_shares if args.kind_shares else ''}"
                  f"{f'; daily cycle amplitude {args.diurnal_amplitude:g}, period {args.day_s:g} s' if args.diurnal_amplitude else ''}"
                  f"; seeds {args.first_seed}..{args.first_seed + args.seeds - 1}")
    print(f"cluster: {len(plan.nodes)} nodes ({args.nodes}); {source}; policies {','.join(plan.policies)}; "
          f"dt {args.dt:g} s{f'; preset {args.preset}' if args.preset else ''}")
    print(f"physics variant: {VARIANTS[plan.variant].describe()}; the controller keeps its own model")
    for pol in plan.policies:
        print("  " + describe_settings(pol, plan.nodes, args.budget_frac))
    return source


def faults_for(args: argparse.Namespace, seed: int) -> BmcFaults:
    """The emulated BMCs' faults of one run (every arm of a seed draws the same answers)."""
    return BmcFaults(args.bmc_failure_rate, args.bmc_hang_rate, seed)


def run_all(args: argparse.Namespace, plan: Plan) -> tuple[list[RunResult], dict[int, str]]:
    """Every arm on every unit, each run's figures printed as it ends; the energy of each seed's runs
    extended to its common window."""
    results: list[RunResult] = []
    trace_of: dict[int, str] = {}
    with progress_bar(len(plan.units) * len(plan.policies)) as bar:
        task = bar.add_task("runs", total=len(plan.units) * len(plan.policies))
        for seed, name, jobs in plan.units:
            trace_of[seed] = name
            for pol in plan.policies:
                bar.update(task, description=f"{name} {pol}")
                t0 = time.monotonic()
                faults = faults_for(args, seed)
                r = run(jobs, plan.nodes, pol, seed, dt_s=args.dt, budget_frac=args.budget_frac,
                        suspend_after_s=args.suspend_after, variant=plan.variant, faults=faults,
                        forecast_day_s=args.day_s, warmup_s=args.warmup)
                results.append(r)
                bar.advance(task)
                print(f"  {name} {pol}: IT {r.it_energy_kwh:.2f} kWh, makespan {r.makespan_s / 3600:.2f} h, "
                      f"{r.jobs_completed}/{r.jobs_total} jobs, p95 slowdown {r.p95_slowdown:.2f}, {r.cap_writes} cap writes "
                      f"({time.monotonic() - t0:.1f} s wall){faults.summary()}", flush=True)
    for seed in {r.seed for r in results}:
        window = max(r.end_s for r in results if r.seed == seed)
        for r in results:
            if r.seed == seed:
                r.extend_to_window(window)
    return results, trace_of


def sweep_tradeoff(out: Path, args: argparse.Namespace, plan: Plan, results: Sequence[RunResult]) -> None:
    """``--suspend-sweep``: the sweep arm again at each SUSPEND_AFTER, its trade-off written and printed."""
    swept = run_sweep(plan.units, plan.nodes, args, plan.sweep, results, plan.variant)
    c = curve([r for r in results if r.policy == BASELINE], swept)
    with (out / "tradeoff.csv").open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(TRADEOFF_HEADER)
        w.writerows(tradeoff_csv_rows(SWEEP_ARM, c))
    tradeoff_plot(out, SWEEP_ARM, c)
    print(f"\n{SWEEP_ARM} trade-off against SUSPEND_AFTER (paired vs A, mean [95 % CI]):")
    for after_s, figs in c.items():
        en, m, wt = figs["open_facility_energy_pct"], figs["makespan_pct"], figs["p95_wait_added_s"]
        print(f"  {after_s:>6g} s: open facility energy/work {en.mean:+.1f} % [{en.low:+.1f}, {en.high:+.1f}], "
              f"makespan "
              f"{m.mean:+.1f} %, p95 wait added {wt.mean:+.0f} s, boots {figs['boots'].mean:.1f}")
    print(f"wrote {out / 'tradeoff.csv'}, {out / 'tradeoff.png'}")


def run_variant(args: argparse.Namespace, plan: Plan) -> list[RunResult]:
    """Every arm on every unit under ``plan.variant``: the runs, the files under ``args.out`` and the tables."""
    out: Path = args.out
    source = announce(args, plan)
    started = time.monotonic()
    results, trace_of = run_all(args, plan)
    summary = summarise(results, plan.policies)
    settings = [describe_settings(pol, plan.nodes, args.budget_frac) for pol in plan.policies]
    alloc = allocation_lines(results, plan.policies)
    note = (f"{len(plan.nodes)} nodes ({args.nodes}); {source}; dt {args.dt:g} s"
            f"{f'; preset {args.preset}' if args.preset else ''}; physics variant {plan.variant}")
    written = write_outputs(out, results, plan.policies, summary, trace_of, settings, summary_note=note,
                            extra_sections=["## GPU allocation per arm", "", *(f"- {line}" for line in alloc), ""])
    print_tables(results, plan.policies, summary, written, len(plan.units))
    print(f"\nGPU allocation (physics variant {plan.variant}):")
    for line in alloc:
        print("  " + line)
    if plan.sweep:
        sweep_tradeoff(out, args, plan, results)
    paired_csv, png, split_png, paired_png = written.files
    print(f"\nwrote {out / 'runs.csv'}, {out / 'summary.csv'}, {paired_csv}, {out / 'paired_seeds.csv'}, "
          f"{out / 'results.md'}, {png}, {split_png}, {paired_png} ({time.monotonic() - started:.0f} s wall)")
    return results


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    preset: Preset | None = apply_preset(parser, argv)
    args = parser.parse_args(argv)
    root: Path = args.out
    try:
        variants = parse_variants(args.physics_variant)
        if args.estimates_arm not in ARMS:
            raise ValueError(f"--estimates-arm: {args.estimates_arm!r} is not one of {', '.join(ARMS)}")
        plans = []
        for v in variants:
            args.out = root if len(variants) == 1 else root / v
            plans.append((args.out, plan_run(args, v)))
    except (ValueError, ProfileError, TraceError) as e:
        print(f"joulie-bench: {e}", file=sys.stderr)
        return 2
    if preset is not None:
        print(f"preset {preset.name}: {preset.summary}")
    by_variant = {}
    for out, plan in plans:
        args.out = out
        by_variant[plan.variant] = run_variant(args, plan)
    if args.estimates_plot is not None:
        plot_estimates(args, plans[0][1])
    if len(variants) > 1:
        (root / "variants.md").write_text(variant_summary(by_variant, plans[0][1].policies))
        print(f"\nwrote {root / 'variants.md'} (one row per variant and arm)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
