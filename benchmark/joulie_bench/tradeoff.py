"""The suspend trade-off curve: one suspend arm run again at several SUSPEND_AFTER values, each paired
per seed against A: energy saved against the waiting and the makespan it costs (``tradeoff.csv``,
``tradeoff.png``). Shorter suspend times switch nodes off sooner and save more, and make more
Pods wait for a boot."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from joulie_bench.paired import metric, seed_windows
from joulie_bench.result import RunResult
from joulie_bench.stats import Estimate, ci95

TRADEOFF_HEADER = ("policy", "suspend_after_s", "metric", "mean", "ci95_low", "ci95_high", "n_seeds")
CURVE_METRICS = ("open_facility_energy_pct", "facility_energy_pct", "makespan_pct", "p95_wait_added_s",
                 "mean_wait_added_s", "boots", "node_hours_off")


def _pct(x: float, b: float) -> float:
    return (x - b) / b * 100.0 if b else float("nan")


def curve(baseline: Sequence[RunResult], swept: Mapping[float, Sequence[RunResult]]) -> dict[float, dict[str, Estimate]]:
    """Per suspend time, each ``CURVE_METRICS`` figure paired per seed against ``baseline`` (A's runs)."""
    out: dict[float, dict[str, Estimate]] = {}
    for after_s, runs in sorted(swept.items()):
        windows = seed_windows([*baseline, *runs])
        base = {r.seed: r for r in baseline}
        pairs = [(r, base[r.seed]) for r in runs if r.seed in base]
        if not pairs:
            continue
        figures: dict[str, list[float]] = {m: [] for m in CURVE_METRICS}
        for r, a in pairs:
            w = windows[r.seed]
            figures["open_facility_energy_pct"].append(_pct(metric(r, "open", "facility_energy", w),
                                                            metric(a, "open", "facility_energy", w)))
            figures["facility_energy_pct"].append(_pct(r.facility_energy_kwh, a.facility_energy_kwh))
            figures["makespan_pct"].append(_pct(r.makespan_s, a.makespan_s))
            figures["p95_wait_added_s"].append(r.wait_pct(95) - a.wait_pct(95))
            figures["mean_wait_added_s"].append(r.mean_wait_s - a.mean_wait_s)
            figures["boots"].append(float(r.boots))
            figures["node_hours_off"].append(r.node_hours_off)
        out[after_s] = {m: ci95([v for v in vs if v == v] or [float("nan")]) for m, vs in figures.items()}
    return out


def csv_rows(policy: str, c: Mapping[float, Mapping[str, Estimate]]) -> list[tuple[str, ...]]:
    return [(policy, f"{after_s:g}", m, f"{e.mean:.4f}", f"{e.low:.4f}", f"{e.high:.4f}", str(e.n))
            for after_s, figs in c.items() for m, e in figs.items()]


def plot(out: Path, policy: str, c: Mapping[float, Mapping[str, Estimate]]) -> Path:
    """Energy change against A (y) over the p95 wait added (x), one point per suspend time, CIs both ways."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(12, 5))
    for ax, (xm, xl) in zip(axes, (("p95_wait_added_s", "p95 job wait added vs A (s)"),
                                   ("makespan_pct", "makespan change vs A (%)")), strict=True):
        for ym, label in (("open_facility_energy_pct", "open: facility energy per work"),
                          ("facility_energy_pct", "completion: facility energy")):
            xs = [c[a][xm] for a in c]
            ys = [c[a][ym] for a in c]
            ax.errorbar([x.mean for x in xs], [y.mean for y in ys],
                        xerr=[0.0 if x.half_width != x.half_width else x.half_width for x in xs],
                        yerr=[0.0 if y.half_width != y.half_width else y.half_width for y in ys],
                        fmt="o-", capsize=3, label=label)
            for a, x, y in zip(c, xs, ys, strict=True):
                ax.annotate(f"{a / 60:g} min", (x.mean, y.mean), textcoords="offset points", xytext=(5, 5), fontsize=8)
        ax.axhline(0, color="grey", lw=0.8)
        ax.axvline(0, color="grey", lw=0.8)
        ax.set_xlabel(xl)
        ax.set_ylabel("energy change vs A (%)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(f"{policy}: energy against waiting, per SUSPEND_AFTER (paired per seed vs A, mean and 95 % CI)")
    path = out / "tradeoff.png"
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
