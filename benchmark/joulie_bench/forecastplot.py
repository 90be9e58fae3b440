"""Issue 37's two plots: the controller's demand forecast against the arrivals that came, and the trade-off
(energy against p95 added wait) of the forecast power policy beside the reactive one.

    python -m joulie_bench.forecastplot forecast --trace DIR/traces/seed-1011.jsonl --day-s 21600 --out OUT
    python -m joulie_bench.forecastplot tradeoff --out OUT LABEL=SUSPEND_AFTER=BENCH_OUT_DIR ...

``forecast`` runs one arm (default SF) on the trace and logs the forecast the controller made at each
reconcile (``run(forecast_log=...)``); the realised arrivals are the trace's submits in the same bins,
split as the warm pool splits the demand: Pods that request no GPU (``*``) and GPU Pods (every GPU pool
together). ``tradeoff`` reads benchmark outputs (``paired.csv``, ``power.csv``) run at several
``--suspend-after`` values and draws, per suspend arm, the facility energy change against A (completion
regime) against the p95 added wait, one point per SUSPEND_AFTER.
"""

from __future__ import annotations

import argparse
import csv
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

from joulie_bench.cli import parse_nodes
from joulie_bench.sim import run
from joulie_workload.trace import Job, load_trace

CPU_KIND = "Pods without GPU (*)"
GPU_KIND = "GPU Pods (all GPU pools)"


def realised_vs_forecast(
    jobs: Sequence[Job], log: Sequence[tuple[float, str, float]], bin_s: float, gpu_pools: set[str]
) -> list[tuple[float, str, float, float]]:
    """Per bin and kind: (bin start h, kind, realised Pods/min, mean forecast Pods/min made in the bin)."""
    realised: dict[tuple[int, str], int] = defaultdict(int)
    for j in jobs:
        realised[(int(j.submit_s // bin_s), GPU_KIND if j.requests.gpu > 0 else CPU_KIND)] += 1
    made: dict[tuple[int, int, str], float] = defaultdict(float)  # (bin, tick, kind) -> summed over pools
    for t, pool, rate in log:
        kind = CPU_KIND if pool == "*" else GPU_KIND if pool in gpu_pools else ""
        if kind:
            made[(int(t // bin_s), int(t), kind)] += rate
    per_bin: dict[tuple[int, str], list[float]] = defaultdict(list)
    for (b, _, kind), rate in made.items():
        per_bin[(b, kind)].append(rate)
    last = max((b for b, _ in realised), default=-1)
    rows = []
    for b in range(last + 1):
        for kind in (CPU_KIND, GPU_KIND):
            f = per_bin.get((b, kind), [])
            rows.append((b * bin_s / 3600.0, kind, realised[(b, kind)] / (bin_s / 60.0), sum(f) / len(f) if f else 0.0))
    return rows


def mean_abs_error_pct(rows: Sequence[tuple[float, str, float, float]], kind: str, skip_bins: int = 2) -> float:
    """The forecast's mean absolute error, % of the mean realised rate, after the first bins (no history)."""
    pairs = [(r, f) for _, k, r, f in rows if k == kind][skip_bins:]
    mean = sum(r for r, _ in pairs) / len(pairs) if pairs else 0.0
    return 100.0 * sum(abs(r - f) for r, f in pairs) / len(pairs) / mean if pairs and mean > 0 else float("nan")


def plot_forecast(rows: Sequence[tuple[float, str, float, float]], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 1, figsize=(9, 6), sharex=True)
    for ax, kind in zip(axes, (CPU_KIND, GPU_KIND), strict=True):
        pts = [(h, r, f) for h, k, r, f in rows if k == kind]
        ax.step([p[0] for p in pts], [p[1] for p in pts], where="post", label="realised arrivals")
        ax.step([p[0] for p in pts], [p[2] for p in pts], where="post", label="forecast (mean of the bin's ticks)")
        ax.set_ylabel("Pods / min")
        ax.set_title(f"{kind}: MAE {mean_abs_error_pct(rows, kind):.0f} % of the mean rate", fontsize=9)
        ax.legend(fontsize=8)
    axes[-1].set_xlabel("virtual hours")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def tradeoff_rows(specs: Sequence[str]) -> list[tuple[str, float, str, float, float]]:
    """(label, SUSPEND_AFTER s, policy, facility energy change %, p95 added wait s) per suspend arm and spec
    ``LABEL=SUSPEND_AFTER=DIR``."""
    out = []
    for spec in specs:
        label, after, folder = spec.split("=", 2)
        with open(Path(folder) / "paired.csv") as f:
            energy = {
                r["policy"]: float(r["mean_change_pct"])
                for r in csv.DictReader(f)
                if r["regime"] == "completion" and r["metric"] == "facility_energy"
            }
        with open(Path(folder) / "power.csv") as f:
            wait = {r["policy"]: float(r["p95_wait_added_s"]) for r in csv.DictReader(f)}
        for pol in sorted(energy):
            if pol in wait:
                out.append((label, float(after), pol, energy[pol], wait[pol]))
    return out


def plot_tradeoff(rows: Sequence[tuple[str, float, str, float, float]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 5))
    for pol in sorted({r[2] for r in rows}):
        pts = sorted((r[1], r[4], r[3]) for r in rows if r[2] == pol)
        ax.plot([p[1] for p in pts], [p[2] for p in pts], marker="o", label=pol)
        for after, w, e in pts:
            ax.annotate(f"{after:g} s", (w, e), fontsize=7, textcoords="offset points", xytext=(4, 3))
    ax.axvline(60.0, color="grey", linestyle=":", label="target: p95 added wait 60 s")
    ax.axhline(-20.0, color="grey", linestyle="--", label="target: S -20 %")
    ax.set_xlabel("p95 added wait against A, s")
    ax.set_ylabel("facility energy change against A, % (completion)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="joulie_bench.forecastplot", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = p.add_subparsers(dest="cmd", required=True)
    f = sub.add_parser("forecast")
    f.add_argument("--trace", type=Path, required=True)
    f.add_argument("--nodes", default="intel-xeon-2s-rapl*4,nvidia-h100-nvl-8gpu*2")
    f.add_argument("--arm", default="SF")
    f.add_argument("--day-s", type=float, default=86400.0)
    f.add_argument("--bin-s", type=float, default=1800.0)
    f.add_argument("--seed", type=int, default=0)
    f.add_argument("--out", type=Path, required=True)
    t = sub.add_parser("tradeoff")
    t.add_argument("--out", type=Path, required=True)
    t.add_argument("specs", nargs="+", help="LABEL=SUSPEND_AFTER=BENCH_OUT_DIR")
    args = p.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    if args.cmd == "forecast":
        jobs = load_trace(args.trace)
        nodes = parse_nodes(args.nodes)
        log: list[tuple[float, str, float]] = []
        run(jobs, nodes, args.arm, args.seed, forecast_day_s=args.day_s, forecast_log=log)
        gpu_pools = {n.profile.name for n in nodes if n.gpus}
        rows = realised_vs_forecast(jobs, log, args.bin_s, gpu_pools)
        with open(args.out / "forecast.csv", "w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(["bin_start_h", "kind", "realised_per_min", "forecast_per_min"])
            w.writerows([(f"{h:.2f}", k, f"{r:.3f}", f"{fc:.3f}") for h, k, r, fc in rows])
        plot_forecast(rows, args.out / "forecast.png", f"{args.trace.name}, arm {args.arm}: forecast vs realised")
        for kind in (CPU_KIND, GPU_KIND):
            print(f"{kind}: mean absolute error {mean_abs_error_pct(rows, kind):.1f} % of the mean realised rate")
    else:
        rows_t = tradeoff_rows(args.specs)
        with open(args.out / "tradeoff.csv", "w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(["label", "suspend_after_s", "policy", "facility_energy_change_pct", "p95_wait_added_s"])
            w.writerows(rows_t)
        plot_tradeoff(rows_t, args.out / "tradeoff.png")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
