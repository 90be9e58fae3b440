"""Extender settings from flags and environment variables."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Final

from joulie_extender.powerest import Coefficients

DEFAULT_ADDR: Final = "127.0.0.1:9876"
DEFAULT_STALENESS_S: Final = 300.0
DEFAULT_MAX_BODY_BYTES: Final = 16 * 2**20

_DURATION = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*(ms|s|m|h)?\s*$")
_UNIT_S = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}


class SettingsError(ValueError):
    """A setting with a value that cannot be used; the message names the variable."""


def parse_duration_s(name: str, text: str) -> float:
    """'300', '300s', '5m', '1.5h', '250ms' -> seconds."""
    match = _DURATION.match(text)
    if match is None:
        raise SettingsError(f"{name}={text!r}: expected a duration such as 300s, 5m or 1h")
    return float(match.group(1)) * _UNIT_S[match.group(2)]


def split_addr(name: str, addr: str) -> tuple[str, int]:
    """'host:port' -> (host, port); an empty host means every interface (0.0.0.0)."""
    host, sep, port = addr.rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) < 65536:
        raise SettingsError(f"{name}={addr!r}: expected host:port, e.g. 127.0.0.1:9876")
    return (host or "0.0.0.0"), int(port)


def _float(env: Mapping[str, str], name: str, default: float, lo: float, hi: float) -> float:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise SettingsError(f"{name}={raw!r}: expected a number") from None
    if not lo <= value <= hi:
        raise SettingsError(f"{name}={raw!r}: expected a number in [{lo}, {hi}]")
    return value


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
        staleness_s = DEFAULT_STALENESS_S
        if env.get("TWIN_STALENESS_THRESHOLD"):
            staleness_s = parse_duration_s("TWIN_STALENESS_THRESHOLD", env["TWIN_STALENESS_THRESHOLD"])
        max_body = int(_float(env, "EXTENDER_MAX_BODY_BYTES", DEFAULT_MAX_BODY_BYTES, 1024, 2**31))
        base = Coefficients()
        coeffs = Coefficients(
            cpu_util_coeff=_float(env, "MARGINAL_CPU_UTIL_COEFF", base.cpu_util_coeff, 0, 1),
            gpu_util_coeff_standard=_float(env, "MARGINAL_GPU_UTIL_COEFF_STANDARD", base.gpu_util_coeff_standard, 0, 1),
            gpu_util_coeff_performance=_float(
                env, "MARGINAL_GPU_UTIL_COEFF_PERFORMANCE", base.gpu_util_coeff_performance, 0, 1
            ),
        )
        return cls(env.get("EXTENDER_ADDR") or DEFAULT_ADDR, staleness_s, max_body, coeffs, env.get("METRICS_ADDR", ""))
