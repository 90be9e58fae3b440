"""Paired per-seed changes against policy A, in two regimes: what ``paired.csv`` holds. Pure.

Every policy of a seed runs the same trace, so the change of a metric against A is taken per seed
(``(x_policy - x_A) / x_A``, in %) and the 95 % CI is over those per-seed changes (Student t):
the trace-to-trace spread, which dwarfs the policy effect, cancels out.

Regimes (benchmark/README.md says the same, for readers of the file):
- ``completion``: the finite trace run to its last job. Energy integrated until the run stops;
  makespan = last completion - first submit; throughput = jobs completed / makespan, per hour;
  p95 slowdown over every completed job.
- ``open`` (for now the common-window view, until a steady-state open system lands): energy over
  the seed's common window, i.e. every policy's run extended to the seed's longest run, a faster
  run idling for the rest; throughput = jobs completed within the seed's fastest makespan
  (counted from the first submit), per hour of that window; p95 slowdown over those same jobs;
  makespan as in ``completion``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from joulie_bench.sim import RunResult
from joulie_bench.stats import Estimate, ci95, percentile

PAIRED_HEADER = ("policy", "regime", "metric", "mean_change_pct", "ci95_low_pct", "ci95_high_pct", "n_seeds")
REGIMES = ("completion", "open")
METRICS = ("facility_energy", "it_energy", "makespan", "throughput", "p95_slowdown", "energy_per_job")
BASELINE = "A"


@dataclass(frozen=True)
class SeedWindows:
    """One seed's windows, shared by every policy that ran it."""

    common_end_s: float
    """End of the common energy window: the latest ``end_s`` of the seed's runs."""
    fast_makespan_s: float
    """The throughput window: the shortest makespan of the seed's runs."""


def seed_windows(results: Sequence[RunResult]) -> dict[int, SeedWindows]:
    out: dict[int, SeedWindows] = {}
    for seed in sorted({r.seed for r in results}):
        rs = [r for r in results if r.seed == seed]
        out[seed] = SeedWindows(max(r.end_s for r in rs), min(r.makespan_s for r in rs))
    return out


def _per_hour(count: float, window_s: float) -> float:
    return count * 3600.0 / window_s if window_s > 0 else 0.0


def metric(r: RunResult, regime: str, name: str, w: SeedWindows) -> float:
    """One run's figure for ``name`` in ``regime``; ``r.extend_to_window(w.common_end_s)`` must have run."""
    if regime == "completion":
        values: dict[str, Callable[[], float]] = {
            "facility_energy": lambda: r.facility_energy_kwh,
            "it_energy": lambda: r.it_energy_kwh,
            "makespan": lambda: r.makespan_s,
            "throughput": lambda: _per_hour(r.jobs_completed, r.makespan_s),
            "p95_slowdown": lambda: r.p95_slowdown,
            "energy_per_job": lambda: r.facility_energy_kwh / r.jobs_completed if r.jobs_completed else float("nan"),
        }
    elif regime == "open":
        cutoff = r.first_submit_s + w.fast_makespan_s
        in_window = [sd for done, sd in r.completions if done <= cutoff + 1e-9]
        values = {
            "facility_energy": lambda: r.window_facility_energy_kwh,
            "it_energy": lambda: r.window_it_energy_kwh,
            "makespan": lambda: r.makespan_s,
            "throughput": lambda: _per_hour(len(in_window), w.fast_makespan_s),
            "p95_slowdown": lambda: percentile(in_window, 95),
            "energy_per_job": lambda: r.window_facility_energy_kwh / r.jobs_completed if r.jobs_completed else float("nan"),
        }
    else:
        raise ValueError(f"regime: {regime!r} is not one of {', '.join(REGIMES)}")
    if name not in values:
        raise ValueError(f"metric: {name!r} is not one of {', '.join(METRICS)}")
    return values[name]()


def paired_change(results: Sequence[RunResult], policy: str, regime: str, name: str,
                  windows: dict[int, SeedWindows]) -> Estimate | None:
    """Per-seed % change of ``name`` against A, mean and 95 % CI; None when no seed pairs up."""
    base = {r.seed: metric(r, regime, name, windows[r.seed]) for r in results if r.policy == BASELINE}
    diffs: list[float] = []
    for r in results:
        b = base.get(r.seed)
        if r.policy != policy or b is None or b != b or b == 0:  # b == b: not nan
            continue
        x = metric(r, regime, name, windows[r.seed])
        if x == x:
            diffs.append((x - b) / b * 100.0)
    return ci95(diffs) if diffs else None


def paired_rows(results: Sequence[RunResult], policies: Sequence[str]) -> list[tuple[str, ...]]:
    """``paired.csv``'s rows: one per policy (not A) x regime x metric, in that order. A pair with no
    valid seed is written with ``nan`` and ``n_seeds`` 0; one seed gives a ``nan`` CI. Extends every
    run to its seed's common window first (idempotent)."""
    windows = seed_windows(results)
    for r in results:
        r.extend_to_window(windows[r.seed].common_end_s)
    rows: list[tuple[str, ...]] = []
    for pol in policies:
        if pol == BASELINE:
            continue
        for regime in REGIMES:
            for name in METRICS:
                e = paired_change(results, pol, regime, name, windows)
                if e is None:
                    rows.append((pol, regime, name, "nan", "nan", "nan", "0"))
                else:
                    rows.append((pol, regime, name, f"{e.mean:.4f}", f"{e.low:.4f}", f"{e.high:.4f}", str(e.n)))
    return rows
