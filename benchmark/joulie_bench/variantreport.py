"""``variants.md``: the runs of several physics variants side by side, one row per variant and arm. Pure.

Each variant's arms are paired against A *of the same variant* (same traces, same physics), so a row says
what the policy does when the emulator's physics is not the controller's model. Columns: the paired
changes of ``paired.csv`` (mean [95 % CI], * where the CI excludes 0) and the share of jobs slowed past τ.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from joulie_bench.arms import ARMS, BASELINE, SLOWDOWN_BUDGET_PCT
from joulie_bench.paired import paired_rows
from joulie_bench.result import RunResult
from joulie_bench.taushare import tau_shares
from joulie_simulator.api import VARIANTS

COLUMNS = (
    ("completion", "facility_energy", "facility energy"),
    ("open", "facility_energy", "open: facility energy per work"),
    ("completion", "makespan", "makespan"),
    ("open", "throughput", "open: throughput"),
)


def _cell(row: Sequence[str] | None) -> str:
    if row is None or math.isnan(float(row[3])):
        return "n/a"
    m, lo, hi = float(row[3]), float(row[4]), float(row[5])
    if math.isnan(lo):
        return f"{m:+.1f}"
    return f"{m:+.1f} [{lo:+.1f}, {hi:+.1f}]{' *' if hi < 0 or lo > 0 else ''}"


def variant_summary(by_variant: Mapping[str, Sequence[RunResult]], policies: Sequence[str]) -> str:
    """The Markdown of ``variants.md``: a table of every variant's arms against its own A, then what each
    variant changes."""
    n = max((len({r.seed for r in rs}) for rs in by_variant.values()), default=0)
    out = [f"# joulie-bench physics variants ({n} seeds each)", "",
           "Each arm against A under the same variant, paired per seed (mean % [95 % CI], * = the CI excludes 0); "
           f"jobs over τ: % of jobs whose running time exceeds the same job's under A by more than {SLOWDOWN_BUDGET_PCT:g} %.",
           "", "| variant | policy | " + " | ".join(label for _, _, label in COLUMNS) + " | jobs over τ | worst job |",
           "|---|---|" + "---|" * (len(COLUMNS) + 2)]
    for variant, results in by_variant.items():
        rows = {(r[0], r[1], r[2]): r for r in paired_rows(results, policies)}
        taus = {t.policy: t for t in tau_shares(results, policies, SLOWDOWN_BUDGET_PCT)}
        for pol in policies:
            if pol == BASELINE:
                continue
            cells = [_cell(rows.get((pol, reg, metric))) for reg, metric, _ in COLUMNS]
            t = taus.get(pol)
            over = f"{t.over_pct.mean:.1f}" if t is not None else "n/a"
            worst = f"{t.worst_pct:+.0f} %" if t is not None else "n/a"
            out.append(f"| {variant} | {pol} {ARMS[pol].name} | " + " | ".join(cells) + f" | {over} | {worst} |")
    out += ["", "## The variants", "", *(f"- {VARIANTS[v].describe()}" for v in by_variant if v in VARIANTS), ""]
    return "\n".join(out)
