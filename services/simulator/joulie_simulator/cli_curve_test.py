"""``joulie-simulator curve``: one JSON object, a table for several caps, clamping said aloud, the
plot, and exit 2 with the valid names."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from joulie_simulator.cli import main


def test_one_cap_prints_one_json_object(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["curve", "--profile", "nvidia-h100-sxm-8gpu", "--class", "gpu-inference", "--cap-pct", "50", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert {"throughput", "power_w", "uncapped_power_w", "energy_per_work"} <= set(out)
    assert 0 < out["throughput"] < 1 and out["power_w"] == pytest.approx(350.0) and not out["clamped"]
    assert out["energy_per_work"] == pytest.approx(out["power_w"] / out["uncapped_power_w"] / out["throughput"], rel=1e-4)


def test_a_cap_below_the_device_minimum_is_clamped_and_the_output_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["curve", "--profile", "nvidia-h100-sxm-8gpu", "--class", "gpu-training", "--cap-pct", "10", "--json"]) == 0
    printed = capsys.readouterr()
    out = json.loads(printed.out)
    assert out["clamped"] and out["cap_w"] == 200.0 and "clamped" in printed.err


def test_several_caps_print_a_table_and_util_is_honoured(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["curve", "--profile", "intel-xeon-2s-rapl", "--class", "cpu-compute", "--cap-pct", "80", "--cap-pct", "60"]
    assert main([*args, "--util", "1.0"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].split()[:3] == ["kind", "cap", "%"] and len(lines) == 4
    assert main([*args, "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["cap_pct"] for r in rows] == [80.0, 60.0] and rows[0]["throughput"] > rows[1]["throughput"]


def test_sweep_draws_one_line_per_kind(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    png = tmp_path / "c.png"
    assert main(["curve", "--profile", "intel-xeon-2s-rapl", "--class", "all", "--sweep", "--plot", str(png)]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "cpu-memory" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--profile", "nope", "--class", "gpu-training"], "valid: amd-epyc-2s-energy-only, "),
        (["--profile", "intel-xeon-2s-rapl", "--class", "gpu-mining"], "valid: gpu-training, gpu-inference, cpu-compute, cpu-memory"),
        (["--profile", "intel-xeon-2s-rapl", "--class", "gpu-training"], "kinds this profile can run: cpu-compute, cpu-memory"),
    ],
)
def test_an_unknown_profile_or_kind_exits_2_with_the_valid_names(args: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["curve", *args, "--cap-pct", "50"]) == 2
    assert message in capsys.readouterr().err


# Issue 34: the clock lock, the serving kinds, sweeps over the lock, the plot with the cited points.


def test_a_clock_lock_alone_and_with_a_cap_the_lower_clock_wins(capsys: pytest.CaptureFixture[str]) -> None:
    base = ["curve", "--profile", "nvidia-h100-sxm-8gpu", "--class", "gpu-training", "--json"]
    assert main([*base, "--clock-pct", "60"]) == 0
    locked = json.loads(capsys.readouterr().out)
    assert locked["lock_mhz"] == pytest.approx(1188.0) and locked["clock_ratio"] == pytest.approx(0.6) and locked["cap_pct"] == 100.0
    assert main([*base, "--clock-mhz", "1188"]) == 0
    assert json.loads(capsys.readouterr().out)["throughput"] == pytest.approx(locked["throughput"])
    assert main([*base, "--clock-pct", "60", "--cap-pct", "40"]) == 0  # the cap's clock is lower: it wins
    both = json.loads(capsys.readouterr().out)
    assert main([*base, "--cap-pct", "40"]) == 0
    capped = json.loads(capsys.readouterr().out)
    assert both["throughput"] == pytest.approx(capped["throughput"]) and both["throughput"] < locked["throughput"]


def test_a_lock_below_the_lowest_supported_clock_is_clamped_and_one_above_the_maximum_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["curve", "--profile", "nvidia-h100-sxm-8gpu", "--class", "gpu-inference-decode", "--clock-pct", "5", "--json"]) == 0
    printed = capsys.readouterr()
    assert json.loads(printed.out)["lock_mhz"] == 345.0 and "lowest supported clock (345 MHz): clamped" in printed.err
    assert main(["curve", "--profile", "nvidia-h100-sxm-8gpu", "--class", "gpu-training", "--clock-mhz", "2100"]) == 2
    assert "1980 MHz, the board's maximum SM clock" in capsys.readouterr().err
    assert main(["curve", "--profile", "intel-xeon-2s-rapl", "--class", "cpu-compute", "--clock-pct", "50"]) == 2
    assert "a clock lock applies to GPU kinds" in capsys.readouterr().err


def test_aggregated_serving_reports_each_phases_clock_and_refuses_a_util(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["curve", "--profile", "nvidia-h100-sxm-8gpu", "--class", "gpu-inference", "--cap-pct", "70", "--json"]
    assert main(args) == 0
    out = json.loads(capsys.readouterr().out)
    prefill, decode = out["phase_clock_ratios"]
    assert prefill < decode <= 1.0 and out["util"] == pytest.approx(0.64, abs=0.01)
    assert main([*args, "--util", "0.5"]) == 2
    assert "runs as phases" in capsys.readouterr().err


def test_a_clock_sweep_plots_every_serving_kind_beside_the_cited_points(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    png = tmp_path / "clock.png"
    kinds = "gpu-training,gpu-inference,gpu-inference-prefill,gpu-inference-decode"
    assert main(["curve", "--profile", "nvidia-h100-sxm-8gpu", "--class", kinds, "--sweep-clock", "--plot", str(png)]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    lines = capsys.readouterr().out.splitlines()
    decode = [ln.split() for ln in lines if ln.startswith("gpu-inference-decode")]
    assert decode[0][3] == "1980" and decode[-1][3] == "345"  # 100 % of the maximum clock down to the lowest supported
    assert main(["curve", "--profile", "nvidia-h100-sxm-8gpu", "--class", "gpu-training", "--sweep", "--sweep-clock"]) == 2
