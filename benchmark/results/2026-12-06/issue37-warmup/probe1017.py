"""Seed 1017 of the default mix (issue35-default): S completion vs open, cold and after a warm-up."""
import sys, time
from joulie_bench.cli import parse_nodes
from joulie_bench.sim import run
from joulie_workload.gen import GenOptions, generate
N = parse_nodes("intel-xeon-2s-rapl*4,nvidia-h100-nvl-8gpu*2")
seed = int(sys.argv[1]) if len(sys.argv) > 1 else 1017
jobs = generate(GenOptions(jobs=120, seed=seed, mean_interarrival_s=40))
for w in (0.0, float(sys.argv[2]) if len(sys.argv) > 2 else 1800.0):
    rs = {}
    for p in ("A", "S"):
        t0 = time.monotonic(); rs[p] = run(jobs, N, p, seed, warmup_s=w); dt = time.monotonic() - t0
        r = rs[p]
        print(f"warmup {w:g} {p}: fac {r.facility_energy_kwh:.3f} kWh, makespan {r.makespan_s/3600:.2f} h, "
              f"open [{r.open_start_s:.0f},{r.open_end_s:.0f}] fac {r.open_facility_energy_kwh:.3f} kWh work {r.open_work_h:.2f} h "
              f"-> {r.open_facility_energy_kwh/max(r.open_work_h,1e-9):.4f} kWh/h, boots {r.boots}, off {r.node_hours_off:.2f} node-h, "
              f"p95 wait {sorted(r.waits_s)[int(0.95*len(r.waits_s))]:.0f} s ({dt:.0f} s wall)", flush=True)
    a, s = rs["A"], rs["S"]
    print(f"  S vs A: completion {100*(s.facility_energy_kwh/a.facility_energy_kwh-1):+.1f} %, open energy {100*(s.open_facility_energy_kwh/a.open_facility_energy_kwh-1):+.1f} %, "
          f"open work {100*(s.open_work_h/a.open_work_h-1):+.1f} %, open per work {100*((s.open_facility_energy_kwh/s.open_work_h)/(a.open_facility_energy_kwh/a.open_work_h)-1):+.1f} %", flush=True)
