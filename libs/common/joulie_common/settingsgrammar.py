"""One grammar for every setting a Joulie component reads from its environment.

Each kind of value has one parser and one error message, and the message names the variable, so
`RECONCILE_INTERVAL=1h30m` means the same to the agent, the controller manager and the extender,
and a typo is reported the same way by all of them. Pure: no I/O; callers pass the environment.

- durations: Go-style, `500ms`, `90s`, `2m`, `1h30m`, `1.5h`; a bare number is seconds;
- booleans: `true`/`false`, `1`/`0`, `yes`/`no`, `on`/`off` (any case; empty is false);
- percentages: `10%` or `10`;
- numbers: finite floats and integers, with inclusive bounds where given.

Kubernetes quantities (`500m`, `2Gi`) have their grammar in `joulie_api.quantity` (it travels in
the kubectl plugin's wheel); no setting takes one today.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from typing import Final, TypeVar

T = TypeVar("T")

_UNIT_S: Final = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
_DURATION_PART: Final = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ms|h|m|s)")
_TRUE: Final = frozenset({"1", "true", "yes", "on"})
_FALSE: Final = frozenset({"0", "false", "no", "off", ""})


class SettingError(ValueError):
    """A setting whose value cannot be used; the message names the variable and the value."""

    def __init__(self, name: str, raw: str, expected: str) -> None:
        super().__init__(f"{name}={raw!r}: expected {expected}")
        self.name = name
        self.raw = raw


def parse_duration(name: str, raw: str, *, allow_zero: bool = True) -> float:
    """Seconds from `500ms`, `90s`, `2m`, `1h30m`, `1.5h` or a bare number of seconds."""
    text = raw.strip()
    expected = "a duration such as 500ms, 90s or 1h30m"
    try:
        value = float(text)
    except ValueError:
        value = 0.0
        pos = 0
        units_seen: list[str] = []
        for match in _DURATION_PART.finditer(text):
            if match.start() != pos:
                break
            unit = match.group(2)
            if unit in units_seen:
                raise SettingError(name, raw, f"{expected} (the unit {unit!r} twice)") from None
            units_seen.append(unit)
            value += float(match.group(1)) * _UNIT_S[unit]
            pos = match.end()
        if not text or pos != len(text):
            raise SettingError(name, raw, expected) from None
    if not math.isfinite(value) or value < 0 or (value == 0 and not allow_zero):
        raise SettingError(name, raw, "a positive duration" if not allow_zero else "a duration of 0 or more")
    return value


def parse_bool(name: str, raw: str) -> bool:
    """`true`/`false`, `1`/`0`, `yes`/`no`, `on`/`off` in any case; empty is false."""
    text = raw.strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise SettingError(name, raw, "true or false")


def parse_float(name: str, raw: str, lo: float | None = None, hi: float | None = None) -> float:
    """A finite number, within [lo, hi] where given."""
    try:
        value = float(raw.strip())
    except ValueError:
        raise SettingError(name, raw, "a number") from None
    if not math.isfinite(value):
        raise SettingError(name, raw, "a finite number")
    _check_bounds(name, raw, value, lo, hi, "a number")
    return value


def parse_int(name: str, raw: str, lo: int | None = None, hi: int | None = None) -> int:
    """An integer, within [lo, hi] where given."""
    try:
        value = int(raw.strip())
    except ValueError:
        raise SettingError(name, raw, "an integer") from None
    _check_bounds(name, raw, value, lo, hi, "an integer")
    return value


def parse_percent(name: str, raw: str, lo: float = 0.0, hi: float = 100.0) -> float:
    """A percentage as written (`10%` or `10` -> 10.0), within [lo, hi]."""
    text = raw.strip()
    number = text[:-1].strip() if text.endswith("%") else text
    try:
        value = float(number)
    except ValueError:
        raise SettingError(name, raw, "a percentage such as 10%") from None
    if not math.isfinite(value):
        raise SettingError(name, raw, "a finite percentage")
    _check_bounds(name, raw, value, lo, hi, "a percentage")
    return value


def read_env(env: Mapping[str, str], name: str, parser: Callable[[str, str], T], default: T) -> T:
    """`parser(name, value)` when the variable is set and not empty, else `default`."""
    raw = env.get(name)
    if raw is None or raw.strip() == "":
        return default
    return parser(name, raw)


def _check_bounds(name: str, raw: str, value: float, lo: float | None, hi: float | None, what: str) -> None:
    if lo is not None and hi is not None and not lo <= value <= hi:
        raise SettingError(name, raw, f"{what} in [{lo:g}, {hi:g}]")
    if lo is not None and value < lo:
        raise SettingError(name, raw, f"{what} of at least {lo:g}")
    if hi is not None and value > hi:
        raise SettingError(name, raw, f"{what} of at most {hi:g}")
