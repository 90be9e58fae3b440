"""The benchmark's human-readable outputs: ``results.md`` (the tables in Markdown),
``energy_split.png`` (IT energy to completion per policy, stacked idle/dynamic by device kind) and
``paired_change.png`` (each policy's paired change against A, energy against time, with CIs).
The figures are the ones ``paired.csv`` and ``summary.csv`` hold; nothing here computes anew."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

from joulie_bench.arms import ARMS, BASELINE
from joulie_bench.result import DEVICE_KINDS, RunResult
from joulie_bench.stats import ci95

PAIRED_COLUMNS = (
    ("completion", "facility_energy", "facility energy"),
    ("completion", "makespan", "makespan"),
    ("completion", "p95_slowdown", "p95 slowdown"),
    ("open", "facility_energy", "facility energy per work"),
    ("open", "throughput", "throughput"),
    ("open", "p95_slowdown", "p95 slowdown"),
)


def _cell(mean: str, low: str, high: str) -> str:
    m, lo, hi = float(mean), float(low), float(high)
    if math.isnan(m):
        return "n/a"
    mark = " *" if not math.isnan(lo) and (hi < 0 or lo > 0) else ""
    ci = f" [{lo:+.1f}, {hi:+.1f}]" if not math.isnan(lo) else ""
    return f"{m:+.1f}{ci}{mark}"


def markdown_report(results: Sequence[RunResult], policies: Sequence[str], paired: Sequence[Sequence[str]],
                    summary_note: str, settings: Sequence[str], sections: Sequence[str] = ()) -> str:
    """``paired``: ``paired.csv``'s rows (``paired.paired_rows``) for the same results."""
    rows = {(r[0], r[1], r[2]): r for r in paired}
    n = len({r.seed for r in results})
    out = [f"# joulie-bench results ({n} traces or seeds)", "", summary_note, "",
           "## Change against A, paired per seed (mean % [95 % CI], * = the CI excludes 0)", "",
           "Completion: the trace run to its last job. Open: the steady state, from the end of the warm-up "
           "to the last arrival; energy per ideal job-hour done inside the window.", "",
           "| policy | " + " | ".join(f"{reg}: {label}" for reg, _, label in PAIRED_COLUMNS) + " |",
           "|---|" + "---|" * len(PAIRED_COLUMNS)]
    for pol in policies:
        if pol == BASELINE:
            continue
        cells = []
        for reg, metric, _ in PAIRED_COLUMNS:
            r = rows.get((pol, reg, metric))
            cells.append(_cell(r[3], r[4], r[5]) if r else "n/a")
        out.append(f"| {pol} {ARMS[pol].name} | " + " | ".join(cells) + " |")
    out += ["", "## Absolute figures (mean ± 95 % CI half-width over the seeds)", "",
            "| policy | facility kWh | IT kWh | idle IT kWh | dynamic IT kWh | makespan h | jobs done | p50 / p95 / p99 slowdown |",
            "|---|---|---|---|---|---|---|---|"]
    for pol in policies:
        rs = [r for r in results if r.policy == pol]
        if not rs:
            continue
        def est(values: list[float], d: int) -> str:
            e = ci95(values)
            return e.fmt(d)
        slow = "/".join(f"{ci95([r.slowdown_pct(q) for r in rs]).mean:.2f}" for q in (50, 95, 99))
        out.append(f"| {pol} {ARMS[pol].name} | {est([r.facility_energy_kwh for r in rs], 2)} | "
                   f"{est([r.it_energy_kwh for r in rs], 2)} | {est([r.idle_energy_kwh for r in rs], 2)} | "
                   f"{est([r.dynamic_energy_kwh for r in rs], 2)} | {est([r.makespan_s / 3600 for r in rs], 2)} | "
                   f"{est([float(r.jobs_completed) for r in rs], 1)} | {slow} |")
    out += ["", *sections, "## Settings", "", *(f"- {line}" for line in settings), "",
            "Files: `paired.csv` (the table above, every metric), `paired_seeds.csv` (each seed's own change), "
            "`runs.csv`, `summary.csv`, `power.csv`, `energy_vs_makespan.png`, `energy_split.png`, `paired_change.png`.", ""]
    return "\n".join(out)


def plot_energy_split(out: Path, results: Sequence[RunResult], policies: Sequence[str]) -> Path:
    """IT energy to completion per policy (mean over seeds), stacked: idle and dynamic per device kind."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 5))
    colours = {"cpu": "#4C72B0", "gpu": "#55A868", "other": "#8172B2"}
    xs = list(range(len(policies)))
    bottoms = [0.0] * len(policies)
    for kind in DEVICE_KINDS:
        for part, alpha, hatch in (("idle", 0.45, "//"), ("dynamic", 1.0, "")):
            heights = []
            for pol in policies:
                rs = [r for r in results if r.policy == pol]
                idle = [r.idle_by_kind_kwh.get(kind, 0.0) for r in rs]
                total = [r.energy_by_kind_kwh.get(kind, 0.0) for r in rs]
                vals = idle if part == "idle" else [t - i for t, i in zip(total, idle, strict=True)]
                heights.append(sum(vals) / len(vals) if vals else 0.0)
            ax.bar(xs, heights, bottom=bottoms, color=colours[kind], alpha=alpha, hatch=hatch,
                   label=f"{kind} {part}", edgecolor="white")
            bottoms = [b + h for b, h in zip(bottoms, heights, strict=True)]
    ax.set_xticks(xs, [p for p in policies])
    ax.set_ylabel("IT energy to completion (kWh, mean over seeds)")
    ax.set_title("Where the energy goes: idle and dynamic, by device kind")
    ax.set_ylim(top=max(bottoms) * 1.22)  # room for the legend above the tallest bar
    ax.legend(ncol=3, fontsize=8, loc="upper center")
    ax.grid(axis="y", alpha=0.3)
    path = out / "energy_split.png"
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_paired(out: Path, rows: Sequence[Sequence[str]]) -> Path:
    """``paired_change.png``: each policy's paired change against A, energy against time, with the
    95 % CIs of both (``paired.csv``'s rows): completion (facility energy vs makespan) and the open
    regime (facility energy per work vs throughput). Left of 0 and below 0 is better; A sits at (0, 0)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(12, 5))
    by = {(r[0], r[1], r[2]): r for r in rows}
    policies = list(dict.fromkeys(r[0] for r in rows))
    panels = (("completion", "makespan", "facility_energy", "makespan change vs A (%)", "facility energy change vs A (%)"),
              ("open", "throughput", "facility_energy", "throughput change vs A (%)",
               "facility energy per work change vs A (%)"))
    for ax, (regime, xm, ym, xl, yl) in zip(axes, panels, strict=True):
        for pol in policies:
            x, y = by.get((pol, regime, xm)), by.get((pol, regime, ym))
            if x is None or y is None or math.isnan(float(x[3])) or math.isnan(float(y[3])):
                continue
            xs, ys = float(x[3]), float(y[3])
            xerr = [[xs - float(x[4])], [float(x[5]) - xs]] if not math.isnan(float(x[4])) else None
            yerr = [[ys - float(y[4])], [float(y[5]) - ys]] if not math.isnan(float(y[4])) else None
            ax.errorbar(xs, ys, xerr=xerr, yerr=yerr, fmt="o", capsize=4, label=f"{pol}: {ARMS[pol].name}")
        ax.axhline(0, color="grey", lw=0.8)
        ax.axvline(0, color="grey", lw=0.8)
        ax.set_xlabel(xl)
        ax.set_ylabel(yl)
        ax.set_title(f"{regime}: paired change against A (mean, 95 % CI)")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    path = out / "paired_change.png"
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
