"""Workload kinds: the default for old traces, the shares workloadgen mixes, the SWF rule, the Pod label."""

from __future__ import annotations

import json
import statistics

import pytest

from joulie_workload.extract import ExtractOptions, extract_swf, swf_kind
from joulie_workload.gen import GenOptions, generate
from joulie_workload.kinds import KINDS, SPECS, parse_shares
from joulie_workload.pods import LABEL_WORKLOAD_KIND, pod_manifest
from joulie_workload.trace import parse_lines


def test_a_record_without_a_kind_gets_the_documented_default_and_keeps_its_sensitivity() -> None:
    cpu = {"type": "job", "jobId": "a", "submitTimeOffsetSec": 0, "work": {"cpuUnits": 10}, "sensitivity": {"cpu": 0.7}}
    gpu = {"type": "job", "jobId": "b", "submitTimeOffsetSec": 0, "requests": {"gpu": 2}, "work": {"gpuUnits": 10}}
    a, b = parse_lines([json.dumps(cpu), json.dumps(gpu)], "old.jsonl")
    assert (a.kind, a.sensitivity.cpu) == ("cpu-compute", 0.7)
    assert b.kind == "gpu-training"
    assert a.record()["workloadKind"] == "cpu-compute"  # written traces always carry it


def test_an_unknown_kind_is_refused_naming_the_field() -> None:
    bad = {"type": "job", "jobId": "a", "submitTimeOffsetSec": 0, "work": {"cpuUnits": 1}, "workloadKind": "gpu-mining"}
    with pytest.raises(ValueError, match=r"x.jsonl:1: workloadKind: Input should be"):
        parse_lines([json.dumps(bad)], "x.jsonl")


def test_workloadgen_mixes_kinds_with_the_stated_shares_and_draws_their_distributions() -> None:
    jobs = generate(GenOptions(jobs=2000, seed=3, kind_shares=parse_shares("gpu-inference=1,cpu-memory=3")))
    counts = {k: sum(j.kind == k for j in jobs) for k in KINDS}
    assert counts["gpu-training"] == counts["cpu-compute"] == 0
    assert 400 <= counts["gpu-inference"] <= 600, counts
    mem = [j.sensitivity.cpu for j in jobs if j.kind == "cpu-memory"]
    dec = [j.sensitivity.gpu for j in jobs if j.kind == "gpu-inference"]
    assert statistics.mean(mem) == pytest.approx(SPECS["cpu-memory"].compute_share.mean, abs=0.02)
    assert statistics.mean(dec) == pytest.approx(SPECS["gpu-inference"].compute_share.mean, abs=0.02)
    assert statistics.stdev(mem) > 0.05  # a distribution, not a constant
    assert all(j.requests.gpu > 0 for j in jobs if j.kind == "gpu-inference")


def test_workloadgen_default_shares_follow_gpu_ratio() -> None:
    kinds, shares = GenOptions(gpu_ratio=0.4).shares()
    assert dict(zip(kinds, shares, strict=True)) == pytest.approx(
        {"gpu-training": 0.25, "gpu-inference": 0.15, "cpu-compute": 0.4, "cpu-memory": 0.2})


def test_kind_shares_refuse_unknown_kinds_and_all_zero() -> None:
    with pytest.raises(ValueError, match="--kind-shares: 'gpu-mining=1'"):
        parse_shares("gpu-mining=1")
    with pytest.raises(ValueError, match="gives no kind a share"):
        parse_shares("cpu-compute=0")


def test_traceextract_maps_the_working_set_per_processor_to_a_kind() -> None:
    assert swf_kind(4_000_000, -1, 2097152) == "cpu-memory"
    assert swf_kind(-1, 3_000_000, 2097152) == "cpu-memory"  # requested memory when used is unknown
    assert swf_kind(100_000, 9_000_000, 2097152) == "cpu-compute"
    assert swf_kind(-1, -1, 2097152) == "cpu-compute"
    swf = ["1 0 5 60 8 -1 4000000 8 100 -1 1 1 1 1 1 -1 -1 -1", "2 10 5 60 8 -1 1000 8 100 -1 1 1 1 1 1 -1 -1 -1"]
    jobs = extract_swf(swf, "x.swf", ExtractOptions()).jobs
    assert [(j.job_id, j.kind, j.sensitivity.cpu) for j in jobs] == [
        ("swf-1", "cpu-memory", round(SPECS["cpu-memory"].compute_share.mean, 3)),
        ("swf-2", "cpu-compute", round(SPECS["cpu-compute"].compute_share.mean, 3)),
    ]


def test_a_pod_carries_its_kind_as_label_and_annotation() -> None:
    job = generate(GenOptions(jobs=1, seed=1, kind_shares=parse_shares("gpu-inference=1")))[0]
    meta = pod_manifest(job, "c")["metadata"]
    assert LABEL_WORKLOAD_KIND == "joulie.io/workload-kind"
    assert meta["labels"][LABEL_WORKLOAD_KIND] == meta["annotations"][LABEL_WORKLOAD_KIND] == "gpu-inference"
