from __future__ import annotations

import pytest

from joulie_hwprofiles.schema import builtin_profile
from joulie_simulator.physics import cpu as physics_cpu
from joulie_simulator.physics import gpu as physics_gpu
from joulie_simulator.physics.variants import (
    ALL,
    CALIBRATED,
    VARIANTS,
    physics_variant,
    variant_job,
    variant_jobs,
    variant_profile,
)
from joulie_workload.pods import pod_manifest
from joulie_workload.trace import Job

H100 = builtin_profile("nvidia-h100-nvl-8gpu")
XEON = builtin_profile("intel-xeon-2s-rapl")


def _serving_job() -> Job:
    return Job.model_validate({
        "jobId": "j-1", "submitTimeOffsetSec": 0, "class": "eco", "workloadKind": "gpu-inference",
        "requests": {"cpu": 4, "gpu": 1}, "work": {"cpuUnits": 10, "gpuUnits": 100},
        "utilization": {"cpu": 0.5, "gpu": 0.64}, "sensitivity": {"cpu": 0.3, "gpu": 0.155 * 0.9 + 0.845 * 0.14},
        "phases": [{"name": "prefill", "timeShare": 0.155, "sensitivity": {"gpu": 0.9}, "utilization": {"gpu": 0.95}},
                   {"name": "decode", "timeShare": 0.845, "sensitivity": {"gpu": 0.14}, "utilization": {"gpu": 0.58}}],
    })


def test_there_are_at_least_four_variants_each_with_its_source_and_all_at_once() -> None:
    moved = [v for v in VARIANTS.values() if v.name != CALIBRATED]
    assert len(moved) >= 5 and ALL in VARIANTS
    for v in VARIANTS.values():
        assert v.summary and v.source and v.name in v.describe()
    assert all(v.changes_profiles or v.changes_jobs or v.changes_telemetry for v in moved)
    assert not VARIANTS[CALIBRATED].changes_profiles and not VARIANTS[CALIBRATED].changes_jobs
    assert not VARIANTS[CALIBRATED].changes_telemetry


def test_calibrated_leaves_profile_and_jobs_as_they_are() -> None:
    v = VARIANTS[CALIBRATED]
    job = _serving_job()
    assert variant_profile(H100, v) is H100
    assert variant_job(job, v) is job


def test_the_gpu_exponent_variants_move_only_the_exponent_of_the_emulated_board() -> None:
    low = variant_profile(H100, VARIANTS["gpu-exp-2.0"])
    high = variant_profile(H100, VARIANTS["gpu-exp-3.2"])
    assert H100.physics.gpu is not None and low.physics.gpu is not None and high.physics.gpu is not None
    assert (H100.physics.gpu.clock_power_exponent, low.physics.gpu.clock_power_exponent,
            high.physics.gpu.clock_power_exponent) == (2.5, 2.0, 3.2)
    assert low.physics.gpu.fixed_dynamic_frac == H100.physics.gpu.fixed_dynamic_frac
    # What the controller and the agent see of the node is the same object: only the physics moved.
    assert low.gpus is H100.gpus and low.node is H100.node and low.name == H100.name
    assert low.physics.gpu.source.startswith("assumed:physics variant gpu-exp-2.0")
    # The board notices: under the same 250 W limit a lower exponent leaves a lower clock (power falls more
    # slowly with the clock, so the clock must go further), a higher one a higher clock.
    clocks = [physics_gpu.clock_ratio_for_limit(p.physics.gpu, 0.9, 250.0) for p in (low, H100, high)
              if p.physics.gpu is not None]
    assert clocks[0] < clocks[1] < clocks[2] < 1.0


def test_a_larger_non_clock_share_takes_the_clock_lower_under_the_same_limit() -> None:
    wide = variant_profile(H100, VARIANTS["fixed-share-high"])
    assert wide.physics.gpu is not None and H100.physics.gpu is not None
    assert wide.physics.gpu.fixed_dynamic_frac == 0.35
    assert (physics_gpu.clock_ratio_for_limit(wide.physics.gpu, 0.9, 250.0)
            < physics_gpu.clock_ratio_for_limit(H100.physics.gpu, 0.9, 250.0))


def test_the_cpu_exponent_variants_change_the_package_power_at_a_lower_clock() -> None:
    low = variant_profile(XEON, VARIANTS["cpu-exp-low"])
    high = variant_profile(XEON, VARIANTS["cpu-exp-high"])
    assert (low.physics.cpu.freq_power_exponent, high.physics.cpu.freq_power_exponent) == (1.2, 2.0)
    powers = [physics_cpu.package_power_w(p.physics.cpu, 1.0, 0.7) for p in (low, XEON, high)]
    assert powers[0] > powers[1] > powers[2]
    # Full clock: the same draw (the variants move the curve, not its ends).
    assert physics_cpu.package_power_w(low.physics.cpu, 1.0, 1.0) == physics_cpu.package_power_w(XEON.physics.cpu, 1.0, 1.0)
    assert low.physics.gpu is None  # a CPU node keeps no board


def test_compute_bound_shifts_every_share_toward_one_and_the_pod_stays_the_same() -> None:
    job = _serving_job()
    got = variant_job(job, VARIANTS["compute-bound"])
    assert got.phases is not None and job.phases is not None
    assert got.sensitivity.gpu == pytest.approx(1 - 0.6 * (1 - job.sensitivity.gpu))
    assert got.sensitivity.cpu == pytest.approx(1 - 0.6 * 0.7)
    assert [p.sensitivity.gpu for p in got.phases] == pytest.approx([1 - 0.6 * 0.1, 1 - 0.6 * 0.86])
    # The top-level share stays the phases' time-weighted mean (the shift is affine).
    assert got.sensitivity.gpu == pytest.approx(sum(p.time_share * p.sensitivity.gpu for p in got.phases))
    assert (got.kind, got.workload_class, got.requests, got.work) == (job.kind, job.workload_class, job.requests, job.work)
    # What the controller reads (the Pod) does not change: its kind prior is now wrong.
    assert pod_manifest(got, "c", with_class_constraints=True) == pod_manifest(job, "c", with_class_constraints=True)
    assert job.sensitivity.cpu == 0.3  # the input is not touched


def test_all_moves_everything_at_once_toward_a_costlier_cap() -> None:
    v = VARIANTS[ALL]
    prof = variant_profile(H100, v)
    assert prof.physics.gpu is not None
    assert (prof.physics.gpu.clock_power_exponent, prof.physics.gpu.fixed_dynamic_frac,
            prof.physics.cpu.freq_power_exponent) == (2.0, 0.35, 1.2)
    [job] = variant_jobs([_serving_job()], v)
    assert job.sensitivity.cpu == pytest.approx(0.58)


def test_an_unknown_variant_names_the_ones_there_are() -> None:
    assert physics_variant(" gpu-exp-2.0 ").name == "gpu-exp-2.0"
    with pytest.raises(ValueError, match="calibrated, gpu-exp-2.0"):
        physics_variant("noisy")
