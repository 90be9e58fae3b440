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
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from joulie_bench.paired import PAIRED_HEADER, paired_rows, per_seed_changes
from joulie_bench.powerreport import POWER_HEADER, power_rows
from joulie_bench.powerreport import csv_rows as power_csv_rows
from joulie_bench.powerreport import markdown as power_markdown
from joulie_bench.report import markdown_report, plot_energy_split, plot_paired
from joulie_bench.sim import DEVICE_KINDS, POLICIES, SUSPEND_AFTER_S, BenchNode, RunResult, describe_settings, run
from joulie_bench.stats import Estimate, ci95
from joulie_bench.tradeoff import TRADEOFF_HEADER, curve
from joulie_bench.tradeoff import csv_rows as tradeoff_csv_rows
from joulie_bench.tradeoff import plot as tradeoff_plot
from joulie_hwprofiles.schema import ProfileError, builtin_profile
from joulie_workload.extract import ExtractOptions, extract_swf
from joulie_workload.gen import GenOptions, generate
from joulie_workload.kinds import parse_shares
from joulie_workload.trace import Job, TraceError, load_trace, write_trace

METRICS = (
    ("it_energy_kwh", "IT energy kWh", 2),
    ("facility_energy_kwh", "facility kWh", 2),
    ("window_facility_energy_kwh", "facility kWh window", 2),
    ("makespan_s", "makespan s", 0),
    ("mean_it_power_w", "mean IT power W", 0),
    ("jobs_completed", "jobs completed", 1),
    ("p95_slowdown", "p95 slowdown", 2),
)
EXTRA_METRICS = (
    ("idle_energy_kwh", "idle IT kWh", 2),
    ("dynamic_energy_kwh", "dynamic IT kWh", 2),
    ("energy_per_job_kwh", "facility kWh/job", 3),
    ("p50_slowdown", "p50 slowdown", 2),
    ("p99_slowdown", "p99 slowdown", 2),
)
"""In summary.csv and the second printed table: the energy split and the slowdown spread."""
ACCELERATED_NOTE = (
    "NOTE: accelerated clock. Virtual time, stepped {dt:g} s per tick in one process; the decisions come from the\n"
    "real code: joulie_controller.reconcile (policy, FSM guard, caps, twin) every 60 s, joulie_extender.scoring for\n"
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
                   help=f"comma-separated policy ids of {', '.join(POLICIES)} (letters alone, 'ABD', also work; A, the "
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
    p.add_argument("--suspend-sweep", default="",
                   help="comma-separated SUSPEND_AFTER values in seconds, e.g. '120,300,600,1200': ES runs again at each "
                   "and tradeoff.csv / tradeoff.png show energy against waiting")
    p.add_argument("--out", type=Path, required=True)
    return p


def _figure(r: RunResult, key: str) -> float:
    if key in ("p50_slowdown", "p99_slowdown"):
        return r.slowdown_pct(float(key[1:3]))
    return float(getattr(r, key))


def summarise(results: Sequence[RunResult], policies: Sequence[str]) -> dict[str, dict[str, Estimate]]:
    out: dict[str, dict[str, Estimate]] = {}
    for pol in policies:
        rows = [r for r in results if r.policy == pol]
        out[pol] = {key: ci95([_figure(r, key) for r in rows]) for key, _, _ in METRICS + EXTRA_METRICS}
    return out


def paired(results: Sequence[RunResult], pol: str, key: str) -> Estimate | None:
    """Per-seed relative change of ``key`` against A, in %, with its 95 % CI."""
    base = {r.seed: float(getattr(r, key)) for r in results if r.policy == "A"}
    diffs = [(float(getattr(r, key)) - base[r.seed]) / base[r.seed] * 100 for r in results
             if r.policy == pol and base.get(r.seed)]
    return ci95(diffs) if diffs else None


def write_csvs(out: Path, results: Sequence[RunResult], summary: dict[str, dict[str, Estimate]],
               trace_of: dict[int, str]) -> None:
    with (out / "runs.csv").open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["policy", "seed", "it_energy_kwh", "facility_energy_kwh", "makespan_s", "jobs_total", "jobs_completed",
                    "p95_slowdown", "mean_it_power_w", "reconciles", "cap_writes", "end_s", "idle_it_w",
                    "window_it_energy_kwh", "window_facility_energy_kwh", "trace", "idle_it_energy_kwh",
                    "dynamic_it_energy_kwh", *(f"{k}_{part}_kwh" for k in DEVICE_KINDS for part in ("energy", "idle")),
                    "energy_per_job_kwh", "p50_slowdown", "p99_slowdown"])
        for r in results:
            w.writerow([r.policy, r.seed, f"{r.it_energy_kwh:.4f}", f"{r.facility_energy_kwh:.4f}", f"{r.makespan_s:.1f}",
                        r.jobs_total, r.jobs_completed, f"{r.p95_slowdown:.4f}", f"{r.mean_it_power_w:.1f}", r.reconciles,
                        r.cap_writes, f"{r.end_s:.0f}", f"{r.idle_it_w:.1f}", f"{r.window_it_energy_kwh:.4f}",
                        f"{r.window_facility_energy_kwh:.4f}", trace_of.get(r.seed, ""), f"{r.idle_energy_kwh:.4f}",
                        f"{r.dynamic_energy_kwh:.4f}",
                        *(f"{d.get(k, 0.0):.4f}" for k in DEVICE_KINDS for d in (r.energy_by_kind_kwh, r.idle_by_kind_kwh)),
                        f"{r.energy_per_job_kwh:.5f}", f"{r.slowdown_pct(50):.4f}", f"{r.slowdown_pct(99):.4f}"])
    with (out / "summary.csv").open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["policy", "name", "metric", "mean", "ci95_low", "ci95_high", "n"])
        for pol, est in summary.items():
            for key, _, _ in METRICS + EXTRA_METRICS:
                e = est[key]
                w.writerow([pol, POLICIES[pol][0], key, f"{e.mean:.6g}", f"{e.low:.6g}", f"{e.high:.6g}", e.n])


def plot(out: Path, summary: dict[str, dict[str, Estimate]]) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 5))
    for pol, est in summary.items():
        e, m = est["facility_energy_kwh"], est["makespan_s"]
        xerr = 0.0 if m.half_width != m.half_width else m.half_width / 3600
        yerr = 0.0 if e.half_width != e.half_width else e.half_width
        ax.errorbar(m.mean / 3600, e.mean, xerr=xerr, yerr=yerr, fmt="o", capsize=4, label=f"{pol}: {POLICIES[pol][0]}")
    ax.set_xlabel("makespan (h)")
    ax.set_ylabel("facility energy (kWh)")
    ax.set_title("Energy vs makespan per policy (mean, 95 % CI over seeds; accelerated clock)")
    ax.grid(alpha=0.3)
    ax.legend()
    path = out / "energy_vs_makespan.png"
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def parse_policies(text: str) -> list[str]:
    """``A,A-placement,E`` (ids, any case) or ``ABD`` (one letter each, single-letter ids only); A first,
    added when missing: it is paired.csv's baseline."""
    by_lower = {k.lower(): k for k in POLICIES}
    raw = text.split(",") if "," in text or text.strip().lower() in by_lower else list(text.strip())
    ids = list(dict.fromkeys(by_lower.get(p.strip().lower(), p.strip()) for p in raw if p.strip()))
    bad = [p for p in ids if p not in POLICIES]
    if bad or not ids:
        raise ValueError(f"--policies: {text!r}: {', '.join(map(repr, bad)) or 'no id'} is not a policy id; ids: "
                         f"{', '.join(POLICIES)} (comma-separated)")
    return ["A", *(p for p in ids if p != "A")]


def trace_files(path: Path) -> list[Path]:
    """``--trace``: the file itself, or every ``*.jsonl`` and ``*.swf`` file of a directory (sorted), each one trace."""
    if path.is_dir():
        files = sorted([*path.glob("*.jsonl"), *path.glob("*.swf")])
        if not files:
            raise ValueError(f"--trace: {path}: no *.jsonl or *.swf files in this directory")
        return files
    if not path.is_file():
        raise ValueError(f"--trace: {path}: no such file or directory")
    return [path]


def read_trace(path: Path, args: argparse.Namespace, max_cpus: int) -> list[tuple[str, list[Job]]]:
    """``(unit name, jobs)``: a JSONL trace is one unit; an SWF log goes through ``traceextract`` (cores
    capped to the largest node, so every job fits somewhere) and is cut into consecutive chunks of
    ``--swf-chunk-jobs`` jobs (each re-based to start at 0), one paired unit each."""
    if path.suffix != ".swf":
        return [(path.name, load_trace(path))]
    with path.open(encoding="utf-8", errors="replace") as f:
        got = extract_swf(f, str(path), ExtractOptions(time_scale=args.swf_time_scale, max_cpus=max_cpus))
    if not got.jobs:
        raise ValueError(f"--trace: {path}: no usable job in this SWF log (skipped: {dict(got.skipped) or 'none'})")
    size = max(1, args.swf_chunk_jobs)
    units = []
    for i in range(min(args.swf_chunks, -(-len(got.jobs) // size))):
        chunk = got.jobs[i * size:(i + 1) * size]
        t0 = chunk[0].submit_s
        units.append((f"{path.name}#{i + 1}", [j.model_copy(update={"submit_s": j.submit_s - t0}) for j in chunk]))
    kinds = Counter(j.kind for j in got.jobs)
    print(f"  {path.name}: SWF, {len(got.jobs)} jobs extracted ({sum(got.skipped.values())} skipped; kinds "
          f"{', '.join(f'{k} {n}' for k, n in sorted(kinds.items()))}), {len(units)} chunks of up to {size} jobs, "
          f"time scale 1/{args.swf_time_scale:g}, cores capped at {max_cpus}")
    return units


def load_traces(args: argparse.Namespace, out: Path, max_cpus: int = 64) -> list[tuple[int, str, list[Job]]]:
    """``(seed, trace name, jobs)`` per paired unit: the ``--trace`` files (numbered from ``--first-seed``)
    or one generated trace per seed, written under ``out/traces``."""
    if args.trace is not None:
        named = [u for f in trace_files(args.trace) for u in read_trace(f, args, max_cpus)]
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
              sweep: Sequence[float], done: Sequence[RunResult]) -> dict[float, list[RunResult]]:
    """ES once more per suspend time and unit (A's runs of the main loop are the baseline); the main
    loop's ES runs stand for ``--suspend-after`` itself."""
    out: dict[float, list[RunResult]] = {}
    es = [r for r in done if r.policy == "ES"]
    if args.suspend_after in sweep and len(es) == len(units):
        out[args.suspend_after] = es
    todo = [a for a in sweep if a not in out]
    with progress_bar(len(units) * len(todo)) as bar:
        task = bar.add_task("sweep", total=len(units) * len(todo))
        for after_s in todo:
            for seed, name, jobs in units:
                bar.update(task, description=f"ES SUSPEND_AFTER={after_s:g} s {name}")
                r = run(jobs, nodes, "ES", seed, dt_s=args.dt, budget_frac=args.budget_frac, suspend_after_s=after_s)
                out.setdefault(after_s, []).append(r)
                bar.advance(task)
            rs = out[after_s]
            print(f"  sweep SUSPEND_AFTER={after_s:g} s: {len(rs)} runs, boots {sum(r.boots for r in rs)}, "
                  f"node-hours off {sum(r.node_hours_off for r in rs):.1f}", flush=True)
    return out


def write_paired(out: Path, rows: Sequence[Sequence[str]]) -> Path:
    path = out / "paired.csv"
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(PAIRED_HEADER)
        w.writerows(rows)
    return path


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    out: Path = args.out
    try:
        nodes = parse_nodes(args.nodes)
        policies = parse_policies(args.policies)
        if args.seeds < 1:
            raise ValueError("--seeds: need at least 1 (20 or more for meaningful CIs)")
        if not args.dt > 0:
            raise ValueError("--dt: must be > 0")
        sweep = parse_sweep(args.suspend_sweep)
        if not args.suspend_after >= 0:
            raise ValueError(f"--suspend-after: {args.suspend_after:g} must be >= 0 seconds")
        (out / "traces").mkdir(parents=True, exist_ok=True)
        units = load_traces(args, out, max_cpus=int(max(n.cpus for n in nodes)))
    except (ValueError, ProfileError, TraceError) as e:
        print(f"joulie-bench: {e}", file=sys.stderr)
        return 2
    print(ACCELERATED_NOTE.format(dt=args.dt))
    if args.trace is not None:
        source = f"traces: {len(units)} from {args.trace} ({', '.join(f'{s}={n}' for s, n, _ in units)})"
    else:
        source = (f"trace: {args.jobs} jobs, mean inter-arrival {args.mean_interarrival_s:g} s, perf {args.perf_ratio:g} / "
                  f"eco {args.eco_ratio:g} / gpu {args.gpu_ratio:g}{'; kinds ' + args.kind_shares if args.kind_shares else ''}"
                  f"{f'; daily cycle amplitude {args.diurnal_amplitude:g}, period {args.day_s:g} s' if args.diurnal_amplitude else ''}"
                  f"; seeds {args.first_seed}..{args.first_seed + args.seeds - 1}")
    print(f"cluster: {len(nodes)} nodes ({args.nodes}); {source}; policies {','.join(policies)}; dt {args.dt:g} s")
    for pol in policies:
        print("  " + describe_settings(pol, nodes, args.budget_frac))
    results: list[RunResult] = []
    trace_of: dict[int, str] = {}
    started = time.monotonic()
    with progress_bar(len(units) * len(policies)) as bar:
        task = bar.add_task("runs", total=len(units) * len(policies))
        for seed, name, jobs in units:
            trace_of[seed] = name
            for pol in policies:
                bar.update(task, description=f"{name} {pol}")
                t0 = time.monotonic()
                r = run(jobs, nodes, pol, seed, dt_s=args.dt, budget_frac=args.budget_frac, suspend_after_s=args.suspend_after)
                results.append(r)
                bar.advance(task)
                print(f"  {name} {pol}: IT {r.it_energy_kwh:.2f} kWh, makespan {r.makespan_s / 3600:.2f} h, "
                      f"{r.jobs_completed}/{r.jobs_total} jobs, p95 slowdown {r.p95_slowdown:.2f}, {r.cap_writes} cap writes "
                      f"({time.monotonic() - t0:.1f} s wall)", flush=True)
    for seed in {r.seed for r in results}:
        window = max(r.end_s for r in results if r.seed == seed)
        for r in results:
            if r.seed == seed:
                r.extend_to_window(window)
    summary = summarise(results, policies)
    write_csvs(out, results, summary, trace_of)
    rows = paired_rows(results, policies)  # paired.csv, its plot, results.md and the printed open regime
    paired_csv = write_paired(out, rows)
    with (out / "paired_seeds.csv").open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(("policy", "seed", "regime", "metric", "change_pct"))
        w.writerows(per_seed_changes(results, policies))
    png = plot(out, summary)
    split_png = plot_energy_split(out, results, policies)
    paired_png = plot_paired(out, rows)
    settings = [describe_settings(pol, nodes, args.budget_frac) for pol in policies]
    prows = power_rows(results, policies)
    with (out / "power.csv").open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(POWER_HEADER)
        w.writerows(power_csv_rows(prows))
    section = power_markdown(prows)
    util = " / ".join(f"{ci95([getattr(r, k) for r in results if r.policy == 'A']).mean * 100:.0f} %"
                      for k in ("cpu_utilisation", "gpu_utilisation"))
    (out / "results.md").write_text(markdown_report(results, policies, rows, summary_note=f"{len(nodes)} nodes ({args.nodes}); "
                                                    f"{source}; dt {args.dt:g} s; allocated CPU / GPU under A: {util}",
                                                    settings=settings, sections=section))
    n = len(units)
    print(f"\nResults over {n} seeds: mean ± 95 % CI half-width (Student t, {n - 1} df)")
    header = f"{'policy':<24}" + "".join(f"{label:>21}" for _, label, _ in METRICS)
    print(header)
    for pol, est in summary.items():
        print(f"{pol + ' ' + POLICIES[pol][0]:<24}" + "".join(f"{est[k].fmt(d):>21}" for k, _, d in METRICS))
    print("\nEnergy split (idle = each node's unloaded, uncapped power while powered, standby while off; dynamic = the rest) and "
          "slowdown spread, to completion:")
    print(f"{'policy':<24}" + "".join(f"{label:>21}" for _, label, _ in EXTRA_METRICS))
    for pol, est in summary.items():
        print(f"{pol + ' ' + POLICIES[pol][0]:<24}" + "".join(f"{est[k].fmt(d):>21}" for k, _, d in EXTRA_METRICS))
    if "A" in policies:
        print("\nEnergy saved vs A, and at what makespan cost (paired per seed, mean ± 95 % CI):")
        for pol in policies:
            if pol == "A":
                continue
            keys = ("it_energy_kwh", "facility_energy_kwh", "window_facility_energy_kwh", "makespan_s", "p95_slowdown",
                    "mean_it_power_w")
            ests = [paired(results, pol, k) for k in keys]
            if any(x is None for x in ests):
                continue
            it, fac, win, mk, p95, pw = (x.fmt(1) if x is not None else "" for x in ests)
            print(f"  {pol} {POLICIES[pol][0]:<18} to completion: IT {it} %, facility {fac} %; common window: facility "
                  f"{win} %; makespan {mk} %, p95 slowdown {p95} %, mean IT power {pw} %")
        print("  (changes vs A; negative energy = saved, positive makespan = slower. 'to completion' integrates each run\n"
              "   until its last job ends; 'common window' runs every policy of a seed to that seed's longest run, a\n"
              "   faster run idling for the rest, as a fixed-window experiment measures it)")
    print("\nOpen system in steady state (window: warm-up over to the last arrival), paired change vs A:")
    for row in rows:
        if row[1] == "open" and row[2] in ("facility_energy", "throughput", "p95_slowdown"):
            print(f"  {row[0]:<12} {row[2]:<16} {float(row[3]):+7.2f} % [{float(row[4]):+.2f}, {float(row[5]):+.2f}]"
                  f" (n={row[6]})")
    print("  (open facility_energy = facility kWh per ideal job-hour done inside the window; throughput = job-hours per hour)")
    print(f"\nPower states (allocated CPU / GPU under A: {util}):")
    for line in section[4:]:
        print("  " + line)
    if sweep:
        swept = run_sweep(units, nodes, args, sweep, results)
        c = curve([r for r in results if r.policy == "A"], swept)
        with (out / "tradeoff.csv").open("w", newline="") as f:
            w = csv.writer(f)
            w.writerow(TRADEOFF_HEADER)
            w.writerows(tradeoff_csv_rows("ES", c))
        tradeoff_plot(out, "ES", c)
        print("\nES trade-off against SUSPEND_AFTER (paired vs A, mean [95 % CI]):")
        for after_s, figs in c.items():
            en, m, wt = figs["open_facility_energy_pct"], figs["makespan_pct"], figs["p95_wait_added_s"]
            print(f"  {after_s:>6g} s: open facility energy/work {en.mean:+.1f} % [{en.low:+.1f}, {en.high:+.1f}], makespan "
                  f"{m.mean:+.1f} %, p95 wait added {wt.mean:+.0f} s, boots {figs['boots'].mean:.1f}")
        print(f"wrote {out / 'tradeoff.csv'}, {out / 'tradeoff.png'}")
    print(f"\nwrote {out / 'runs.csv'}, {out / 'summary.csv'}, {paired_csv}, {out / 'paired_seeds.csv'}, "
          f"{out / 'results.md'}, {png}, {split_png}, {paired_png} ({time.monotonic() - started:.0f} s wall)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
