"""The statistics behind the benchmark's confidence intervals."""

from __future__ import annotations

import math

import pytest

from joulie_bench.stats import ci95, percentile, t_cdf, t_quantile


@pytest.mark.parametrize(("df", "expect"), [(1, 12.7062), (2, 4.3027), (4, 2.7764), (9, 2.2622), (29, 2.0452), (1000, 1.9623)])
def test_t_quantile_matches_the_tables(df: int, expect: float) -> None:
    assert t_quantile(0.975, df) == pytest.approx(expect, abs=5e-4)


def test_t_cdf_is_symmetric_and_half_at_zero() -> None:
    assert t_cdf(0.0, 5) == pytest.approx(0.5)
    assert t_cdf(-2.0, 5) == pytest.approx(1 - t_cdf(2.0, 5))


def test_ci95_of_a_known_sample() -> None:
    # mean 3, sample sd sqrt(2.5), n 5: half-width = 2.7764 * sqrt(2.5 / 5)
    e = ci95([1.0, 2.0, 3.0, 4.0, 5.0])
    assert e.mean == 3.0 and e.n == 5
    assert e.half_width == pytest.approx(2.7764 * math.sqrt(0.5), rel=1e-4)
    assert (e.low, e.high) == pytest.approx((3 - e.half_width, 3 + e.half_width))
    assert ci95([7.0, 7.0, 7.0]).half_width == 0.0
    one = ci95([4.0])
    assert math.isnan(one.half_width) and one.fmt() == "4.0"
    with pytest.raises(ValueError, match="no samples"):
        ci95([])


def test_percentile_interpolates_like_numpy() -> None:
    xs = [float(x) for x in range(1, 21)]
    assert percentile(xs, 95) == pytest.approx(19.05)
    assert percentile([3.0], 95) == 3.0
    assert math.isnan(percentile([], 95))
