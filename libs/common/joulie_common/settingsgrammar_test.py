from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from joulie_common.settingsgrammar import (
    SettingError,
    parse_bool,
    parse_duration,
    parse_float,
    parse_int,
    parse_percent,
    read_env,
)


@pytest.mark.parametrize(
    ("raw", "seconds"),
    [
        ("500ms", 0.5),
        ("90s", 90.0),
        ("2m", 120.0),
        ("1h30m", 5400.0),
        ("1.5h", 5400.0),
        ("1m30s", 90.0),
        ("2h0m5s", 7205.0),
        ("1s500ms", 1.5),
        ("20", 20.0),
        ("0.25", 0.25),
        (" 5m ", 300.0),
        ("0", 0.0),
    ],
)
def test_durations_read_the_same_everywhere(raw: str, seconds: float) -> None:
    assert parse_duration("RECONCILE_INTERVAL", raw) == pytest.approx(seconds)


@pytest.mark.parametrize("raw", ["", "5 minutes", "m", "1x", "-5s", "5s5s", "1h-3m", "inf", "nan", "1e400"])
def test_a_bad_duration_names_the_variable_and_the_value(raw: str) -> None:
    with pytest.raises(SettingError) as err:
        parse_duration("RECONCILE_INTERVAL", raw)
    assert str(err.value).startswith(f"RECONCILE_INTERVAL={raw!r}: expected")
    assert err.value.name == "RECONCILE_INTERVAL"


def test_zero_is_refused_where_a_positive_duration_is_needed() -> None:
    with pytest.raises(SettingError, match="positive"):
        parse_duration("X", "0s", allow_zero=False)


@settings(deadline=None)  # no wall-clock gate: a loaded machine is not a failure
@given(st.integers(0, 99), st.integers(0, 59), st.integers(0, 59), st.integers(0, 999))
def test_compound_durations_add_up(h: int, m: int, s: int, ms: int) -> None:
    text = f"{h}h{m}m{s}s{ms}ms"
    assert parse_duration("X", text) == pytest.approx(h * 3600 + m * 60 + s + ms / 1000)


@pytest.mark.parametrize(
    ("raw", "want"),
    [
        ("true", True),
        ("ON", True),
        ("1", True),
        ("yes", True),
        ("false", False),
        ("0", False),
        ("No", False),
        ("", False),
    ],
)
def test_booleans(raw: str, want: bool) -> None:
    assert parse_bool("SIMULATE_ONLY", raw) is want


def test_a_bad_boolean_says_what_it_expected() -> None:
    with pytest.raises(SettingError, match=r"^SIMULATE_ONLY='maybe': expected true or false$"):
        parse_bool("SIMULATE_ONLY", "maybe")


def test_numbers_and_their_bounds() -> None:
    assert parse_float("F", "1.5") == 1.5
    assert parse_int("N", " 7 ") == 7
    with pytest.raises(SettingError, match=r"F='nan': expected a finite number"):
        parse_float("F", "nan")
    with pytest.raises(SettingError, match=r"in \[0, 1\]"):
        parse_float("F", "2", lo=0, hi=1)
    with pytest.raises(SettingError, match="at least 1"):
        parse_int("N", "0", lo=1)
    with pytest.raises(SettingError, match="an integer"):
        parse_int("N", "1.5")


def test_percentages_with_or_without_the_sign() -> None:
    assert parse_percent("MAX_SLOWDOWN", "10%") == 10.0
    assert parse_percent("MAX_SLOWDOWN", "2.5") == 2.5
    with pytest.raises(SettingError, match=r"in \[0, 100\]"):
        parse_percent("MAX_SLOWDOWN", "120%")
    with pytest.raises(SettingError, match="a percentage such as 10%"):
        parse_percent("MAX_SLOWDOWN", "ten")


def test_read_env_falls_back_to_the_default_when_unset_or_empty() -> None:
    env = {"A": "5m", "B": ""}
    assert read_env(env, "A", parse_duration, 1.0) == 300.0
    assert read_env(env, "B", parse_duration, 1.0) == 1.0
    assert read_env(env, "C", parse_bool, True) is True
