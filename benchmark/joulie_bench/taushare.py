"""The share of jobs a policy slowed past the slowdown budget τ, and the power budget's part of it.

A job's added slowdown is its running time (start to done, waiting excluded) under the arm over the same
job's under A, minus 1: what the arm's caps (and placement) cost that job, whatever A's default board
limit already cost it. The share over τ is taken per seed and averaged with its 95 % CI. E runs
work-aware caps *and* a power budget (0.6 x nameplate by default), which caps past τ by design; E0 runs
the same caps without the budget, so E's share minus E0's (paired per seed) is the budget's part. Pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from joulie_bench.arms import ARMS, BASELINE
from joulie_bench.result import RunResult
from joulie_bench.stats import Estimate, ci95

BUDGET_PAIR = ("E", "E0")
"""(with the power budget, without it): their difference is the budget's share of the slowdowns."""


def added_slowdowns_pct(run: RunResult, base: RunResult) -> list[float]:
    """Every job completed in both runs: its running time under ``run`` against ``base``, in %."""
    return [(t / base.run_s[j] - 1.0) * 100.0 for j, t in run.run_s.items() if base.run_s.get(j, 0.0) > 0]


@dataclass(frozen=True)
class TauShare:
    policy: str
    over_pct: Estimate
    """% of jobs whose added slowdown exceeds τ: mean over seeds, 95 % CI."""
    worst_pct: float
    """The largest added slowdown of any job in any seed, %."""
    per_seed: dict[int, float]
    """Each seed's own % of jobs over τ."""


def tau_shares(results: Sequence[RunResult], policies: Sequence[str], tau_pct: float) -> list[TauShare]:
    """One row per arm but A (paired against A's run of the same seed)."""
    base = {r.seed: r for r in results if r.policy == BASELINE}
    out = []
    for pol in policies:
        if pol == BASELINE:
            continue
        per_seed: dict[int, float] = {}
        worst = 0.0
        for r in results:
            if r.policy != pol or r.seed not in base:
                continue
            added = added_slowdowns_pct(r, base[r.seed])
            if added:
                per_seed[r.seed] = 100.0 * sum(1 for a in added if a > tau_pct) / len(added)
                worst = max(worst, max(added))
        if per_seed:
            out.append(TauShare(pol, ci95(list(per_seed.values())), worst, per_seed))
    return out


def budget_part(shares: Sequence[TauShare]) -> Estimate | None:
    """E's share over τ minus E0's, paired per seed (percentage points); None without both arms."""
    by = {s.policy: s for s in shares}
    with_b, without = (by.get(p) for p in BUDGET_PAIR)
    if with_b is None or without is None:
        return None
    diffs = [with_b.per_seed[s] - without.per_seed[s] for s in with_b.per_seed if s in without.per_seed]
    return ci95(diffs) if diffs else None


def markdown(shares: Sequence[TauShare], tau_pct: float) -> list[str]:
    """results.md's section: the share over τ per arm, and the budget's part when E and E0 both ran."""
    if not shares:
        return []
    out = [f"## Jobs slowed past τ = {tau_pct:g} % (running time against the same job under A)", "",
           "| policy | jobs over τ, % (mean [95 % CI] over seeds) | worst job's added slowdown |", "|---|---|---|"]
    for s in shares:
        e = s.over_pct
        ci = f" [{e.low:.1f}, {e.high:.1f}]" if e.n > 1 else ""
        out.append(f"| {s.policy} {ARMS[s.policy].name} | {e.mean:.1f}{ci} | {s.worst_pct:+.1f} % |")
    part = budget_part(shares)
    if part is not None:
        ci = f" [{part.low:+.1f}, {part.high:+.1f}]" if part.n > 1 else ""
        out += ["", f"The power budget's part (E minus E0, paired per seed): {part.mean:+.1f} pp{ci} of jobs over τ."]
    return [*out, ""]
