"""The restart decision, kubelet's CrashLoopBackOff: fake time, no processes."""

from __future__ import annotations

from joulie_simcluster.runtimes.supervision.backoff import BackoffPolicy, ProcessRecord, observe, policy_of, restarted
from joulie_simcluster.timing import timing

KUBELET = BackoffPolicy(10, 300, 600)


def test_delays_double_from_ten_seconds_to_five_minutes() -> None:
    assert [KUBELET.delay_s(n) for n in range(1, 8)] == [10, 20, 40, 80, 160, 300, 300]


def test_the_ci_timing_compresses_kubelets_backoff_and_production_keeps_it() -> None:
    assert policy_of(timing("production")) == KUBELET
    ci = policy_of(timing("ci"))
    assert ci.base_s < KUBELET.base_s and ci.max_s < KUBELET.max_s and ci.reset_after_s < KUBELET.reset_after_s


def _crash_and_restart(rec: ProcessRecord, pid: int, now_s: float) -> float:
    """The process `pid` is found dead at `now_s`; returns when it was restarted."""
    assert observe(rec, pid, False, now_s, KUBELET, "signal 9") == "waiting"
    t = rec.restart_at_s
    assert t is not None
    assert observe(rec, pid, False, t - 0.01, KUBELET) == "waiting"
    assert observe(rec, pid, False, t, KUBELET) == "restart"
    restarted(rec, pid + 1, t)
    return t


def test_each_crash_in_a_row_waits_twice_as_long_and_counts_a_restart() -> None:
    rec = ProcessRecord()
    assert observe(rec, 100, True, 0.0, KUBELET) == "running"
    t1 = _crash_and_restart(rec, 100, 5.0)
    assert t1 == 15.0 and rec.restarts == 1 and rec.last_exit == "signal 9"
    t2 = _crash_and_restart(rec, 101, t1 + 1)  # crashed again at once
    assert t2 - (t1 + 1) == 20.0 and rec.restarts == 2 and rec.crashes == 2
    assert observe(rec, 102, True, t2 + 1, KUBELET) == "running"
    assert rec.dead_since_s is None and rec.restart_at_s is None


def test_a_process_that_ran_past_the_reset_time_starts_at_the_first_wait_again() -> None:
    rec = ProcessRecord()
    now = 0.0
    for _ in range(4):
        now = _crash_and_restart(rec, rec.pid or 100, now + 1)
    assert rec.crashes == 4
    observe(rec, rec.pid, True, now, KUBELET)
    later = now + 601
    assert observe(rec, rec.pid, False, later, KUBELET) == "waiting"
    assert rec.crashes == 1 and rec.restart_at_s == later + 10


def test_a_new_pid_started_by_someone_else_is_a_new_incarnation_not_a_crash() -> None:
    rec = ProcessRecord()
    observe(rec, 100, True, 0.0, KUBELET)
    assert observe(rec, 200, True, 50.0, KUBELET) == "running"  # reload restarted it under the lock
    assert (rec.pid, rec.started_at_s, rec.restarts, rec.crashes) == (200, 50.0, 0, 0)


def test_the_record_round_trips_through_json() -> None:
    rec = ProcessRecord()
    observe(rec, 7, False, 3.0, KUBELET, "exit 1")
    assert ProcessRecord.from_json({**rec.to_json(), "unknown": 1}) == rec
