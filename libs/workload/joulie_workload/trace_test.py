"""Trace format, workloadgen and traceextract: what a user feeds the simulator."""

from __future__ import annotations

import json
from itertools import pairwise
from pathlib import Path

import pytest

from joulie_workload.extract import ExtractOptions, extract_swf, parse_queue_classes
from joulie_workload.gen import GenOptions, generate
from joulie_workload.pods import pod_manifest
from joulie_workload.trace import TraceError, load_trace, parse_lines, write_trace

GOOD = '{"type":"job","jobId":"a","submitTimeOffsetSec":3,"class":"eco","requests":{"cpu":4},"work":{"cpuUnits":40}}'


def test_a_good_trace_loads_with_defaults_and_skips_other_records() -> None:
    jobs = parse_lines(["# comment", "", '{"type":"workload","id":"w"}', GOOD], "t.jsonl")
    assert len(jobs) == 1
    j = jobs[0]
    assert (j.job_id, j.submit_s, j.workload_class, j.requests.cpu, j.requests.gpu) == ("a", 3.0, "eco", 4.0, 0)
    assert j.ideal_runtime_s == 10.0
    assert j.sensitivity.cpu == 1.0 and j.namespace == "default"


@pytest.mark.parametrize(
    ("line", "expect"),
    [
        ("{not json", "t.jsonl:2: not JSON"),
        ("[1]", "t.jsonl:2: (record): a record is a JSON object"),
        ('{"jobId":"x"}', "t.jsonl:2: type: missing"),
        ('{"type":"job","submitTimeOffsetSec":1,"work":{"cpuUnits":1}}', "t.jsonl:2: jobId: Field required"),
        ('{"type":"job","jobId":"x","submitTimeOffsetSec":-1,"work":{"cpuUnits":1}}', "t.jsonl:2: submitTimeOffsetSec: "),
        ('{"type":"job","jobId":"x","submitTimeOffsetSec":1,"class":"turbo","work":{"cpuUnits":1}}', "t.jsonl:2: class: "),
        ('{"type":"job","jobId":"x","submitTimeOffsetSec":1,"requests":{"cpu":0},"work":{"cpuUnits":1}}', "t.jsonl:2: requests.cpu: "),
        ('{"type":"job","jobId":"x","submitTimeOffsetSec":1}', "t.jsonl:2: work: a job needs cpuUnits or gpuUnits > 0"),
        ('{"type":"job","jobId":"x","submitTimeOffsetSec":1,"work":{"gpuUnits":5}}', "t.jsonl:2: work.gpuUnits: > 0 but requests.gpu is 0"),
        ('{"type":"job","jobId":"x","submitTimeOffsetSec":1,"work":{"cpuUnits":1},"colour":"red"}', "t.jsonl:2: colour: Extra inputs"),
        (GOOD, "t.jsonl:2: jobId: 'a' already used on line 1"),
        ('{"type":"job","jobId":"x","submitTimeOffsetSec":1,"requests":{"gpu":1,"gpuResource":"gpu"},"work":{"gpuUnits":1}}',
         "t.jsonl:2: requests.gpuResource: String should match pattern"),
        ('{"type":"job","jobId":"x","submitTimeOffsetSec":1,"work":{"cpuUnits":1},"nodeSelector":{"a":1}}',
         "t.jsonl:2: nodeSelector.a: Input should be a valid string"),
        ('{"type":"job","jobId":"x","submitTimeOffsetSec":1,"work":{"cpuUnits":1},"tolerations":[{"key":"a","operator":"Exists","value":"b"}]}',
         "t.jsonl:2: tolerations.0: value: must be empty with operator Exists"),
    ],
)
def test_a_bad_line_names_file_line_and_field(line: str, expect: str) -> None:
    with pytest.raises(TraceError) as err:
        parse_lines([GOOD, line], "t.jsonl")
    assert str(err.value).startswith(expect), str(err.value)


def test_a_pinned_amd_gpu_job_becomes_a_pod_on_that_node_asking_for_amd_gpus() -> None:
    line = ('{"type":"job","jobId":"load-mi300x-0","submitTimeOffsetSec":0,"requests":{"cpu":100,"gpu":8,'
            '"gpuResource":"amd.com/gpu"},"work":{"gpuUnits":8000},'
            '"nodeSelector":{"kubernetes.io/hostname":"mi300x-0","sim.joulie.io/cluster":"other"}}')
    (job,) = parse_lines([line], "t.jsonl")
    spec = pod_manifest(job, "smoke")["spec"]
    # The cluster's own selector wins over a trace that names another cluster.
    assert spec["nodeSelector"] == {"kubernetes.io/hostname": "mi300x-0", "sim.joulie.io/cluster": "smoke"}
    res = spec["containers"][0]["resources"]
    assert res["requests"]["amd.com/gpu"] == "8" and res["limits"] == {"amd.com/gpu": "8"}
    assert "nvidia.com/gpu" not in res["requests"]


def test_a_job_tolerates_its_own_taints_beside_kwoks() -> None:
    line = ('{"type":"job","jobId":"x","submitTimeOffsetSec":0,"work":{"cpuUnits":1},"tolerations":['
            '{"key":"nvidia.com/gpu","operator":"Exists","effect":"NoSchedule"},{"key":"dedicated","value":"managed"}]}')
    (job,) = parse_lines([line], "t.jsonl")
    assert pod_manifest(job, "smoke")["spec"]["tolerations"] == [
        {"key": "kwok.x-k8s.io/node", "operator": "Equal", "value": "fake", "effect": "NoSchedule"},
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
        {"key": "dedicated", "operator": "Equal", "value": "managed"},
    ]
    assert parse_lines([json.dumps(job.record())], "t.jsonl") == [job]


def test_workloadgen_is_deterministic_per_seed_and_round_trips(tmp_path: Path) -> None:
    opts = GenOptions(jobs=200, seed=7, perf_ratio=0.3, eco_ratio=0.1, gpu_ratio=0.4)
    a, b, c = generate(opts), generate(opts), generate(GenOptions(jobs=200, seed=8))
    assert a == b and a != c
    assert [j.submit_s for j in a] == sorted(j.submit_s for j in a)
    classes = {cls: sum(j.workload_class == cls for j in a) for cls in ("performance", "eco", "general")}
    assert 40 <= classes["performance"] <= 80 and 8 <= classes["eco"] <= 35, classes
    gpu_jobs = [j for j in a if j.requests.gpu]
    assert 55 <= len(gpu_jobs) <= 105 and all(j.work.gpu_units > 0 for j in gpu_jobs)
    path = tmp_path / "trace.jsonl"
    assert write_trace(path, a) == 200
    assert load_trace(path) == a


def test_workloadgen_refuses_bad_options() -> None:
    with pytest.raises(ValueError, match=r"--perf-ratio \+ --eco-ratio: 1.2 exceeds 1"):
        generate(GenOptions(perf_ratio=0.7, eco_ratio=0.5))


SWF = """; Version: 2.2
; a comment
1 100 5 60 8 -1 -1 8 100 -1 1 1 1 1 1 -1 -1 -1
2 40 0 30 -1 -1 -1 128 100 -1 1 1 1 1 2 -1 -1 -1
3 50 0 -1 4 -1 -1 4 100 -1 0 1 1 1 1 -1 -1 -1
"""


def test_traceextract_normalises_swf() -> None:
    out = extract_swf(SWF.splitlines(), "x.swf", ExtractOptions(max_cpus=64, queue_classes=parse_queue_classes("2=performance")))
    assert out.skipped == {"no run time": 1}
    assert [(j.job_id, j.submit_s, j.requests.cpu, j.work.cpu_units, j.workload_class) for j in out.jobs] == [
        ("swf-2", 0.0, 64.0, 64 * 30.0, "performance"),
        ("swf-1", 60.0, 8.0, 8 * 60.0, "general"),
    ]
    with pytest.raises(TraceError, match=r"x.swf:1: field 2 \(submit time\): 'soon' is not a number"):
        extract_swf(["1 soon 5 60 8 -1 -1 8 100 -1 1 1 1 1 1 -1 -1 -1"], "x.swf", ExtractOptions())
    with pytest.raises(ValueError, match="--queue-classes: '2=fast'"):
        parse_queue_classes("2=fast")


def test_a_daily_cycle_moves_arrivals_into_the_day_and_keeps_the_jobs() -> None:
    flat = generate(GenOptions(jobs=3000, seed=3, mean_interarrival_s=200))  # ~7 days
    cyc = generate(GenOptions(jobs=3000, seed=3, mean_interarrival_s=200, diurnal_amplitude=0.6, day_s=86400))
    # The same jobs (every draw but the times), in the same order.
    assert [(j.job_id, j.requests, j.work) for j in flat] == [(j.job_id, j.requests, j.work) for j in cyc]
    assert all(a.submit_s <= b.submit_s for a, b in pairwise(cyc))
    # Rate 1 + 0.6 sin: the quarter around the peak gets about 4x the arrivals of the trough quarter.
    day = [j.submit_s % 86400 for j in cyc]
    peak = sum(1 for t in day if 0.125 * 86400 <= t < 0.375 * 86400)
    trough = sum(1 for t in day if 0.625 * 86400 <= t < 0.875 * 86400)
    assert 2.5 < peak / trough < 6, (peak, trough)
    flat_day = [j.submit_s % 86400 for j in flat]
    flat_ratio = sum(1 for t in flat_day if 0.125 * 86400 <= t < 0.375 * 86400) / max(
        1, sum(1 for t in flat_day if 0.625 * 86400 <= t < 0.875 * 86400))
    assert 0.7 < flat_ratio < 1.4
    # The mean rate is unchanged: the same jobs span about the same time.
    assert abs(cyc[-1].submit_s - flat[-1].submit_s) < 86400 * 0.6 / 3.14


def test_diurnal_options_are_checked() -> None:
    with pytest.raises(ValueError, match="--diurnal-amplitude: 1.0"):
        generate(GenOptions(jobs=1, diurnal_amplitude=1.0))
    with pytest.raises(ValueError, match="--day-s: 0"):
        generate(GenOptions(jobs=1, day_s=0))
