from datetime import UTC, datetime, timedelta

from joulie_common.clock import Clock, FakeClock, SystemClock


def test_fake_clock_moves_only_when_advanced() -> None:
    c = FakeClock(t=0.0, start=datetime(2026, 3, 1, tzinfo=UTC))
    assert (c.monotonic(), c.now()) == (0.0, datetime(2026, 3, 1, tzinfo=UTC))
    c.advance(90.5)
    assert c.monotonic() == 90.5
    assert c.now() == datetime(2026, 3, 1, tzinfo=UTC) + timedelta(seconds=90.5)


def test_system_clock_is_utc_and_monotonic() -> None:
    c: Clock = SystemClock()
    a, b = c.monotonic(), c.monotonic()
    assert b >= a
    now = c.now()
    assert now.tzinfo is UTC
    assert abs((now - datetime.now(UTC)).total_seconds()) < 5


def test_whole_seconds_drops_microseconds_for_status_timestamps() -> None:
    assert SystemClock(whole_seconds=True).now().microsecond == 0
