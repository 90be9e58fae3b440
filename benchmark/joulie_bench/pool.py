"""``python -m joulie_bench.pool DIR...``: the paired changes against A of several benchmark outputs run on
disjoint seeds (e.g. two processes in parallel), pooled over all their seeds (mean [95 % CI], Student t),
with the mean p95 added wait, boots and node-hours off from their ``runs.csv``. Pure apart from reading
the folders and printing."""

from __future__ import annotations

import csv
import sys
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

from joulie_bench.arms import BASELINE
from joulie_bench.stats import Estimate, ci95


def changes(dirs: Sequence[Path]) -> dict[tuple[str, str, str], dict[int, float]]:
    """(policy, regime, metric) -> seed -> change against A (%), from each folder's ``paired_seeds.csv``."""
    out: dict[tuple[str, str, str], dict[int, float]] = defaultdict(dict)
    for d in dirs:
        with open(d / "paired_seeds.csv") as f:
            for r in csv.DictReader(f):
                seed = int(r["seed"])
                key = (r["policy"], r["regime"], r["metric"])
                if seed in out[key]:
                    raise ValueError(f"{d}: seed {seed} of {key[0]} is also in another folder (pool disjoint seeds)")
                out[key][seed] = float(r["change_pct"])
    return out


def runs(dirs: Sequence[Path]) -> dict[str, dict[int, dict[str, str]]]:
    """policy -> seed -> its ``runs.csv`` row."""
    out: dict[str, dict[int, dict[str, str]]] = defaultdict(dict)
    for d in dirs:
        with open(d / "runs.csv") as f:
            for r in csv.DictReader(f):
                out[r["policy"]][int(r["seed"])] = r
    return out


def _fmt(e: Estimate) -> str:
    return f"{e.mean:+.1f} [{e.low:+.1f}, {e.high:+.1f}]"


def table(dirs: Sequence[Path]) -> list[str]:
    ch, rs = changes(dirs), runs(dirs)
    seeds = sorted(rs[BASELINE])
    lines = [
        f"seeds: {', '.join(map(str, seeds))}",
        "| arm | facility energy, completion | open (per work) | makespan | p95 added wait s (mean) | boots | "
        "node-hours off |",
        "|---|---|---|---|---|---|---|",
    ]
    for pol in (p for p in rs if p != BASELINE):

        def est(regime: str, metric: str, pol: str = pol) -> str:
            return _fmt(ci95([ch[(pol, regime, metric)][s] for s in seeds]))

        a, p = rs[BASELINE], rs[pol]
        if all("p95_wait_s" in p[s] for s in seeds):
            wait = sum(float(p[s]["p95_wait_s"]) - float(a[s]["p95_wait_s"]) for s in seeds) / len(seeds)
            boots = sum(float(p[s]["boots"]) for s in seeds) / len(seeds)
            off = sum(float(p[s]["node_hours_off"]) for s in seeds) / len(seeds)
            extra = f"{wait:+.0f} | {boots:.1f} | {off:.1f}"
        else:  # a runs.csv written before these columns: power.csv has them per folder
            extra = "- | - | -"
        lines.append(
            f"| {pol} | {est('completion', 'facility_energy')} | {est('open', 'facility_energy')} | "
            f"{est('completion', 'makespan')} | {extra} |"
        )
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args:
        print(
            "usage: python -m joulie_bench.pool DIR... (joulie-bench --out folders run on disjoint seeds)",
            file=sys.stderr,
        )
        return 2
    try:
        print("\n".join(table([Path(a) for a in args])))
    except (OSError, KeyError, ValueError) as e:
        print(f"joulie_bench.pool: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
