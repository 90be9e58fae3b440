"""``simcluster suspend-live``'s checks on made-up timelines: what passes and what each one catches."""

from __future__ import annotations

from pathlib import Path

import yaml

from joulie_simcluster.smoke import suspendlive as sl

SETTINGS = sl.LiveSettings(
    resume_retries=2, retry_backoff_s=4.0, resume_timeout_s=180.0, reconcile_s=3.0, forecast_day_s=150.0
)
REFUSED = "node xeon-0: On: HTTP 500 InternalError: The request failed due to an internal service error"


def refused_run(
    *, retry_at: tuple[float, float] = (64.2, 72.5), fail_reason: str = "", bound: tuple[float, str] = (92.0, "xeon-1")
) -> sl.Observed:
    """xeon-0 off, its power-on refused at +60, retried twice, failed; the Pod bound on xeon-1."""
    o = sl.Observed(refused_node="xeon-0", other_node="xeon-1", fault_set_s=59.0, refused_drawn=3)
    o.twins = [
        sl.TwinChange(40.0, "xeon-0", "off", "the BMC reads off"),
        sl.TwinChange(60.5, "xeon-0", "resuming", "Pending Pod default/refused-wake fits no powered node"),
        sl.TwinChange(retry_at[0], "xeon-0", "resuming", f"retry 1 of 2 after the BMC refused power-on: {REFUSED}"),
        sl.TwinChange(retry_at[1], "xeon-0", "resuming", f"retry 2 of 2 after the BMC refused power-on: {REFUSED}"),
        sl.TwinChange(
            retry_at[1] + 3.0,
            "xeon-0",
            "failed",
            fail_reason or f"the BMC refused power-on 3 times (RESUME_RETRIES=2): {REFUSED}; left cordoned",
        ),
        sl.TwinChange(retry_at[1] + 3.0, "xeon-1", "resuming", "Pending Pod default/refused-wake fits no powered node"),
    ]
    o.refused_pod = sl.PodSeen("refused-wake", 60.0, bound[0], bound[1])
    return o


def verdicts(checks: list[sl.Check]) -> dict[str, bool]:
    return {name: ok for name, ok, _ in checks}


def test_a_refused_power_on_retried_after_doubling_backoffs_then_failed_with_the_pod_elsewhere_passes() -> None:
    got = verdicts(sl.check_refused(refused_run(), SETTINGS))
    assert got == {
        "refused-power-on-retried-with-backoff": True,
        "failed-with-bmc-reason": True,
        "pod-bound-elsewhere-in-time": True,
    }


def test_a_retry_sent_before_its_backoff_fails_the_backoff_check() -> None:
    # The second retry 3 s after the first: the backoff after the second refusal is 8 s.
    got = verdicts(sl.check_refused(refused_run(retry_at=(64.2, 67.2)), SETTINGS))
    assert got["refused-power-on-retried-with-backoff"] is False


def test_a_failure_that_does_not_carry_the_bmcs_answer_fails() -> None:
    o = refused_run(fail_reason="not back within RESUME_TIMEOUT (3m): the BMC reads off; left cordoned")
    assert verdicts(sl.check_refused(o, SETTINGS))["failed-with-bmc-reason"] is False
    o = refused_run()
    o.refused_drawn = 1  # the simulator refused one power-on: the retries never reached the BMC
    assert verdicts(sl.check_refused(o, SETTINGS))["failed-with-bmc-reason"] is False


def test_a_pod_bound_late_or_on_the_refused_node_fails() -> None:
    late = refused_run(bound=(60.0 + 180.0 + 3.0 + 0.5, "xeon-1"))
    assert verdicts(sl.check_refused(late, SETTINGS))["pod-bound-elsewhere-in-time"] is False
    never = refused_run()
    never.refused_pod = sl.PodSeen("refused-wake", 60.0)
    assert verdicts(sl.check_refused(never, SETTINGS))["pod-bound-elsewhere-in-time"] is False


def burst_run(
    *, ahead_at: float | None = 345.0, on_at: float = 360.0, last_waits: tuple[float, ...] = (0.8, 1.2, 1.9)
) -> sl.Observed:
    """Bursts at +100, +250, +400; the first two woke a node for Pods already waiting."""
    o = sl.Observed(always_on="svc-0")
    o.twins = [
        sl.TwinChange(60.0, "xeon-1", "off", "the BMC reads off"),
        sl.TwinChange(101.0, "xeon-1", "resuming", "Pending Pod default/burst1-1 fits no powered node"),
        sl.TwinChange(117.0, "xeon-1", "on", "back on"),
        sl.TwinChange(170.0, "xeon-1", "suspending", "no workload Pods for 20s"),
        sl.TwinChange(173.0, "xeon-1", "off", "the BMC reads off"),
    ]
    o.emulator = [sl.EmuChange(173.0, "xeon-1", "off")]
    if ahead_at is not None:
        o.twins.append(
            sl.TwinChange(
                ahead_at,
                "xeon-1",
                "resuming",
                f"{sl.AHEAD_REASON}: pool * keeps 95 cores / "
                "0 GPUs free: forecast 0.75 Pods/min (daily (2 days)), 2 arrivals in 18 s",
            )
        )
        o.emulator.append(sl.EmuChange(on_at, "xeon-1", "on"))
    for i, created in enumerate((100.0, 250.0, 400.0)):
        waits = last_waits if i == 2 else (0.5, 17.0, 17.4)
        o.bursts.append(
            sl.Burst(
                i + 1,
                created,
                [sl.PodSeen(f"burst{i + 1}-{j}", created, created + w, "xeon-1") for j, w in enumerate(waits)],
            )
        )
    return o


def test_a_node_resumed_by_the_forecast_and_on_before_the_burst_with_no_wait_passes() -> None:
    got = verdicts(sl.check_ahead(burst_run()))
    assert got == {
        "resumed-ahead-of-burst": True,
        "ahead-node-on-before-burst": True,
        "burst-pods-no-resume-wait": True,
    }


def test_a_resume_only_once_the_pods_wait_fails_the_ahead_checks() -> None:
    o = burst_run(ahead_at=None, last_waits=(0.6, 16.8, 17.1))
    o.twins.append(sl.TwinChange(401.0, "xeon-1", "resuming", "Pending Pod default/burst3-1 fits no powered node"))
    got = verdicts(sl.check_ahead(o))
    assert got == {"resumed-ahead-of-burst": False, "burst-pods-no-resume-wait": False}


def test_a_resume_ahead_whose_boot_ends_after_the_burst_arrives_fails() -> None:
    got = verdicts(sl.check_ahead(burst_run(ahead_at=395.0, on_at=409.0, last_waits=(0.5, 9.5, 10.0))))
    assert got == {
        "resumed-ahead-of-burst": True,
        "ahead-node-on-before-burst": False,
        "burst-pods-no-resume-wait": False,
    }


def test_an_ahead_resume_right_after_the_previous_burst_is_not_one_for_the_next() -> None:
    # The recent rate after burst 2 keeps room warm: a resume at +270 is for burst 2's tail, not burst 3.
    o = burst_run(ahead_at=270.0, on_at=285.0)
    assert verdicts(sl.check_ahead(o))["resumed-ahead-of-burst"] is False


def test_the_refused_node_is_the_one_the_controller_tries_first_the_longest_off() -> None:
    since = {"xeon-0": "2026-12-06T04:00:10Z", "xeon-1": "2026-12-06T04:00:02Z", "xeon-2": "2026-12-06T04:00:02Z"}
    assert sl.first_refusal_target(since, ["xeon-0", "xeon-1", "xeon-2"]) == ("xeon-1", "xeon-2")


def test_the_settings_are_read_from_the_deployed_values_the_last_file_winning() -> None:
    docs = [
        {"controllerManager": {"env": {"RESUME_RETRIES": "3", "RESUME_RETRY_BACKOFF": "30s"}}},
        {"controllerManager": {"env": {"RESUME_RETRY_BACKOFF": "4s", "FORECAST_DAY": "150s"}}},
        {},
    ]
    s = sl.LiveSettings.from_env(sl.controller_env(docs), reconcile_s=3.0)
    assert (s.resume_retries, s.retry_backoff_s, s.resume_timeout_s, s.forecast_day_s) == (3, 4.0, 900.0, 150.0)


def test_the_shipped_values_give_the_run_its_short_settings() -> None:
    values = Path(__file__).resolve().parents[2] / "values" / "suspend-live-values.yaml"
    env = sl.controller_env([yaml.safe_load(values.read_text())])
    s = sl.LiveSettings.from_env(env, reconcile_s=3.0)
    assert env["POWER_POLICY"] == "forecast_suspend_v1" and s.resume_retries >= 1
    # Two bursts per FORECAST_DAY would not be a daily cycle; half a day must exceed the profile's 60 s
    # horizon, or a resume for a burst's tail would count as one ahead of the next.
    assert s.forecast_day_s / 2 > 60.0
