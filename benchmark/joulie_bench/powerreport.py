"""What suspending idle nodes did, per policy: boots, node-hours off, the idle baseline paid (where
suspend saves), and the queueing delay resumes added. Pure: figures from ``RunResult`` only, paired
per seed against A like ``paired.csv``.

Energy saved from idle = A's idle baseline - the policy's (``RunResult.idle_energy_kwh``: each
node's idle power while powered, its standby power while off), per seed, to completion; the rest of
the IT change is dynamic (the work's own power at other speeds and caps). Wait = start - submit of
every started job."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from joulie_bench.arms import ARMS, BASELINE
from joulie_bench.result import RunResult
from joulie_bench.stats import Estimate, ci95

POWER_HEADER = ("policy", "boots", "node_hours_off", "idle_baseline_kwh", "idle_saved_kwh", "idle_saved_pct_of_a_it",
                "dynamic_change_kwh", "mean_wait_s", "p95_wait_s", "mean_wait_added_s", "p95_wait_added_s",
                "cpu_utilisation", "gpu_utilisation", "n_seeds")


@dataclass(frozen=True)
class PowerRow:
    policy: str
    boots: Estimate
    node_hours_off: Estimate
    baseline_kwh: Estimate
    idle_saved_kwh: Estimate
    """A's idle baseline minus this policy's, per seed (positive: saved)."""
    idle_saved_pct: Estimate
    """``idle_saved_kwh`` as % of A's IT energy to completion."""
    dynamic_change_kwh: Estimate
    """The rest of the IT change against A: (IT - baseline) energy minus A's."""
    mean_wait_s: Estimate
    p95_wait_s: Estimate
    mean_wait_added_s: Estimate
    p95_wait_added_s: Estimate
    cpu_utilisation: Estimate
    gpu_utilisation: Estimate


def power_rows(results: Sequence[RunResult], policies: Sequence[str]) -> list[PowerRow]:
    """One row per policy (A included, its own changes 0) with every seed that A also ran."""
    base = {r.seed: r for r in results if r.policy == BASELINE}
    rows = []
    for pol in policies:
        rs = [r for r in results if r.policy == pol and r.seed in base]
        if not rs:
            continue
        a = [base[r.seed] for r in rs]
        rows.append(PowerRow(
            policy=pol,
            boots=ci95([float(r.boots) for r in rs]),
            node_hours_off=ci95([r.node_hours_off for r in rs]),
            baseline_kwh=ci95([r.idle_energy_kwh for r in rs]),
            idle_saved_kwh=ci95([b.idle_energy_kwh - r.idle_energy_kwh for r, b in zip(rs, a, strict=True)]),
            idle_saved_pct=ci95([(b.idle_energy_kwh - r.idle_energy_kwh) / b.it_energy_kwh * 100
                                 for r, b in zip(rs, a, strict=True) if b.it_energy_kwh > 0] or [math.nan]),
            dynamic_change_kwh=ci95([(r.it_energy_kwh - r.idle_energy_kwh) - (b.it_energy_kwh - b.idle_energy_kwh)
                                     for r, b in zip(rs, a, strict=True)]),
            mean_wait_s=ci95([r.mean_wait_s for r in rs]),
            p95_wait_s=ci95([r.wait_pct(95) for r in rs]),
            mean_wait_added_s=ci95([r.mean_wait_s - b.mean_wait_s for r, b in zip(rs, a, strict=True)]),
            p95_wait_added_s=ci95([r.wait_pct(95) - b.wait_pct(95) for r, b in zip(rs, a, strict=True)]),
            cpu_utilisation=ci95([r.cpu_utilisation for r in rs]),
            gpu_utilisation=ci95([r.gpu_utilisation for r in rs]),
        ))
    return rows


def _f(e: Estimate, d: int) -> str:
    return f"{e.mean:.{d}f}"


def csv_rows(rows: Sequence[PowerRow]) -> list[tuple[str, ...]]:
    """``power.csv``'s rows (means; the Markdown table carries the CIs)."""
    return [(r.policy, _f(r.boots, 2), _f(r.node_hours_off, 3), _f(r.baseline_kwh, 4), _f(r.idle_saved_kwh, 4),
             _f(r.idle_saved_pct, 2), _f(r.dynamic_change_kwh, 4), _f(r.mean_wait_s, 1), _f(r.p95_wait_s, 1),
             _f(r.mean_wait_added_s, 1), _f(r.p95_wait_added_s, 1), _f(r.cpu_utilisation, 3), _f(r.gpu_utilisation, 3),
             str(r.boots.n)) for r in rows]


def markdown(rows: Sequence[PowerRow]) -> list[str]:
    """The results.md section: where the energy went and what the resumes cost in waiting."""
    out = ["## Power states: what suspending idle nodes saved and what it cost (mean ± 95 % CI half-width)", "",
           "Idle baseline: each node's idle power (unloaded, uncapped) while powered, booting and shutting down "
           "included, and its standby power while off. Saved from idle = A's baseline minus the policy's, per seed; "
           "dynamic = the rest of the IT change. Wait = start - submit of every started job; added = minus A's, per "
           "seed.", "",
           "| policy | boots | node-hours off | idle baseline IT kWh | saved from idle kWh (% of A's IT) | dynamic change kWh "
           "| mean wait s (added) | p95 wait s (added) | CPU / GPU allocated |",
           "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        out.append(f"| {r.policy} {ARMS[r.policy].name} | {r.boots.fmt(1)} | {r.node_hours_off.fmt(2)} | "
                   f"{r.baseline_kwh.fmt(2)} | {r.idle_saved_kwh.fmt(2)} ({r.idle_saved_pct.mean:+.1f} %) | "
                   f"{r.dynamic_change_kwh.fmt(2)} | {r.mean_wait_s.mean:.0f} ({r.mean_wait_added_s.fmt(0)}) | "
                   f"{r.p95_wait_s.mean:.0f} ({r.p95_wait_added_s.fmt(0)}) | "
                   f"{r.cpu_utilisation.mean * 100:.0f} % / {r.gpu_utilisation.mean * 100:.0f} % |")
    return [*out, ""]
