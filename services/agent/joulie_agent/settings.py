"""Runtime settings from the environment (names as the Go original's where it had them)."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from joulie_agent.cpucontrol import DvfsConfig

MODES = ("daemonset", "pool", "emulated")


class SettingsError(ValueError):
    """An environment variable has an unusable value; the message names it."""


_DURATION = re.compile(r"^(\d+(?:\.\d+)?)(ms|s|m|h)?$")


def parse_duration_s(name: str, value: str) -> float:
    """"20s", "500ms", "5m", "1h" or plain seconds."""
    m = _DURATION.match(value.strip())
    if not m:
        raise SettingsError(f"{name}={value!r}: expected a duration like 20s, 500ms or 5m")
    n = float(m.group(1))
    return n * {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}[m.group(2) or "s"]


def _bool(name: str, value: str) -> bool:
    v = value.strip().lower()
    if v in ("1", "true", "yes", "on"):
        return True
    if v in ("0", "false", "no", "off", ""):
        return False
    raise SettingsError(f"{name}={value!r}: expected true or false")


@dataclass(frozen=True)
class Settings:
    """Agent settings.

    mode: AGENT_MODE daemonset (default) | pool | emulated.
    node_name: NODE_NAME (required in daemonset and emulated modes; downward API in a daemonset).
    root: ROOT, filesystem root of the node (default "/"; in pool/emulated mode may contain
        "{node}", e.g. /var/lib/joulie-hwemu/{node}).
    sys_root: HOST_SYS, where the node's /sys is (default /host-sys in daemonset mode when it
        exists, else <root>/sys).
    reconcile_interval_s: RECONCILE_INTERVAL, seconds (default 20).
    hardware_rewrite_s: NodeHardware is rewritten unchanged at most this often (300 s).
    simulate_only: SIMULATE_ONLY, resolve everything but write no host file and run no set command.
    metrics_addr: METRICS_ADDR, host:port of /metrics (default 127.0.0.1:8080; "" disables).
    pool_selector: POOL_NODE_SELECTOR (default joulie.io/managed=true); pool_shards: POOL_SHARDS (1);
        pool_shard_id: POOL_SHARD_ID, else the integer suffix of POD_NAME, else 0;
        pool_list_interval_s: POOL_LIST_INTERVAL, how often a pool agent lists its Nodes again (60 s).
    spec_read_timeout_s: SPEC_READ_TIMEOUT; NodeTwin unreadable longer than this relaxes all caps (5m).
    heartbeat_s: AGENT_HEARTBEAT; controlStatus (with heartbeatAt) is rewritten at least this often (30s).
    tool_timeout_s: GPU_TOOL_TIMEOUT, seconds per GPU tool command (3).
    tool_path: GPU_TOOL_PATH, the PATH tools are taken from (default $PATH; in emulated mode the
        node's <root>/bin first).
    power_export_endpoint: POWER_EXPORT_ENDPOINT, the OTLP/HTTP metrics URL the measured power is pushed to
        (e.g. http://prometheus:9090/api/v1/otlp/v1/metrics or http://collector:4318/v1/metrics);
        "" (default) exports nothing. power_export_interval_s: POWER_EXPORT_INTERVAL (10 s).
    bmc_secret_dir: BMC_SECRET_DIR, where the BMC Secret (docs/redfish.md: `<node>.address`, `username`,
        `password`, optional `ca.crt`) is mounted; the exported host power is then the BMC's reading
        (`joulie.host.power.source=bmc`), the sum of the measured components while it does not answer.
        "" (default): always the sum. Needs POWER_EXPORT_ENDPOINT. bmc_timeout_s: BMC_TIMEOUT, seconds
        per BMC request (5 s; at least 0.5 s).
    hardware_catalog_extra: HARDWARE_CATALOG_EXTRA, a catalog file of the same schema whose entries are
        added to the shipped one (the chart's agent.hardwareCatalog ConfigMap); "" (default): none.
    dvfs: DVFS_EMA_ALPHA (0.30), DVFS_HIGH_MARGIN_W (10 W), DVFS_LOW_MARGIN_W (15 W),
        DVFS_STEP_PCT (10 %), DVFS_MIN_FREQ_KHZ (1500000 kHz), DVFS_COOLDOWN (20 s), DVFS_TRIP_COUNT (2),
        DVFS_VERIFY_INTERVAL (60 s).
    """

    mode: str = "daemonset"
    node_name: str = ""
    root: str = "/"
    sys_root: str = ""
    reconcile_interval_s: float = 20.0
    hardware_rewrite_s: float = 300.0
    simulate_only: bool = False
    metrics_addr: str = "127.0.0.1:8080"
    pool_selector: str = "joulie.io/managed=true"
    pool_shards: int = 1
    pool_shard_id: int = 0
    pool_list_interval_s: float = 60.0
    spec_read_timeout_s: float = 300.0
    heartbeat_s: float = 30.0
    tool_timeout_s: float = 3.0
    tool_path: str = ""
    power_export_endpoint: str = ""
    power_export_interval_s: float = 10.0
    bmc_secret_dir: str = ""
    bmc_timeout_s: float = 5.0
    hardware_catalog_extra: str = ""
    dvfs: DvfsConfig = field(default_factory=DvfsConfig)

    def node_root(self, node: str) -> Path:
        return Path(self.root.replace("{node}", node))

    def node_sys_root(self, node: str) -> Path:
        if self.sys_root:
            return Path(self.sys_root.replace("{node}", node))
        return self.node_root(node) / "sys"

    def node_tool_path(self, node: str) -> str:
        # `{node}` as in ROOT: a pool agent over emulated nodes finds each node's GPU tools apart.
        base = (self.tool_path or os.environ.get("PATH", "")).replace("{node}", node)
        if self.mode == "emulated":
            return f"{self.node_root(node) / 'bin'}{os.pathsep}{base}"
        return base

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        e = dict(os.environ if env is None else env)
        mode = e.get("AGENT_MODE", "daemonset").strip() or "daemonset"
        if mode not in MODES:
            raise SettingsError(f"AGENT_MODE={mode!r}: expected one of {', '.join(MODES)}")
        node = e.get("NODE_NAME", "").strip()
        if mode in ("daemonset", "emulated") and not node:
            raise SettingsError(f"NODE_NAME: required in {mode} mode")

        def num(name: str, default: float, lo: float = 0.0) -> float:
            raw = e.get(name)
            if raw is None or raw.strip() == "":
                return default
            try:
                v = float(raw)
            except ValueError:
                raise SettingsError(f"{name}={raw!r}: expected a number") from None
            if v < lo:
                raise SettingsError(f"{name}={raw!r}: must be >= {lo}")
            return v

        def dur(name: str, default: float) -> float:
            raw = e.get(name)
            return default if not raw else parse_duration_s(name, raw)

        export_endpoint = e.get("POWER_EXPORT_ENDPOINT", "").strip()
        if export_endpoint and not re.match(r"^https?://[^/\s]+", export_endpoint):
            raise SettingsError(f"POWER_EXPORT_ENDPOINT={export_endpoint!r}: expected an http:// or https:// URL")
        export_interval_s = dur("POWER_EXPORT_INTERVAL", 10.0)
        if export_interval_s < 1.0:
            raise SettingsError(f"POWER_EXPORT_INTERVAL={e.get('POWER_EXPORT_INTERVAL')!r}: must be at least 1s")
        bmc_secret_dir = e.get("BMC_SECRET_DIR", "").strip()
        if bmc_secret_dir and not export_endpoint:
            raise SettingsError(f"BMC_SECRET_DIR={bmc_secret_dir!r}: the BMC's host power is only read for the power "
                                "export; set POWER_EXPORT_ENDPOINT too, or unset BMC_SECRET_DIR")
        bmc_timeout_s = dur("BMC_TIMEOUT", 5.0)
        if bmc_timeout_s < 0.5:
            raise SettingsError(f"BMC_TIMEOUT={e.get('BMC_TIMEOUT')!r}: must be at least 500ms")
        shard = e.get("POOL_SHARD_ID", "").strip()
        if not shard:
            m = re.search(r"-(\d+)$", e.get("POD_NAME", ""))
            shard = m.group(1) if m else "0"
        if not (shard.isascii() and shard.isdigit() and len(shard) < 10):
            raise SettingsError(f"POOL_SHARD_ID={shard!r}: expected a non-negative integer")
        shards = int(num("POOL_SHARDS", 1, 1))
        sys_root = e.get("HOST_SYS", "")
        if not sys_root and mode == "daemonset" and Path("/host-sys").is_dir():
            sys_root = "/host-sys"
        return cls(
            mode=mode, node_name=node, root=e.get("ROOT", "/") or "/", sys_root=sys_root,
            reconcile_interval_s=dur("RECONCILE_INTERVAL", 20.0),
            simulate_only=_bool("SIMULATE_ONLY", e.get("SIMULATE_ONLY", "false")),
            metrics_addr=e.get("METRICS_ADDR", "127.0.0.1:8080"),
            pool_selector=e.get("POOL_NODE_SELECTOR", "joulie.io/managed=true"),
            pool_shards=shards, pool_shard_id=int(shard), spec_read_timeout_s=dur("SPEC_READ_TIMEOUT", 300.0),
            heartbeat_s=dur("AGENT_HEARTBEAT", 30.0), pool_list_interval_s=dur("POOL_LIST_INTERVAL", 60.0),
            tool_timeout_s=num("GPU_TOOL_TIMEOUT", 3.0, 0.1), tool_path=e.get("GPU_TOOL_PATH", ""),
            power_export_endpoint=export_endpoint, power_export_interval_s=export_interval_s,
            bmc_secret_dir=bmc_secret_dir, bmc_timeout_s=bmc_timeout_s,
            hardware_catalog_extra=e.get("HARDWARE_CATALOG_EXTRA", "").strip(),
            dvfs=DvfsConfig(
                ema_alpha=num("DVFS_EMA_ALPHA", 0.30), high_margin_w=num("DVFS_HIGH_MARGIN_W", 10.0),
                low_margin_w=num("DVFS_LOW_MARGIN_W", 15.0), step_pct=num("DVFS_STEP_PCT", 10.0, 1.0),
                min_freq_khz=int(num("DVFS_MIN_FREQ_KHZ", 1_500_000)), cooldown_s=dur("DVFS_COOLDOWN", 20.0),
                trip_count=int(num("DVFS_TRIP_COUNT", 2, 1)), verify_interval_s=dur("DVFS_VERIFY_INTERVAL", 60.0),
                energy_window_s=dur("ENERGY_WINDOW", 5.0),
            ),
        )
