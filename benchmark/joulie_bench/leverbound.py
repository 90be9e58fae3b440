"""What the physics allows: the best per-job GPU setting within a slowdown budget, knowing each job's truth.

An oracle bound for the per-job levers, not a policy: for each GPU job of a trace, every board limit
(``step_w`` apart, between the board's minimum and its default, A's setting) and every SM clock lock (2.5 %
steps of the maximum clock, down to the board's lowest clock) is tried on the job's own phases
(``board_operating_point`` of the emulator's physics), and the one with the least board energy per unit of
work whose throughput stays within ``tau`` of A's is kept. The saving is against A (default limit, no lock).
Weighted by each job's GPU energy under A (boards x ideal runtime x A's power), it is the most any
controller could save on the boards' busy energy of that trace within ``tau``, with perfect knowledge of
every job; idle boards, CPUs, hosts and the facility overhead are untouched by it, so the facility-level
saving is smaller still (``facility_bound``). Pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from joulie_bench.gputelemetry import phases_of
from joulie_hwprofiles.schema import Profile
from joulie_simulator.api import Phase, board_operating_point
from joulie_workload.trace import Job

LOCK_STEP = 0.025


@dataclass(frozen=True)
class Best:
    saving: float
    """1 - (energy per work at the best setting) / (A's), in [0, 1)."""
    limit_w: float
    lock_ratio: float
    slowdown: float
    """Running time at the best setting over A's, minus 1."""


def best_setting(profile: Profile, phases: Sequence[Phase], tau: float, step_w: float = 5.0) -> Best:
    """The least board energy per work within ``tau`` of A's throughput (module docstring)."""
    g, spec = profile.physics.gpu, profile.gpus
    if g is None or spec is None:
        raise ValueError(f"{profile.name}: no GPU physics")
    base = board_operating_point(g, phases, spec.default_w)
    base_epw = base.power_w / base.throughput
    lo_lock = spec.sm_clock_min_mhz / spec.sm_clock_max_mhz
    best = Best(0.0, spec.default_w, 1.0, 0.0)
    limit = spec.default_w
    while limit >= spec.min_w - 1e-9:
        lock = 1.0
        while lock >= lo_lock - 1e-9:
            op = board_operating_point(g, phases, limit, lock)
            slow = base.throughput / op.throughput - 1.0
            if slow <= tau + 1e-12:
                saving = 1.0 - (op.power_w / op.throughput) / base_epw
                if saving > best.saving:
                    best = Best(saving, limit, lock, slow)
            lock = round(lock - LOCK_STEP, 6)
        limit -= step_w
    return best


@dataclass(frozen=True)
class TraceBound:
    busy_gpu_saving: float
    """GPU-energy-weighted mean of the jobs' best savings: the most the boards' busy energy can fall."""
    by_kind: dict[str, float]
    jobs: int
    busy_j: float
    """The boards' energy running the trace's GPU jobs under A (boards x ideal runtime x power), J."""

    @property
    def saved_j(self) -> float:
        return self.busy_j * self.busy_gpu_saving


def trace_bound(profile: Profile, jobs: Sequence[Job], tau: float) -> TraceBound:
    """The bound over a trace's GPU jobs on boards of ``profile`` (every job's phases as the engine runs them)."""
    g, spec = profile.physics.gpu, profile.gpus
    if g is None or spec is None:
        raise ValueError(f"{profile.name}: no GPU physics")
    total = saved = 0.0
    kind_w: dict[str, list[float]] = {}
    cache: dict[tuple[Phase, ...], Best] = {}
    for j in jobs:
        if j.requests.gpu <= 0:
            continue
        phases = phases_of(j)
        if phases not in cache:
            cache[phases] = best_setting(profile, phases, tau)
        base = board_operating_point(g, phases, spec.default_w)
        weight = j.requests.gpu * j.ideal_runtime_s * base.power_w
        total += weight
        saved += weight * cache[phases].saving
        kw = kind_w.setdefault(j.kind, [0.0, 0.0])
        kw[0] += weight
        kw[1] += weight * cache[phases].saving
    return TraceBound(
        saved / total if total else 0.0,
        {k: s / w for k, (w, s) in sorted(kind_w.items()) if w},
        sum(1 for j in jobs if j.requests.gpu > 0),
        total,
    )


def facility_bound(bound: TraceBound, a_it_energy_kwh: float) -> float:
    """The IT (and, PUE alike on both sides to first order, facility) energy saving the bound allows against
    A's run of the same trace: the joules it saves on busy boards over A's IT energy, as a fraction."""
    return bound.saved_j / (a_it_energy_kwh * 3.6e6) if a_it_energy_kwh > 0 else 0.0


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m joulie_bench.leverbound OUT [TAU...]``: per seed of a bench output directory (its traces and
    A's runs.csv rows), the busy-board bound and the IT-level bound at each ``TAU`` (default 0.03)."""
    import csv
    import sys
    from pathlib import Path

    from joulie_hwprofiles.schema import builtin_profile
    from joulie_workload.trace import load_trace

    args = list(sys.argv[1:] if argv is None else argv)
    out, taus = Path(args[0]), [float(t) for t in args[1:]] or [0.03]
    prof = builtin_profile("nvidia-h100-nvl-8gpu")
    a_rows = {r["seed"]: r for r in csv.DictReader((out / "runs.csv").open()) if r["policy"] == "A"}
    print("| seed | tau | busy-board bound | by kind | IT bound vs A |")
    print("|---|---|---|---|---|")
    for seed, row in sorted(a_rows.items()):
        jobs = load_trace(out / "traces" / f"seed-{seed}.jsonl")
        for tau in taus:
            b = trace_bound(prof, jobs, tau)
            kinds = ", ".join(f"{k} {100 * v:.1f} %" for k, v in b.by_kind.items())
            print(
                f"| {seed} | {tau:g} | {100 * b.busy_gpu_saving:.1f} % | {kinds} | "
                f"{100 * facility_bound(b, float(row['it_energy_kwh'])):.1f} % |"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
