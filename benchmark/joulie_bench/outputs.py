"""What a benchmark run writes and prints: ``runs.csv``, ``summary.csv``, ``paired.csv``,
``paired_seeds.csv``, ``power.csv``, ``receipts.csv``, ``results.md`` and the plots (``write_outputs``), and the tables
on the terminal (``print_tables``). The figures come from ``paired``, ``powerreport`` and ``report``."""

from __future__ import annotations

import csv
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from joulie_bench.arms import ARMS, BASELINE, SLOWDOWN_BUDGET_PCT
from joulie_bench.paired import PAIRED_HEADER, paired_rows, per_seed_changes
from joulie_bench.powerreport import POWER_HEADER, power_rows
from joulie_bench.powerreport import csv_rows as power_csv_rows
from joulie_bench.powerreport import markdown as power_markdown
from joulie_bench.receiptreport import RECEIPTS_HEADER
from joulie_bench.receiptreport import csv_rows as receipt_csv_rows
from joulie_bench.receiptreport import markdown as receipt_markdown
from joulie_bench.report import markdown_report, plot_energy_split, plot_paired
from joulie_bench.result import DEVICE_KINDS, RunResult
from joulie_bench.stats import Estimate, ci95
from joulie_bench.taushare import markdown as tau_markdown
from joulie_bench.taushare import tau_shares

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
    base = {r.seed: float(getattr(r, key)) for r in results if r.policy == BASELINE}
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
                    "energy_per_job_kwh", "p50_slowdown", "p99_slowdown", "physics_variant", "gpu_allocated",
                    "open_gpu_allocated", "p95_wait_s", "boots", "node_hours_off",
                    "open_facility_energy_kwh", "open_work_h"])
        for r in results:
            w.writerow([r.policy, r.seed, f"{r.it_energy_kwh:.4f}", f"{r.facility_energy_kwh:.4f}", f"{r.makespan_s:.1f}",
                        r.jobs_total, r.jobs_completed, f"{r.p95_slowdown:.4f}", f"{r.mean_it_power_w:.1f}", r.reconciles,
                        r.cap_writes, f"{r.end_s:.0f}", f"{r.idle_it_w:.1f}", f"{r.window_it_energy_kwh:.4f}",
                        f"{r.window_facility_energy_kwh:.4f}", trace_of.get(r.seed, ""), f"{r.idle_energy_kwh:.4f}",
                        f"{r.dynamic_energy_kwh:.4f}",
                        *(f"{d.get(k, 0.0):.4f}" for k in DEVICE_KINDS for d in (r.energy_by_kind_kwh, r.idle_by_kind_kwh)),
                        f"{r.energy_per_job_kwh:.5f}", f"{r.slowdown_pct(50):.4f}", f"{r.slowdown_pct(99):.4f}",
                        r.variant, f"{r.gpu_utilisation:.4f}", f"{r.open_gpu_utilisation:.4f}",
                        f"{r.wait_pct(95):.1f}", r.boots, f"{r.node_hours_off:.3f}",
                        f"{r.open_facility_energy_kwh:.4f}", f"{r.open_work_h:.4f}"])
    with (out / "summary.csv").open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["policy", "name", "metric", "mean", "ci95_low", "ci95_high", "n"])
        for pol, est in summary.items():
            for key, _, _ in METRICS + EXTRA_METRICS:
                e = est[key]
                w.writerow([pol, ARMS[pol].name, key, f"{e.mean:.6g}", f"{e.low:.6g}", f"{e.high:.6g}", e.n])


def plot(out: Path, summary: dict[str, dict[str, Estimate]]) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 5))
    for pol, est in summary.items():
        e, m = est["facility_energy_kwh"], est["makespan_s"]
        xerr = 0.0 if m.half_width != m.half_width else m.half_width / 3600
        yerr = 0.0 if e.half_width != e.half_width else e.half_width
        ax.errorbar(m.mean / 3600, e.mean, xerr=xerr, yerr=yerr, fmt="o", capsize=4, label=f"{pol}: {ARMS[pol].name}")
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


def write_paired(out: Path, rows: Sequence[Sequence[str]]) -> Path:
    path = out / "paired.csv"
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(PAIRED_HEADER)
        w.writerows(rows)
    return path


@dataclass(frozen=True)
class Written:
    """What ``write_outputs`` wrote that the printed tables and the last line name."""

    paired: Sequence[Sequence[str]]
    """``paired.csv``'s rows."""
    power_section: Sequence[str]
    """The power states' Markdown section (its table is printed too)."""
    util: str
    """Allocated CPU / GPU under A."""
    files: Sequence[Path]
    """paired.csv and the three plots, in the order the last line names them."""
    tau_section: Sequence[str] = ()
    """The jobs slowed past τ per arm, and the power budget's part (``taushare``), as Markdown lines."""
    receipt_section: Sequence[str] = ()
    """The energy receipts against truth per arm (``receiptreport``), as Markdown lines."""


def write_outputs(out: Path, results: Sequence[RunResult], policies: Sequence[str],
                  summary: dict[str, dict[str, Estimate]], trace_of: dict[int, str], settings: Sequence[str],
                  summary_note: str, extra_sections: Sequence[str] = ()) -> Written:
    """Every file of the run under ``out``. ``summary_note``: the run's cluster and traces, for results.md;
    ``extra_sections``: Markdown lines results.md adds after the power states."""
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
    prows = power_rows(results, policies)
    with (out / "power.csv").open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(POWER_HEADER)
        w.writerows(power_csv_rows(prows))
    section = power_markdown(prows)
    with (out / "receipts.csv").open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(RECEIPTS_HEADER)
        w.writerows(receipt_csv_rows(results))
    receipts = receipt_markdown(results, policies)
    tau = tau_markdown(tau_shares(results, policies, SLOWDOWN_BUDGET_PCT), SLOWDOWN_BUDGET_PCT)
    util = " / ".join(f"{ci95([getattr(r, k) for r in results if r.policy == BASELINE]).mean * 100:.0f} %"
                      for k in ("cpu_utilisation", "gpu_utilisation"))
    (out / "results.md").write_text(markdown_report(results, policies, rows,
                                                    summary_note=f"{summary_note}; allocated CPU / GPU under A: {util}",
                                                    settings=settings,
                                                    sections=[*section, *tau, *receipts, *extra_sections]))
    return Written(rows, section, util, (paired_csv, png, split_png, paired_png), tau, receipts)


def print_tables(results: Sequence[RunResult], policies: Sequence[str], summary: dict[str, dict[str, Estimate]],
                 written: Written, n_units: int) -> None:
    """The run's figures on the terminal: the absolute ones, the energy split, the paired changes
    against A in both regimes, and the power states."""
    print(f"\nResults over {n_units} seeds: mean ± 95 % CI half-width (Student t, {n_units - 1} df)")
    header = f"{'policy':<24}" + "".join(f"{label:>21}" for _, label, _ in METRICS)
    print(header)
    for pol, est in summary.items():
        print(f"{pol + ' ' + ARMS[pol].name:<24}" + "".join(f"{est[k].fmt(d):>21}" for k, _, d in METRICS))
    print("\nEnergy split (idle = each node's unloaded, uncapped power while powered, standby while off; dynamic = the rest) and "
          "slowdown spread, to completion:")
    print(f"{'policy':<24}" + "".join(f"{label:>21}" for _, label, _ in EXTRA_METRICS))
    for pol, est in summary.items():
        print(f"{pol + ' ' + ARMS[pol].name:<24}" + "".join(f"{est[k].fmt(d):>21}" for k, _, d in EXTRA_METRICS))
    if BASELINE in policies:
        _print_saved(results, policies)
    print("\nOpen system in steady state (window: warm-up over to the last arrival), paired change vs A:")
    for row in written.paired:
        if row[1] == "open" and row[2] in ("facility_energy", "throughput", "p95_slowdown"):
            print(f"  {row[0]:<12} {row[2]:<16} {float(row[3]):+7.2f} % [{float(row[4]):+.2f}, {float(row[5]):+.2f}]"
                  f" (n={row[6]})")
    print("  (open facility_energy = facility kWh per ideal job-hour done inside the window; throughput = job-hours per hour)")
    print(f"\nPower states (allocated CPU / GPU under A: {written.util}):")
    for line in written.power_section[4:]:
        print("  " + line)
    for line in written.tau_section:
        print("  " + line.removeprefix("## "))
    for line in written.receipt_section:
        print("  " + line.removeprefix("## "))


def _print_saved(results: Sequence[RunResult], policies: Sequence[str]) -> None:
    print("\nEnergy saved vs A, and at what makespan cost (paired per seed, mean ± 95 % CI):")
    for pol in policies:
        if pol == BASELINE:
            continue
        keys = ("it_energy_kwh", "facility_energy_kwh", "window_facility_energy_kwh", "makespan_s", "p95_slowdown",
                "mean_it_power_w")
        ests = [paired(results, pol, k) for k in keys]
        if any(x is None for x in ests):
            continue
        it, fac, win, mk, p95, pw = (x.fmt(1) if x is not None else "" for x in ests)
        print(f"  {pol} {ARMS[pol].name:<18} to completion: IT {it} %, facility {fac} %; common window: facility "
              f"{win} %; makespan {mk} %, p95 slowdown {p95} %, mean IT power {pw} %")
    print("  (changes vs A; negative energy = saved, positive makespan = slower. 'to completion' integrates each run\n"
          "   until its last job ends; 'common window' runs every policy of a seed to that seed's longest run, a\n"
          "   faster run idling for the rest, as a fixed-window experiment measures it)")
