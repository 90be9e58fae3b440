"""Issue 34: serving phases in the trace, the serving kinds, and workloadgen writing them
(with every trace that holds no ``gpu-inference`` job what the generator wrote before)."""

from __future__ import annotations

import json
import statistics
from importlib import resources
from typing import Any

import pytest

from joulie_workload.gen import GenOptions, generate
from joulie_workload.kinds import (
    DECODE,
    KINDS,
    PREFILL,
    PREFILL_TIME_SHARE,
    SPECS,
    WorkloadKind,
    is_gpu_kind,
    parse_shares,
)
from joulie_workload.trace import TraceError, dump_lines, parse_lines

OLD_GPU_LINE = ('{"type":"job","jobId":"g","submitTimeOffsetSec":1,"workloadKind":"gpu-inference","requests":{"cpu":4,"gpu":1},'
                '"work":{"gpuUnits":60},"utilization":{"gpu":0.7},"sensitivity":{"gpu":0.26}}')


def _job(**extra: Any) -> dict[str, Any]:
    return {**json.loads(OLD_GPU_LINE), **extra}


def _phase(name: str, share: float, c: float = 0.5, u: float = 0.5) -> dict[str, Any]:
    return {"name": name, "timeShare": share, "sensitivity": {"gpu": c}, "utilization": {"gpu": u}}


def test_an_old_format_line_loads_exactly_as_before_and_is_written_without_phases() -> None:
    (job,) = parse_lines([OLD_GPU_LINE], "old.jsonl")
    assert job.phases is None
    assert job.gpu_phase_mix() == ((1.0, 0.26, 0.7),)
    # The record a trace file gets is the one written before phases existed: no "phases" key at all.
    record = job.record()
    assert "phases" not in record
    assert record == {
        "type": "job", "schemaVersion": "v1", "jobId": "g", "submitTimeOffsetSec": 1.0, "class": "general",
        "workloadKind": "gpu-inference", "namespace": "default",
        "requests": {"cpu": 4.0, "gpu": 1, "memoryMi": 64, "gpuResource": "nvidia.com/gpu"},
        "work": {"cpuUnits": 0.0, "gpuUnits": 60.0}, "utilization": {"cpu": 0.9, "gpu": 0.7},
        "sensitivity": {"cpu": 1.0, "gpu": 0.26}, "nodeSelector": {}, "tolerations": [],
    }
    # null is the same as absent.
    assert parse_lines([json.dumps(_job(phases=None))], "t.jsonl") == [job]


def test_phases_load_round_trip_and_give_the_mix() -> None:
    line = json.dumps(_job(phases=[_phase("prefill", 0.2, 0.9, 0.95), _phase("decode", 0.8, 0.14, 0.5)]))
    (job,) = parse_lines([line], "t.jsonl")
    assert job.gpu_phase_mix() == ((0.2, 0.9, 0.95), (0.8, 0.14, 0.5))
    assert parse_lines(list(dump_lines([job])), "t.jsonl") == [job]
    (one,) = parse_lines([json.dumps(_job(phases=[_phase("decode", 1)]))], "t.jsonl")
    assert one.gpu_phase_mix() == ((1.0, 0.5, 0.5),)


@pytest.mark.parametrize(
    ("phases", "extra", "expect"),
    [
        ([_phase("prefill", 0.5), _phase("decode", 0.4)], {}, "t.jsonl:1: phases: timeShare values sum to 0.9, not 1"),
        ([_phase("decode", 0.5), _phase("decode", 0.5)], {}, "t.jsonl:1: phases: name 'decode' appears more than once"),
        ([_phase("verify", 1)], {}, "t.jsonl:1: phases.0.name: Input should be 'prefill' or 'decode'"),
        ([_phase("prefill", 0), _phase("decode", 1)], {}, "t.jsonl:1: phases.0.timeShare: Input should be greater than 0"),
        ([_phase("prefill", 1.5)], {}, "t.jsonl:1: phases.0.timeShare: Input should be less than or equal to 1"),
        ([_phase("decode", 1, c=1.2)], {}, "t.jsonl:1: phases.0.sensitivity.gpu: Input should be less than or equal to 1"),
        ([{"name": "decode", "timeShare": 1, "sensitivity": {"gpu": 0.1}}], {}, "t.jsonl:1: phases.0.utilization: Field required"),
        ([{**_phase("decode", 1), "sensitivity": {"gpu": 0.1, "cpu": 1}}], {},
         "t.jsonl:1: phases.0.sensitivity.cpu: Extra inputs are not permitted"),
        ([], {}, "t.jsonl:1: phases: empty list"),
        ([_phase("decode", 1)], {"workloadKind": "cpu-memory", "requests": {"cpu": 1}, "work": {"cpuUnits": 5}},
         "t.jsonl:1: phases: describe GPU work, but workloadKind cpu-memory is a CPU kind"),
        ([_phase("decode", 1)], {"workloadKind": "gpu-training", "requests": {"cpu": 1}, "work": {"cpuUnits": 5}},
         "t.jsonl:1: phases: describe GPU work, but requests.gpu is 0"),
        ("decode", {}, "t.jsonl:1: phases: Input should be a valid list"),
    ],
)
def test_a_bad_phases_field_names_the_line_and_the_field(phases: Any, extra: dict[str, Any], expect: str) -> None:
    with pytest.raises(TraceError) as err:
        parse_lines([json.dumps(_job(phases=phases, **extra))], "t.jsonl")
    assert str(err.value).startswith(expect), str(err.value)


def test_phases_sum_within_a_millionth_is_accepted() -> None:
    line = json.dumps(_job(phases=[_phase("prefill", 0.1234), _phase("decode", 0.8766 + 5e-7)]))
    assert parse_lines([line], "t.jsonl")[0].phases is not None


def test_any_gpu_kind_may_carry_phases() -> None:
    for kind in KINDS:
        if not is_gpu_kind(kind):
            continue
        (job,) = parse_lines([json.dumps(_job(workloadKind=kind, phases=[_phase("decode", 1)]))], "t.jsonl")
        assert job.kind == kind
    assert not is_gpu_kind("cpu-compute") and not is_gpu_kind("gpu-mining")


@pytest.mark.parametrize(
    ("golden", "opts"),
    [
        ("gen-golden-no-inference.jsonl",
         GenOptions(jobs=80, seed=7, kind_shares=parse_shares("gpu-training=0.3,cpu-compute=0.4,cpu-memory=0.3"))),
        ("gen-golden-cpu-only.jsonl",
         GenOptions(jobs=40, seed=3, gpu_ratio=0.0, diurnal_amplitude=0.6, day_s=3600, mean_interarrival_s=60)),
    ],
)
def test_a_trace_without_gpu_inference_is_byte_identical_to_the_generator_before_phases(golden: str, opts: GenOptions) -> None:
    # The golden files are the output of the generator at the commit before issue 34 (git show
    # HEAD:libs/workload/joulie_workload/{gen,kinds,trace}.py, run with these options), dump_lines per job.
    want = resources.files("joulie_workload").joinpath(f"testdata/{golden}").read_text(encoding="utf-8")
    got = "".join(line + "\n" for line in dump_lines(generate(opts)))
    assert got == want


def test_serving_kinds_shares_parse_and_do_not_change_the_default_mix() -> None:
    shares = parse_shares("gpu-inference-prefill=1,gpu-inference-decode=3")
    assert shares == {"gpu-inference-prefill": 0.25, "gpu-inference-decode": 0.75}
    kinds, weights = GenOptions().shares()
    assert "gpu-inference-decode" not in kinds and len(weights) == 4


def test_workloadgen_writes_phases_for_aggregated_inference_with_their_time_weighted_means() -> None:
    jobs = generate(GenOptions(jobs=1500, seed=11, kind_shares=parse_shares("gpu-inference=1")))
    prefill_share, c_pre, u_pre, c_dec, u_dec = [], [], [], [], []
    for j in jobs:
        assert j.kind == "gpu-inference" and j.phases is not None
        pre, dec = j.phases
        assert (pre.name, dec.name) == ("prefill", "decode")
        assert pre.time_share + dec.time_share == pytest.approx(1.0, abs=1e-9)
        mean_c = sum(s * c for s, c, _ in j.gpu_phase_mix())
        mean_u = sum(s * u for s, _, u in j.gpu_phase_mix())
        assert j.sensitivity.gpu == pytest.approx(mean_c, abs=6e-4)
        assert j.utilization.gpu == pytest.approx(mean_u, abs=6e-4)
        prefill_share.append(pre.time_share)
        c_pre.append(pre.sensitivity.gpu)
        u_pre.append(pre.utilization.gpu)
        c_dec.append(dec.sensitivity.gpu)
        u_dec.append(dec.utilization.gpu)
    assert statistics.mean(prefill_share) == pytest.approx(PREFILL_TIME_SHARE.mean, abs=0.005)
    assert statistics.mean(c_pre) == pytest.approx(PREFILL.compute_share.mean, abs=0.01)
    assert statistics.mean(u_pre) == pytest.approx(PREFILL.natural_draw.mean, abs=0.01)
    assert statistics.mean(c_dec) == pytest.approx(DECODE.compute_share.mean, abs=0.01)
    assert statistics.mean(u_dec) == pytest.approx(DECODE.natural_draw.mean, abs=0.02)
    # Decode's draw is wide (A1's small batches to A2's large ones), prefill's near the top.
    assert statistics.quantiles(u_dec, n=20)[0] < 0.2 and statistics.quantiles(u_dec, n=20)[-1] > 0.9
    assert min(u_pre) > 0.6
    # The aggregated kind's spec means are the time-weighted means the jobs carry.
    assert statistics.mean(j.sensitivity.gpu for j in jobs) == pytest.approx(SPECS["gpu-inference"].compute_share.mean, abs=0.01)
    assert statistics.mean(j.utilization.gpu for j in jobs) == pytest.approx(SPECS["gpu-inference"].natural_draw.mean, abs=0.015)


def test_the_aggregated_kind_keeps_the_calibrated_mean_compute_share() -> None:
    # docs/physics-calibration.md fits gpu-inference's mean c to Samsi et al. (0.26): decode's c is set so it stays.
    assert SPECS["gpu-inference"].compute_share.mean == pytest.approx(6.5 / 25, abs=0.002)
    unchanged: tuple[tuple[WorkloadKind, float, float], ...] = (
        ("gpu-training", 13 / 25, 17 / 20), ("cpu-compute", 18 / 19, 0.9), ("cpu-memory", 0.35, 0.7))
    for kind, c, u in unchanged:
        assert (SPECS[kind].compute_share.mean, SPECS[kind].natural_draw.mean) == pytest.approx((c, u))


def test_single_phase_serving_jobs_draw_their_phase_and_carry_no_phases() -> None:
    jobs = generate(GenOptions(jobs=600, seed=5, kind_shares=parse_shares("gpu-inference-prefill=1,gpu-inference-decode=1")))
    pre = [j for j in jobs if j.kind == "gpu-inference-prefill"]
    dec = [j for j in jobs if j.kind == "gpu-inference-decode"]
    assert pre and dec and all(j.phases is None and j.requests.gpu > 0 for j in jobs)
    assert statistics.mean(j.sensitivity.gpu for j in pre) == pytest.approx(PREFILL.compute_share.mean, abs=0.015)
    assert statistics.mean(j.sensitivity.gpu for j in dec) == pytest.approx(DECODE.compute_share.mean, abs=0.015)
    assert all("phases" not in json.loads(line) for line in dump_lines(jobs))
