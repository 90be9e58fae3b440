"""Extender settings from flags and environment variables.

Values follow the one settings grammar of every Joulie component (`joulie_common.settingsgrammar`):
durations such as `250ms`, `300s`, `5m` or `1h30m` (a bare number is seconds), finite numbers within
their bounds; an error names the variable and its value."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Final

from joulie_common.settingsgrammar import SettingError, parse_duration, parse_float, read_env
from joulie_extender.rules.powerest import Coefficients

DEFAULT_ADDR: Final = "127.0.0.1:9876"
DEFAULT_STALENESS_S: Final = 300.0
DEFAULT_MAX_BODY_BYTES: Final = 16 * 2**20

SettingsError = SettingError
"""The extender's name for a setting it cannot use (the CLI catches it): the grammar's error."""


def split_addr(name: str, addr: str) -> tuple[str, int]:
    """'host:port' -> (host, port); an empty host means every interface (0.0.0.0)."""
    host, sep, port = addr.rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) < 65536:
        raise SettingError(name, addr, "host:port, e.g. 127.0.0.1:9876")
    return (host or "0.0.0.0"), int(port)


def _number_in(lo: float, hi: float) -> Callable[[str, str], float]:
    """A finite number within [lo, hi]."""
    return lambda name, raw: parse_float(name, raw, lo=lo, hi=hi)


@dataclass(frozen=True)
class Settings:
    """How the extender runs.

    - `addr`: host:port to listen on (EXTENDER_ADDR, default 127.0.0.1:9876; a chart sets 0.0.0.0:9876).
    - `staleness_s`: a twin whose status.lastUpdated is older than this many seconds is ignored
      (neutral score, never filtered) (TWIN_STALENESS_THRESHOLD, default 300 s = 5m).
    - `max_body_bytes`: larger request bodies get 400 (EXTENDER_MAX_BODY_BYTES, default 16 MiB).
    - `metrics_addr`: optional second host:port serving only /metrics, as the Go original did on
      :9877 (METRICS_ADDR, default unset: /metrics is on the main port either way).
    - `coefficients`: marginal power model; MARGINAL_CPU_UTIL_COEFF (0.7),
      MARGINAL_GPU_UTIL_COEFF_STANDARD (0.65), MARGINAL_GPU_UTIL_COEFF_PERFORMANCE (0.85), fractions 0..1.
    """

    addr: str = DEFAULT_ADDR
    staleness_s: float = DEFAULT_STALENESS_S
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    coefficients: Coefficients = field(default_factory=Coefficients)
    metrics_addr: str = ""

    @property
    def staleness(self) -> timedelta:
        return timedelta(seconds=self.staleness_s)

    @property
    def host_port(self) -> tuple[str, int]:
        return split_addr("EXTENDER_ADDR", self.addr)

    @property
    def metrics_host_port(self) -> tuple[str, int] | None:
        return split_addr("METRICS_ADDR", self.metrics_addr) if self.metrics_addr else None

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if env is None else env
        staleness_s = read_env(env, "TWIN_STALENESS_THRESHOLD", parse_duration, DEFAULT_STALENESS_S)
        # A number, as before (1e6 reads as 1000000 bytes); whole bytes, the fraction dropped.
        max_body = int(read_env(env, "EXTENDER_MAX_BODY_BYTES", _number_in(1024, 2**31), float(DEFAULT_MAX_BODY_BYTES)))
        base = Coefficients()
        fraction = _number_in(0, 1)
        coeffs = Coefficients(
            cpu_util_coeff=read_env(env, "MARGINAL_CPU_UTIL_COEFF", fraction, base.cpu_util_coeff),
            gpu_util_coeff_standard=read_env(
                env, "MARGINAL_GPU_UTIL_COEFF_STANDARD", fraction, base.gpu_util_coeff_standard
            ),
            gpu_util_coeff_performance=read_env(
                env, "MARGINAL_GPU_UTIL_COEFF_PERFORMANCE", fraction, base.gpu_util_coeff_performance
            ),
        )
        return cls(env.get("EXTENDER_ADDR") or DEFAULT_ADDR, staleness_s, max_body, coeffs, env.get("METRICS_ADDR", ""))
