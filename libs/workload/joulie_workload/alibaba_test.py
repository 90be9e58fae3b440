"""Issue 34: the Alibaba PAI GPU trace (cluster-trace-gpu-v2023) read into our trace, every rule of
``alibaba`` on a small fixture, and the real file's counts when it is present."""

from __future__ import annotations

import hashlib
import os
from importlib import resources
from pathlib import Path

import pytest

from joulie_workload.alibaba import AlibabaOptions, extract_alibaba
from joulie_workload.chunks import cut_units
from joulie_workload.kinds import SPECS
from joulie_workload.trace import TraceError, dump_lines, parse_lines

SAMPLE = resources.files("joulie_workload").joinpath("testdata/alibaba-gpu-v2023-sample.csv").read_text(encoding="utf-8")
HEADER = SAMPLE.splitlines()[0]
REAL = Path(os.environ.get("JOULIE_ALIBABA_GPU_TRACE",
                           "/work/shared/data/alibaba-gpu-v2023/alibaba-v2023-openb_pod_list_default.csv"))
REAL_SHA256 = "1ee7ed79c27a3b0861cda8ddba86a004c6aba904caafa329a76ae93ca63834a8"  # PROVENANCE.md


def test_every_skip_reason_is_counted_never_silent() -> None:
    got = extract_alibaba(SAMPLE.splitlines(), "s.csv", AlibabaOptions())
    assert got.skipped == {
        "never scheduled": 1, "still running at the trace's end": 1, "deleted before created": 1, "no run time": 1,
        "no deletion time": 1, "inconsistent GPU request": 1, "unknown QoS": 1, "no CPU request": 1,
    }
    assert got.summary.trace_end_s == 10000  # the file's last deletion time
    assert got.summary.pods == 14 and got.summary.kept == len(got.jobs) == 6
    assert dict(got.summary.phases) == {"Running": 3, "Succeeded": 2, "Failed": 1}


def test_kind_and_class_follow_qos_and_gpus() -> None:
    got = extract_alibaba(SAMPLE.splitlines(), "s.csv", AlibabaOptions())
    assert {j.job_id: (j.kind, j.workload_class) for j in got.jobs} == {
        "fx-ls-whole": ("gpu-inference", "performance"),
        "fx-ls-cpu": ("cpu-compute", "performance"),
        "fx-be-shared": ("gpu-training", "eco"),
        "fx-be-cpu": ("cpu-compute", "eco"),
        "fx-burstable-8gpu": ("gpu-inference", "general"),
        "fx-guaranteed": ("gpu-inference", "general"),
    }


def test_times_resources_and_work_units() -> None:
    got = extract_alibaba(SAMPLE.splitlines(), "s.csv", AlibabaOptions(time_scale=10))
    jobs = {j.job_id: j for j in got.jobs}
    # Arrival from the earliest KEPT pod (fx-ls-whole at 100; the Pending pod at 50 does not count), / 10.
    assert [(j.job_id, j.submit_s) for j in got.jobs][:3] == [("fx-ls-whole", 0.0), ("fx-ls-cpu", 10.0), ("fx-be-shared", 20.0)]
    ls = jobs["fx-ls-whole"]
    assert (ls.requests.cpu, ls.requests.gpu, ls.requests.memory_mi) == (12.0, 1, 16384)
    assert ls.work.gpu_units == 100.0 and ls.work.cpu_units == pytest.approx(0.2 * 12 * 100)  # runtime 1000 s / 10
    cpu = jobs["fx-ls-cpu"]  # runtime = deletion - scheduled = 250 s: the SWF convention, cores x runtime
    assert (cpu.requests.cpu, cpu.requests.gpu, cpu.work.cpu_units, cpu.work.gpu_units) == (4.0, 0, 100.0, 0.0)
    assert cpu.sensitivity.cpu == round(SPECS["cpu-compute"].compute_share.mean, 3)
    assert jobs["fx-be-cpu"].requests.memory_mi == 64  # memory_mib 0: the trace default
    big = jobs["fx-burstable-8gpu"]
    assert (big.requests.gpu, big.work.gpu_units) == (8, 8 * 198.0)
    assert ls.ideal_runtime_s == 100.0 and big.ideal_runtime_s == pytest.approx(198.0)


def test_a_fractional_gpu_is_rounded_up_and_the_effect_measured() -> None:
    got = extract_alibaba(SAMPLE.splitlines(), "s.csv", AlibabaOptions())
    shared = next(j for j in got.jobs if j.job_id == "fx-be-shared")
    assert shared.requests.gpu == 1 and shared.work.gpu_units == 400.0
    assert shared.origin == {"trace": "alibaba-gpu-v2023", "pod": "fx-be-shared", "qos": "BE", "podPhase": "Failed",
                             "numGpu": 1, "gpuMilli": 460}
    s = got.summary
    assert s.fractional_gpu_pods == 1
    assert s.gpu_s_requested == pytest.approx(1000 + 0.46 * 400 + 8 * 1980 + 300)
    assert s.gpu_s_rounded == pytest.approx(1000 + 400 + 8 * 1980 + 300)
    assert s.rounding_ratio == pytest.approx(17540 / 17324)
    text = "\n".join(s.lines())
    assert "fractional GPUs rounded up to 1 whole GPU: 1 pods" in text and "(x1.012)" in text


def test_aggregated_inference_pods_carry_their_phases_at_the_means() -> None:
    got = extract_alibaba(SAMPLE.splitlines(), "s.csv", AlibabaOptions())
    for j in got.jobs:
        if j.kind != "gpu-inference":
            assert j.phases is None
            continue
        assert j.phases is not None and [p.name for p in j.phases] == ["prefill", "decode"]
        assert j.sensitivity.gpu == pytest.approx(SPECS["gpu-inference"].compute_share.mean, abs=2e-3)
        assert j.utilization.gpu == pytest.approx(SPECS["gpu-inference"].natural_draw.mean, abs=2e-3)
    # The extracted trace is a trace: it writes and loads back unchanged.
    assert parse_lines(list(dump_lines(got.jobs)), "x.jsonl") == got.jobs


def test_caps_limit_and_trace_end_are_options() -> None:
    got = extract_alibaba(SAMPLE.splitlines(), "s.csv", AlibabaOptions(max_cpus=16, max_gpus=4, max_memory_mi=65536, limit=5))
    big = next(j for j in got.jobs if j.job_id == "fx-burstable-8gpu")
    assert (big.requests.cpu, big.requests.gpu, big.requests.memory_mi) == (16.0, 4, 65536)
    assert dict(got.summary.capped) == {"cores": 1, "GPUs": 1, "memory": 1}
    assert got.summary.gpu_s_extracted == pytest.approx(1000 + 400 + 4 * 1980)
    assert len(got.jobs) == 5 and got.skipped["beyond --limit"] == 1
    later = extract_alibaba(SAMPLE.splitlines(), "s.csv", AlibabaOptions(trace_end_s=20000))
    assert "fx-running-at-end" in {j.job_id for j in later.jobs}


@pytest.mark.parametrize(
    ("lines", "expect"),
    [
        (["name,cpu_milli", "a,1"], "s.csv:1: (header): missing column(s) memory_mib"),
        ([HEADER, "a,lots,1,0,0,,LS,Running,0,10,0"], "s.csv:2: cpu_milli: 'lots' is not a number"),
        ([HEADER, "a,1000,1,0,0,,LS,Running,,10,0"], "s.csv:2: creation_time: '' is not a number"),
        ([HEADER, "a,1000,1,0,0,,LS,Running,0,10,0", "a,1000,1,0,0,,LS,Running,0,10,0"], "s.csv:3: name: 'a' already used on line 2"),
        ([HEADER, "a,1000,1,0,0,,LS,Running,0,10,0,extra"], "s.csv:2: (row): more fields"),
        ([HEADER, "a,2000000,1,0,0,,LS,Running,0,10,0", "b,1,1,0,0,,LS,Running,0,100,0"], "s.csv:2: requests.cpu: "),
    ],
)
def test_a_bad_row_names_the_file_line_and_column(lines: list[str], expect: str) -> None:
    with pytest.raises(TraceError) as err:
        extract_alibaba(lines, "s.csv", AlibabaOptions())
    assert str(err.value).startswith(expect), str(err.value)


def test_bad_options_are_refused() -> None:
    with pytest.raises(ValueError, match="--time-scale: 0"):
        extract_alibaba(SAMPLE.splitlines(), "s.csv", AlibabaOptions(time_scale=0))
    with pytest.raises(ValueError, match="--max-gpus: -1"):
        extract_alibaba(SAMPLE.splitlines(), "s.csv", AlibabaOptions(max_gpus=-1))


def test_an_extracted_trace_is_cut_into_units_like_an_swf_log() -> None:
    jobs = extract_alibaba(SAMPLE.splitlines(), "s.csv", AlibabaOptions()).jobs
    units = cut_units(jobs, 4, 10)
    assert [len(u) for u in units] == [4, 2]
    assert [u[0].submit_s for u in units] == [0.0, 0.0]
    assert [j.job_id for u in units for j in u] == [j.job_id for j in jobs]
    assert units[1][1].submit_s == jobs[5].submit_s - jobs[4].submit_s
    assert len(cut_units(jobs, 1, 3)) == 3 and cut_units([], 5, 5) == []


@pytest.mark.skipif(not REAL.is_file(), reason=f"the Alibaba GPU trace is not at {REAL} (set JOULIE_ALIBABA_GPU_TRACE)")
def test_the_real_trace_extracts_with_the_documented_counts() -> None:
    data = REAL.read_bytes()
    if hashlib.sha256(data).hexdigest() != REAL_SHA256:
        pytest.skip(f"{REAL} is not the file PROVENANCE.md names (sha256 differs): the counts below are that file's")
    got = extract_alibaba(data.decode("utf-8").splitlines(), str(REAL), AlibabaOptions())
    s = got.summary
    # 8152 pods (README); the 897 Pending pods have no scheduled_time; 34 are clipped at the trace's end.
    assert s.pods == 8152
    assert got.skipped == {"never scheduled": 897, "still running at the trace's end": 34}
    assert s.kept == len(got.jobs) == 8152 - 897 - 34
    assert dict(s.phases) == {"Running": 5193 - 34, "Failed": 1870, "Succeeded": 192}
    assert dict(s.kinds) == {"cpu-compute": 1050, "gpu-inference": 3663, "gpu-training": 2508}
    assert dict(s.classes) == {"performance": 4165, "eco": 2955, "general": 101}
    assert s.fractional_gpu_pods == 2562
    assert s.rounding_ratio == pytest.approx(1.077, abs=0.001)
    assert s.trace_end_s == 12_902_960
