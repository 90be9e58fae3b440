"""The forecast plot's figures: realised arrivals binned by the warm pool's two kinds, the error of a forecast."""

from __future__ import annotations

import math

from joulie_bench.forecastplot import CPU_KIND, GPU_KIND, mean_abs_error_pct, realised_vs_forecast
from joulie_workload.gen import GenOptions, generate


def test_the_realised_arrivals_add_up_and_a_forecast_that_matches_them_has_no_error() -> None:
    jobs = generate(GenOptions(jobs=200, seed=4, mean_interarrival_s=30, gpu_ratio=0.5))
    bins = realised_vs_forecast(jobs, [], 1800.0, {"h100"})
    assert math.isclose(sum(r for _, _, r, _ in bins) * 30.0, 200.0)  # Pods/min x 30 min per bin
    gpu = sum(1 for j in jobs if j.requests.gpu > 0)
    assert math.isclose(sum(r for _, k, r, _ in bins if k == GPU_KIND) * 30.0, gpu)
    # A forecast equal to the realised rate, made once per bin (the GPU one split over two pools).
    log = []
    for h, kind, rate, _ in bins:
        t = h * 3600.0 + 60.0
        if kind == CPU_KIND:
            log.append((t, "*", rate))
        else:
            log += [(t, "h100", rate / 2), (t, "h100", rate / 2)]
    exact = realised_vs_forecast(jobs, log, 1800.0, {"h100"})
    assert mean_abs_error_pct(exact, CPU_KIND, skip_bins=0) < 1e-9
    # Forecasting nothing is 100 % off; a pool that is neither "*" nor a GPU pool is not counted.
    assert math.isclose(mean_abs_error_pct(bins, CPU_KIND, skip_bins=0), 100.0)
    assert realised_vs_forecast(jobs, [(60.0, "xeon", 5.0)], 1800.0, {"h100"}) == bins
