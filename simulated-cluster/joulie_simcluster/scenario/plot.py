"""The scenario's timeline plot (timeline.png): cluster power, caps, jobs and the facility over the
run, one panel each, every step marked where it began. Reads the rows timeline.csv holds; the only
I/O is the PNG written (matplotlib's Agg backend: no display needed)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # (after the backend is chosen)

Row = Mapping[str, float | str | None]

Panel = tuple[str, tuple[tuple[str, str], ...], str, tuple[tuple[str, str], ...]]
"""(left axis label, its series, right axis label, its series); a series is (timeline.csv column, legend)."""

PANELS: tuple[Panel, ...] = (
    ("cluster power (W)", (("truth_power_w", "emulator truth"), ("prometheus_power_w", "Prometheus"),
                           ("twins_power_w", "NodeTwins (measured)")), "", ()),
    ("caps in the files (W, summed)", (("cpu_cap_w", "CPU packages"), ("gpu_cap_w", "GPUs")),
     "NodeTwin.spec (% of max, mean)", (("cpu_cap_pct_mean", "CPU % (spec)"), ("gpu_cap_pct_mean", "GPU % (spec)"))),
    ("jobs", (("jobs_running", "running"), ("jobs_pending", "pending"), ("jobs_completed", "completed")),
     "eco Nodes", (("eco_nodes", "eco Nodes"),)),
    ("outdoor ambient (°C)", (("ambient_c", "outdoor ambient"),), "PUE", (("pue", "PUE"),)),
)


def series(rows: Sequence[Row], key: str) -> tuple[list[float], list[float]]:
    """(t, value) of the rows that have a number for `key`."""
    xs, ys = [], []
    for r in rows:
        v, t = r.get(key), r.get("t_s")
        if isinstance(v, (int, float)) and isinstance(t, (int, float)):
            xs.append(float(t))
            ys.append(float(v))
    return xs, ys


def plot_timeline(rows: Sequence[Row], steps: Sequence[tuple[float, str]], title: str, out: Path) -> None:
    """Writes `out` (PNG). `steps`: (seconds since the first step, step name)."""
    fig, axes = plt.subplots(len(PANELS), 1, figsize=(11, 2.6 * len(PANELS)), sharex=True)
    for ax, (label, keys, right_label, right_keys) in zip(axes, PANELS, strict=True):
        right = ax.twinx() if right_keys else None
        colour = 0
        for target, series_keys in ((ax, keys), (right, right_keys)):
            for key, name in series_keys:
                xs, ys = series(rows, key)
                if target is not None and xs:
                    target.plot(xs, ys, label=name, color=f"C{colour}", linewidth=1.4,
                                linestyle="--" if target is right else "-")
                colour += 1
        ax.set_ylabel(label)
        ax.grid(True, alpha=0.3)
        handles, labels = ax.get_legend_handles_labels()
        if right is not None:
            h2, l2 = right.get_legend_handles_labels()
            handles, labels = handles + h2, labels + l2
            right.set_ylabel(right_label)
        if handles:
            ax.legend(handles, labels, loc="upper left", fontsize=8)
        for t, _ in steps:
            ax.axvline(t, color="grey", linestyle=":", linewidth=0.8)
    for i, (t, name) in enumerate(steps):  # staggered: steps a second apart would write over each other
        axes[0].annotate(name, (t, 1.02 + 0.12 * (i % 3)), xycoords=("data", "axes fraction"), fontsize=7,
                         ha="left", va="bottom")
    axes[-1].set_xlabel("seconds since the first step")
    fig.suptitle(title, y=1.0)
    fig.tight_layout()
    fig.savefig(out, dpi=110, bbox_inches="tight")
    plt.close(fig)
