"""paired.csv's figures: per-seed changes against A, each regime's metrics as benchmark/README.md defines them."""

from __future__ import annotations

import math

import pytest

from joulie_bench.paired import METRICS, PAIRED_HEADER, REGIMES, metric, paired_rows, per_seed_changes, seed_windows
from joulie_bench.result import RunResult


def _run(policy: str, seed: int, kwh: float, done_s: list[float], idle_w: float = 1000.0) -> RunResult:
    end = max(done_s) + 5
    r = RunResult(policy, seed, kwh, kwh * 1.2, max(done_s), len(done_s), len(done_s), 1.0, 1000.0, 0, 0, end, idle_w, 1.1)
    r.completions = [(d, 1.0 + i / 10) for i, d in enumerate(sorted(done_s))]
    r.open_start_s, r.open_end_s = 0.0, max(done_s)
    r.open_it_energy_kwh, r.open_facility_energy_kwh, r.open_work_h = kwh, kwh * 1.2, 1.0
    return r


def test_open_regime_is_energy_per_work_inside_the_window_after_warm_up() -> None:
    a = _run("A", 1, 1.0, [100.0, 200.0, 300.0, 400.0])
    b = _run("B", 1, 0.9, [100.0, 250.0, 350.0, 700.0])
    for r, kwh, work_h in ((a, 0.5, 2.0), (b, 0.45, 1.5)):
        r.open_start_s, r.open_end_s = 150.0, 375.0
        r.open_it_energy_kwh, r.open_facility_energy_kwh, r.open_work_h = kwh, kwh * 1.2, work_h
    w = seed_windows([a, b])[1]
    assert w.common_end_s == 705.0
    # Energy per ideal job-hour done inside the window: A 0.25 kWh/h, B 0.30 kWh/h (less work done).
    assert metric(a, "open", "it_energy", w) == pytest.approx(0.25)
    assert metric(b, "open", "it_energy", w) == pytest.approx(0.30)
    assert metric(b, "open", "facility_energy", w) == pytest.approx(0.36)
    # Throughput: job-hours per hour of the 225 s window.
    assert metric(a, "open", "throughput", w) == pytest.approx(2.0 * 3600 / 225)
    # p95 slowdown over the jobs completed inside [150, 375]: A's 200 and 300 s (1.1, 1.2), B's 250 and 350 s.
    assert a.open_slowdowns() == [1.1, 1.2]
    assert metric(a, "open", "energy_per_job", w) == pytest.approx(0.6 / 2)
    # To completion: jobs over each run's own makespan; energy integrated to the end.
    assert metric(b, "completion", "throughput", w) == pytest.approx(4 * 3600 / 700)
    assert metric(a, "completion", "facility_energy", w) == pytest.approx(1.2)
    # A window with no work done has no energy per work (nan, left out of the pairing).
    b.open_work_h = 0.0
    assert math.isnan(metric(b, "open", "it_energy", w))
    with pytest.raises(ValueError, match="regime"):
        metric(a, "steady", "it_energy", w)
    with pytest.raises(ValueError, match="metric"):
        metric(a, "open", "joules", w)


def test_rows_are_one_per_policy_regime_metric_and_each_ci_holds_its_mean() -> None:
    results = []
    for seed, (ka, kb, kc) in enumerate([(1.0, 0.9, 1.1), (2.0, 1.9, 2.1), (1.5, 1.2, 1.6)], start=1):
        results += [_run("A", seed, ka, [100.0, 200.0]), _run("B", seed, kb, [100.0, 220.0]),
                    _run("C", seed, kc, [90.0, 200.0])]
    rows = paired_rows(results, ["A", "B", "C"])
    assert len(PAIRED_HEADER) == 7 and PAIRED_HEADER[0] == "policy"
    assert len(rows) == 2 * len(REGIMES) * len(METRICS)
    assert {r[0] for r in rows} == {"B", "C"} and {r[1] for r in rows} == set(REGIMES)
    for pol, regime, name, mean, low, high, n in rows:
        assert n == "3", (pol, regime, name)
        assert float(low) <= float(mean) <= float(high), (pol, regime, name)
    it_b = next(r for r in rows if r[:3] == ("B", "completion", "it_energy"))
    # Per-seed changes -10 %, -5 %, -20 %: mean -11.667 %.
    assert float(it_b[3]) == pytest.approx(-35 / 3, abs=1e-3)
    mk_c = next(r for r in rows if r[:3] == ("C", "completion", "makespan"))
    assert float(mk_c[3]) == 0.0 and float(mk_c[4]) == 0.0


def test_a_policy_without_a_paired_seed_gets_nan_and_zero_seeds() -> None:
    rows = paired_rows([_run("A", 1, 1.0, [100.0]), _run("B", 2, 1.0, [100.0])], ["A", "B"])
    assert all(r[6] == "0" and math.isnan(float(r[3])) for r in rows)


def test_per_seed_changes_are_the_values_paired_csv_averages() -> None:
    results = [_run("A", 1, 1.0, [100.0]), _run("E", 1, 0.9, [100.0]), _run("A", 2, 2.0, [100.0]),
               _run("E", 2, 1.9, [100.0])]
    rows = per_seed_changes(results, ["A", "E"])
    it = [float(r[4]) for r in rows if r[2:4] == ("completion", "it_energy")]
    assert it == pytest.approx([-10.0, -5.0])
    mean = next(r for r in paired_rows(results, ["A", "E"]) if r[1:3] == ("completion", "it_energy"))
    assert float(mean[3]) == pytest.approx(-7.5)
