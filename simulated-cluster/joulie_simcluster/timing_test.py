import pytest

from joulie_simcluster.timing import PRESETS, Timing, TimingError, duration, timing


def test_presets_map_onto_the_real_settings() -> None:
    env = timing("production").as_env()
    assert env["NODE_POWER_RATE_WINDOW"] == "2m" and env["CONTROLLER_RECONCILE_INTERVAL"] == "1m"
    assert env["AGENT_RECONCILE_INTERVAL"] == "20s" and env["SIM_OTLP_INTERVAL"] == "15s"
    assert timing("ci").as_env()["SIM_EMULATE_TICK"] == "500ms"


def test_a_rate_window_shorter_than_four_export_intervals_is_refused() -> None:
    bad = Timing("fast", sim_tick_s=1, otlp_interval_s=5, rate_window_s=15, controller_interval_s=5,
                 status_refresh_s=30, agent_interval_s=5, staleness_s=60)
    with pytest.raises(TimingError, match=r"rate window 15s is shorter than four export intervals \(4 x 5s = 20s\)"):
        bad.validate()


def test_every_preset_is_valid_and_unknown_names_are_listed() -> None:
    for t in PRESETS.values():
        assert t.validate() is t
    with pytest.raises(TimingError, match="unknown timing; known: ci, production"):
        timing("nightly")


@pytest.mark.parametrize(("seconds", "text"), [(0.5, "500ms"), (3, "3s"), (12, "12s"), (60, "1m"), (120, "2m"), (90, "90s")])
def test_durations_are_go_style(seconds: float, text: str) -> None:
    assert duration(seconds) == text
