"""Issue 23, defect 2: the workload runner survives an API server outage, quietly."""

from __future__ import annotations

import itertools
import threading

from kubernetes import client as k8s

from joulie_simulator.workload.kube.runner import WorkloadRunner
from joulie_workload.trace import Job

# What the kubernetes client raises when nothing listens (urllib3.exceptions.MaxRetryError).
MaxRetryError = type("MaxRetryError", (Exception,), {"__module__": "urllib3.exceptions"})


class StepClock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        self.t += 0.5
        return self.t


def test_an_api_outage_is_two_log_lines_and_the_run_goes_on() -> None:
    lines: list[str] = []
    job = Job.model_validate({"jobId": "j1", "submitTimeOffsetSec": 0, "work": {"cpuUnits": 10}})
    runner = WorkloadRunner(k8s.ApiClient(), "127.0.0.1:1", [job], "c", tick_s=0.001, clock=StepClock(),
                            log=lines.append)
    stop = threading.Event()
    ticks: list[float] = []

    def tick() -> None:
        ticks.append(runner.clock())
        if len(ticks) <= 6:
            raise MaxRetryError("HTTPConnectionPool(host='127.0.0.1', port=6443): Max retries exceeded with url: "
                                "/api/v1/namespaces/default/pods (Caused by NewConnectionError(...))")
        stop.set()

    runner.tick = tick  # type: ignore[method-assign]
    try:
        assert runner.run(stop, timeout_s=30) is False  # stopped, not crashed
    finally:
        runner.close()
    assert len(lines) == 2, lines
    assert lines[0].startswith("workload: tick failed (MaxRetryError: HTTPConnectionPool(") and "retrying" in lines[0]
    assert lines[1] == "workload: reaching the emulator and the API server again after 6 failed ticks"
    gaps = [b - a for a, b in itertools.pairwise(ticks)]
    assert gaps[3] >= 3 and gaps[4] >= 5  # backing off (1, 1, 2, 3, 5 s), not a try per tick


def test_a_bug_is_not_taken_for_an_outage() -> None:
    job = Job.model_validate({"jobId": "j1", "submitTimeOffsetSec": 0, "work": {"cpuUnits": 10}})
    runner = WorkloadRunner(k8s.ApiClient(), "127.0.0.1:1", [job], "c", tick_s=0.001, log=lambda _: None)

    def tick() -> None:
        raise KeyError("job-17")

    runner.tick = tick  # type: ignore[method-assign]
    try:
        runner.run(timeout_s=5)
        raise AssertionError("a KeyError must not be retried as if the API server were down")
    except KeyError:
        pass
    finally:
        runner.close()
