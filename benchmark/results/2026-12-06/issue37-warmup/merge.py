"""Merge joulie-bench output dirs run on disjoint seeds: paired changes vs A per policy (mean [95 % CI]
over all seeds, Student t) from paired_seeds.csv, and p95 wait added / boots from runs.csv when present."""
import csv, sys
from collections import defaultdict
from joulie_bench.stats import ci95

dirs = sys.argv[1:]
ch = defaultdict(list)
for d in dirs:
    for r in csv.DictReader(open(f"{d}/paired_seeds.csv")):
        ch[(r["policy"], r["regime"], r["metric"])].append(float(r["change_pct"] if "change_pct" in r else r[list(r)[-1]]))
runs = defaultdict(dict)
for d in dirs:
    for r in csv.DictReader(open(f"{d}/runs.csv")):
        runs[r["policy"]][int(r["seed"])] = r
pols = [p for p in runs if p != "A"]
print(f"seeds: {sorted(runs['A'])}")
print("| arm | facility energy, completion | open (per work) | makespan | p95 wait added s | boots | node-h off |")
print("|---|---|---|---|---|---|---|")
for p in pols:
    def f(regime, metric):
        e = ci95(ch[(p, regime, metric)])
        return f"{e.mean:+.1f} [{e.low:+.1f}, {e.high:+.1f}]"
    extra = []
    if "p95_wait_s" in runs["A"][next(iter(runs["A"]))]:
        w = ci95([float(runs[p][s]["p95_wait_s"]) - float(runs["A"][s]["p95_wait_s"]) for s in runs["A"]])
        b = ci95([float(runs[p][s]["boots"]) for s in runs["A"]])
        off = ci95([float(runs[p][s]["node_hours_off"]) for s in runs["A"]])
        extra = [f"{w.mean:+.0f} ± {w.high - w.mean:.0f}", f"{b.mean:.1f}", f"{off.mean:.1f}"]
    else:
        extra = ["see power.csv", "", ""]
    print(f"| {p} | {f('completion','facility_energy')} | {f('open','facility_energy')} | {f('completion','makespan')} | " + " | ".join(extra) + " |")
# paired forecast - reactive
for a, b in (("SF", "S"), ("ESF", "ES")):
    if (a, "completion", "facility_energy") in ch and (b, "completion", "facility_energy") in ch:
        d = ci95([x - y for x, y in zip(ch[(a, "completion", "facility_energy")], ch[(b, "completion", "facility_energy")])])
        print(f"{a} - {b} facility energy (completion): {d.mean:+.1f} pp [{d.low:+.1f}, {d.high:+.1f}]")
