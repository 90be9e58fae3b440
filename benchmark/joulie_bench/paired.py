"""Paired per-seed changes against policy A, in two regimes: what ``paired.csv`` holds. Pure.

Every policy of a seed runs the same trace, so the change of a metric against A is taken per seed
(``(x_policy - x_A) / x_A``, in %) and the 95 % CI is over those per-seed changes (Student t):
the trace-to-trace spread, which dwarfs the policy effect, cancels out.

Regimes (benchmark/README.md says the same, for readers of the file):
- ``completion``: the finite trace run to its last job. Energy integrated until the run stops;
  makespan = last completion - first submit; throughput = jobs completed / makespan, per hour;
  p95 slowdown over every completed job.
- ``open``: an open system in steady state. The window runs from the end of a warm-up (a quarter
  of the trace's arrival span) to the last arrival, so jobs keep arriving through all of it and no
  straggler after the last arrival counts. Energy = energy used inside the window per unit of work
  done inside it (kWh per ideal job-hour: each job's progress in the window x its ideal runtime);
  throughput = ideal job-hours done per hour of window; p95 slowdown over the jobs completed inside
  the window; energy per job = window facility energy / jobs completed in the window; makespan as
  in ``completion``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from joulie_bench.arms import BASELINE
from joulie_bench.result import RunResult
from joulie_bench.stats import Estimate, ci95, percentile

PAIRED_HEADER = ("policy", "regime", "metric", "mean_change_pct", "ci95_low_pct", "ci95_high_pct", "n_seeds")
REGIMES = ("completion", "open")
METRICS = ("facility_energy", "it_energy", "makespan", "throughput", "p95_slowdown", "energy_per_job")


@dataclass(frozen=True)
class SeedWindows:
    """One seed's windows, shared by every policy that ran it."""

    common_end_s: float
    """End of the common energy window: the latest ``end_s`` of the seed's runs."""


def seed_windows(results: Sequence[RunResult]) -> dict[int, SeedWindows]:
    out: dict[int, SeedWindows] = {}
    for seed in sorted({r.seed for r in results}):
        rs = [r for r in results if r.seed == seed]
        out[seed] = SeedWindows(max(r.end_s for r in rs))
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
        in_window = r.open_slowdowns()
        work_h = r.open_work_h
        values = {
            "facility_energy": lambda: r.open_facility_energy_kwh / work_h if work_h > 0 else float("nan"),
            "it_energy": lambda: r.open_it_energy_kwh / work_h if work_h > 0 else float("nan"),
            "makespan": lambda: r.makespan_s,
            "throughput": lambda: work_h * 3600.0 / r.open_window_s if r.open_window_s > 0 else float("nan"),
            "p95_slowdown": lambda: percentile(in_window, 95),
            "energy_per_job": lambda: r.open_facility_energy_kwh / len(in_window) if in_window else float("nan"),
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


def per_seed_changes(results: Sequence[RunResult], policies: Sequence[str]) -> list[tuple[str, ...]]:
    """``paired_seeds.csv``'s rows: every seed's own change against A (policy, seed, regime, metric,
    change_pct), the values ``paired.csv`` averages."""
    windows = seed_windows(results)
    base = {(r.seed, reg, m): metric(r, reg, m, windows[r.seed]) for r in results if r.policy == BASELINE
            for reg in REGIMES for m in METRICS}
    rows: list[tuple[str, ...]] = []
    for pol in policies:
        if pol == BASELINE:
            continue
        for r in sorted((x for x in results if x.policy == pol), key=lambda x: x.seed):
            for reg in REGIMES:
                for m in METRICS:
                    b = base.get((r.seed, reg, m))
                    x = metric(r, reg, m, windows[r.seed])
                    ok = b is not None and b == b and b != 0 and x == x
                    rows.append((pol, str(r.seed), reg, m, f"{(x - b) / b * 100.0:.4f}" if ok and b else "nan"))
    return rows


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
