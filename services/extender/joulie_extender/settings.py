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

from joulie_common.settingsgrammar import SettingError, parse_bool, parse_duration, parse_float, parse_int, read_env
from joulie_extender.rules.powerest import Coefficients

DEFAULT_ADDR: Final = "127.0.0.1:9876"
DEFAULT_STALENESS_S: Final = 300.0
DEFAULT_MAX_BODY_BYTES: Final = 16 * 2**20
DEFAULT_MAX_CONCURRENT: Final = 8
"""kube-scheduler calls an extender once per scheduling cycle, one cycle at a time per scheduler: 8 leaves
room for a few schedulers and retries, and bounds buffered bodies at 8 x 16 MiB = 128 MiB."""
DEFAULT_MAX_PER_CLIENT: Final = 4
DEFAULT_BODY_TIMEOUT_S: Final = 5.0
"""A 16 MiB body over a cluster network takes well under a second; 5 s frees a slot a slow sender holds."""

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


def _int_in(lo: int, hi: int) -> Callable[[str, str], int]:
    return lambda name, raw: parse_int(name, raw, lo=lo, hi=hi)


def _positive_duration(name: str, raw: str) -> float:
    return parse_duration(name, raw, allow_zero=False)


@dataclass(frozen=True)
class Settings:
    """How the extender runs.

    - `addr`: host:port to listen on (EXTENDER_ADDR, default 127.0.0.1:9876; a chart sets 0.0.0.0:9876).
    - `staleness_s`: a twin whose status.lastUpdated is older than this many seconds is ignored
      (neutral score, never filtered) (TWIN_STALENESS_THRESHOLD, default 300 s = 5m).
    - `max_body_bytes`: larger request bodies get 413 (EXTENDER_MAX_BODY_BYTES, default 16 MiB).
    - `max_concurrent`: /filter and /prioritize requests in flight at once; more get 503 at once
      (EXTENDER_MAX_CONCURRENT, default 8). `max_per_client`: the same per peer address
      (EXTENDER_MAX_CONCURRENT_PER_CLIENT, default 4). `body_timeout_s`: a body not received in
      this long gets 408 (EXTENDER_BODY_TIMEOUT, default 5s). See http/admission.py.
    - `debug_endpoints`: serve /debug/scoring, /docs and /openapi.json (EXTENDER_DEBUG_ENDPOINTS,
      default false: they show every node's inputs to anyone who can connect).
    - `tls_cert_file`, `tls_key_file`: serve HTTPS with this certificate and key (EXTENDER_TLS_CERT_FILE,
      EXTENDER_TLS_KEY_FILE; both or neither; default plain HTTP). `tls_client_ca_file`: also require
      a client certificate signed by these CAs, i.e. kube-scheduler's (EXTENDER_TLS_CLIENT_CA_FILE).
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
    max_concurrent: int = DEFAULT_MAX_CONCURRENT
    max_per_client: int = DEFAULT_MAX_PER_CLIENT
    body_timeout_s: float = DEFAULT_BODY_TIMEOUT_S
    debug_endpoints: bool = False
    tls_cert_file: str = ""
    tls_key_file: str = ""
    tls_client_ca_file: str = ""

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
        max_concurrent = read_env(env, "EXTENDER_MAX_CONCURRENT", _int_in(1, 1024), DEFAULT_MAX_CONCURRENT)
        per_client = read_env(env, "EXTENDER_MAX_CONCURRENT_PER_CLIENT", _int_in(1, 1024), DEFAULT_MAX_PER_CLIENT)
        body_timeout_s = read_env(env, "EXTENDER_BODY_TIMEOUT", _positive_duration, DEFAULT_BODY_TIMEOUT_S)
        cert, key = env.get("EXTENDER_TLS_CERT_FILE", "").strip(), env.get("EXTENDER_TLS_KEY_FILE", "").strip()
        if bool(cert) != bool(key):
            name, raw = ("EXTENDER_TLS_KEY_FILE", key) if key else ("EXTENDER_TLS_CERT_FILE", cert)
            raise SettingError(name, raw, "EXTENDER_TLS_CERT_FILE and EXTENDER_TLS_KEY_FILE both set, or neither")
        client_ca = env.get("EXTENDER_TLS_CLIENT_CA_FILE", "").strip()
        if client_ca and not cert:
            raise SettingError("EXTENDER_TLS_CLIENT_CA_FILE", client_ca, "EXTENDER_TLS_CERT_FILE and _KEY_FILE set too")
        return cls(
            env.get("EXTENDER_ADDR") or DEFAULT_ADDR,
            staleness_s,
            max_body,
            coeffs,
            env.get("METRICS_ADDR", ""),
            max_concurrent=max_concurrent,
            max_per_client=min(per_client, max_concurrent),
            body_timeout_s=body_timeout_s,
            debug_endpoints=read_env(env, "EXTENDER_DEBUG_ENDPOINTS", parse_bool, False),
            tls_cert_file=cert,
            tls_key_file=key,
            tls_client_ca_file=client_ca,
        )
