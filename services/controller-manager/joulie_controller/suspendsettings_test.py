from __future__ import annotations

from joulie_controller.settings import Settings
from joulie_controller.suspendsettings import SuspendSettings, cautions, retry_schedule_s


def _suspend(env: dict[str, str]) -> SuspendSettings:
    return Settings.from_env({"POWER_POLICY": "idle_suspend_v1", **env}).suspend


def test_the_defaults_leave_the_retries_room() -> None:
    s = _suspend({})
    assert retry_schedule_s(s) == 30 + 60 + 120
    assert cautions(s) == []


def test_a_timeout_shorter_than_the_retry_schedule_is_named() -> None:
    # The chaos run of issue 37 lost its retries this way: 60 s against 30 s + 1 m.
    (line,) = cautions(_suspend({"RESUME_TIMEOUT": "60s", "RESUME_RETRIES": "2"}))
    assert "RESUME_TIMEOUT (60s)" in line and "90s" in line


def test_no_caution_without_a_power_policy_or_without_retries() -> None:
    assert cautions(Settings.from_env({"RESUME_TIMEOUT": "60s"}).suspend) == []
    assert cautions(_suspend({"RESUME_TIMEOUT": "60s", "RESUME_RETRIES": "0"})) == []
