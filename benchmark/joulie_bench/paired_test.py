"""paired.csv's figures: per-seed changes against A, each regime's metrics as benchmark/README.md defines them."""

from __future__ import annotations

import math

import pytest

from joulie_bench.paired import METRICS, PAIRED_HEADER, REGIMES, metric, paired_rows, seed_windows
from joulie_bench.sim import RunResult


def _run(policy: str, seed: int, kwh: float, done_s: list[float], idle_w: float = 1000.0) -> RunResult:
    end = max(done_s) + 5
    r = RunResult(policy, seed, kwh, kwh * 1.2, max(done_s), len(done_s), len(done_s), 1.0, 1000.0, 0, 0, end, idle_w, 1.1)
    r.completions = [(d, 1.0 + i / 10) for i, d in enumerate(sorted(done_s))]
    return r


def test_open_regime_counts_jobs_done_within_the_fastest_run_and_idles_the_faster_to_the_longest() -> None:
    a = _run("A", 1, 1.0, [100.0, 200.0, 300.0, 400.0])
    b = _run("B", 1, 0.9, [100.0, 250.0, 350.0, 700.0])
    w = seed_windows([a, b])[1]
    assert (w.common_end_s, w.fast_makespan_s) == (705.0, 400.0)
    a.extend_to_window(w.common_end_s)
    b.extend_to_window(w.common_end_s)
    # Throughput window: 400 s (A's makespan). A did 4 jobs in it, B 3: 36 and 27 jobs per hour.
    assert metric(a, "open", "throughput", w) == pytest.approx(36.0)
    assert metric(b, "open", "throughput", w) == pytest.approx(27.0)
    # To completion: jobs over each run's own makespan.
    assert metric(b, "completion", "throughput", w) == pytest.approx(4 * 3600 / 700)
    # The common window: A idles 300 s at 1000 W after its run; B, the longest, adds nothing.
    assert metric(a, "open", "it_energy", w) == pytest.approx(1.0 + 1000 * 300 / 3.6e6)
    assert metric(b, "open", "it_energy", w) == pytest.approx(0.9)
    assert metric(a, "completion", "facility_energy", w) == pytest.approx(1.2)
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
