"""Runtime settings from the environment (names as the Go original's where it had them).

Values follow the one settings grammar of every Joulie component (`joulie_common.settingsgrammar`):
durations such as `500ms`, `20s`, `1h30m` (a bare number is seconds), booleans `true`/`false`,
`1`/`0`, `yes`/`no`, `on`/`off`, finite numbers; an error names the variable and its value."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from joulie_agent.control.cpucontrol import DvfsConfig
from joulie_common.settingsgrammar import SettingError, parse_bool, parse_duration, parse_float, read_env

MODES = ("daemonset", "pool", "emulated")

SettingsError = SettingError
"""The agent's name for a setting it cannot use (the CLI catches it): the grammar's error."""


def _number(lo: float) -> Callable[[str, str], float]:
    """A finite number of at least ``lo``."""
    return lambda name, raw: parse_float(name, raw, lo=lo)


def _duration_of_at_least(env: Mapping[str, str], name: str, default: float, least_s: float, least: str) -> float:
    value = read_env(env, name, parse_duration, default)
    if value < least_s:
        raise SettingError(name, env[name], f"a duration of at least {least}")
    return value


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
    hardware_rewrite_s: NodeHardware is rewritten unchanged at most this often (1800 s; nothing reads its
        updatedAt, and every rewrite is a request: issue 39 counts them at 1000 Nodes).
    simulate_only: SIMULATE_ONLY, resolve everything but write no host file and run no set command.
    metrics_addr: METRICS_ADDR, host:port of /metrics (default 127.0.0.1:8080; "" disables).
    pool_selector: POOL_NODE_SELECTOR (default joulie.io/managed=true); pool_shards: POOL_SHARDS (1);
        pool_shard_id: POOL_SHARD_ID, else the integer suffix of POD_NAME, else 0;
        pool_list_interval_s: POOL_LIST_INTERVAL, how often a pool agent lists its Nodes while its Node
        watch has no current view (60 s); node_resync_s: NODE_RESYNC, how often that watch lists every
        Node again as a safety net (30m; 0: no watch, a list every POOL_LIST_INTERVAL as before issue 39).
    spec_read_timeout_s: SPEC_READ_TIMEOUT; NodeTwin unreadable longer than this relaxes all caps (5m).
    heartbeat_s: AGENT_HEARTBEAT, how often each node's heartbeat Lease is renewed (30s; from the
        reconcile loop, so at the first tick after it is due).
    lease_renew_s: AGENT_LEASE_RENEW, how often the heartbeat Lease is renewed while the node's reconcile
        time is being pushed with its power (POWER_EXPORT_ENDPOINT; the controller manager reads it),
        10m; at least AGENT_HEARTBEAT, which applies whenever it is not (issue 39).
    lease_namespace: AGENT_LEASE_NAMESPACE, where the heartbeat Leases are (default POD_NAMESPACE, the
        agent's own); "" when neither is set or it is ``none`` (the chart's choice without its admission
        policies): no Lease, and controlStatus.heartbeatAt, rewritten every AGENT_HEARTBEAT, is the
        heartbeat as before issue 39.
    status_rewrite_s: AGENT_STATUS_REWRITE, with Leases: NodeTwin status.controlStatus is rewritten
        unchanged at most this often (30m; at once when it changes; 10m before issue 39's pushed heartbeat).
    twin_resync_s: TWIN_RESYNC; a NodeTwin spec the watch has not refreshed for this long is read again
        by a GET (30m, a safety net: the watch resumes and relists; 0 GETs every tick, as before the watch cache).
    tool_timeout_s: GPU_TOOL_TIMEOUT, per GPU tool command (3 s; a duration, at least 100ms).
    dcgm_every: DCGM_EVERY, DCGM's profiling ratios (``dcgmi dmon``: SM, tensor and DRAM active; a process
        even beside NVML) are read at every Nth read of an NVIDIA node's board activity (2, i.e. every
        20 s with the export's 10 s; 1: at every read). The reads between export no ratio, so each exported ratio
        carries the time it was read (issue 39: dcgmi was half of the GPU tool starts left).
    tool_path: GPU_TOOL_PATH, the PATH tools are taken from (default $PATH; in emulated mode the
        node's <root>/bin first).
    power_export_endpoint: POWER_EXPORT_ENDPOINT, the OTLP/HTTP metrics URL the measured power is pushed to
        (e.g. http://prometheus:9090/api/v1/otlp/v1/metrics or http://collector:4318/v1/metrics);
        "" (default) exports nothing. power_export_interval_s: POWER_EXPORT_INTERVAL (10 s).
        power_export_metrics: POWER_EXPORT_METRICS, "all" (default: power, energy and the per-GPU signals) or
        "gpu" (only the per-GPU signals and hw.gpu.allocation, where another exporter meters the power).
    bmc_secret_dir: BMC_SECRET_DIR, where a read-only BMC account's Secret (docs/redfish.md: `<node>.address`,
        `username`, `password`, optional `ca.crt`; never the controller's power-control Secret) is mounted; the exported host power is then the BMC's reading
        (`joulie.host.power.source=bmc`), the sum of the measured components while it does not answer.
        "" (default): always the sum. Needs POWER_EXPORT_ENDPOINT. bmc_timeout_s: BMC_TIMEOUT, seconds
        per BMC request (5 s; at least 0.5 s).
    pod_resources_socket: POD_RESOURCES_SOCKET, the kubelet's pod-resources socket (which Pod holds which
        GPU, for the export's hw.gpu.allocation); "" (default): <root>/var/lib/kubelet/pod-resources/kubelet.sock
        (each emulated node's own under a pool's ROOT); may contain "{node}"; "none": not read.
    hardware_catalog_extra: HARDWARE_CATALOG_EXTRA, a catalog file of the same schema whose entries are
        added to the shipped one (the chart's agent.hardwareCatalog ConfigMap); "" (default): none.
    api_timeout_s: KUBE_API_TIMEOUT, how long one Kubernetes API request waits for the server (10 s; at
        least 100ms): a frozen API server costs a tick seconds, logged, never a hung agent (issue 36).
    dvfs: DVFS_EMA_ALPHA (0.30), DVFS_HIGH_MARGIN_W (10 W), DVFS_LOW_MARGIN_W (15 W),
        DVFS_STEP_PCT (10 %), DVFS_MIN_FREQ_KHZ (1500000 kHz), DVFS_COOLDOWN (20 s), DVFS_TRIP_COUNT (2),
        DVFS_VERIFY_INTERVAL (60 s).
    """

    mode: str = "daemonset"
    node_name: str = ""
    root: str = "/"
    sys_root: str = ""
    reconcile_interval_s: float = 20.0
    hardware_rewrite_s: float = 1800.0
    simulate_only: bool = False
    metrics_addr: str = "127.0.0.1:8080"
    pool_selector: str = "joulie.io/managed=true"
    pool_shards: int = 1
    pool_shard_id: int = 0
    pool_list_interval_s: float = 60.0
    node_resync_s: float = 1800.0
    spec_read_timeout_s: float = 300.0
    heartbeat_s: float = 30.0
    lease_renew_s: float = 600.0
    lease_namespace: str = ""
    status_rewrite_s: float = 1800.0
    twin_resync_s: float = 1800.0
    tool_timeout_s: float = 3.0
    dcgm_every: int = 2
    tool_path: str = ""
    power_export_endpoint: str = ""
    power_export_interval_s: float = 10.0
    power_export_metrics: str = "all"
    bmc_secret_dir: str = ""
    bmc_timeout_s: float = 5.0
    hardware_catalog_extra: str = ""
    pod_resources_socket: str = ""
    api_timeout_s: float = 10.0
    dvfs: DvfsConfig = field(default_factory=DvfsConfig)

    def node_root(self, node: str) -> Path:
        return Path(self.root.replace("{node}", node))

    def node_sys_root(self, node: str) -> Path:
        if self.sys_root:
            return Path(self.sys_root.replace("{node}", node))
        return self.node_root(node) / "sys"

    def node_pod_resources_socket(self, node: str) -> Path | None:
        """The node's pod-resources socket; None when POD_RESOURCES_SOCKET is "none"."""
        if self.pod_resources_socket == "none":
            return None
        if self.pod_resources_socket:
            return Path(self.pod_resources_socket.replace("{node}", node))
        return self.node_root(node) / "var/lib/kubelet/pod-resources/kubelet.sock"

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
            raise SettingError("AGENT_MODE", mode, f"one of {', '.join(MODES)}")
        node = e.get("NODE_NAME", "").strip()
        if mode in ("daemonset", "emulated") and not node:
            raise SettingError("NODE_NAME", node, f"a node name (required in {mode} mode)")
        sys_root = e.get("HOST_SYS", "")
        if not sys_root and mode == "daemonset" and Path("/host-sys").is_dir():
            sys_root = "/host-sys"
        export_endpoint, export_interval_s, bmc_secret_dir, bmc_timeout_s = _power_export(e)
        return cls(
            mode=mode, node_name=node, root=e.get("ROOT", "/") or "/", sys_root=sys_root,
            reconcile_interval_s=read_env(e, "RECONCILE_INTERVAL", parse_duration, 20.0),
            simulate_only=read_env(e, "SIMULATE_ONLY", parse_bool, False),
            metrics_addr=e.get("METRICS_ADDR", "127.0.0.1:8080"),
            pool_selector=e.get("POOL_NODE_SELECTOR", "joulie.io/managed=true"),
            pool_shards=int(read_env(e, "POOL_SHARDS", _number(1), 1.0)), pool_shard_id=_pool_shard_id(e),
            spec_read_timeout_s=read_env(e, "SPEC_READ_TIMEOUT", parse_duration, 300.0),
            heartbeat_s=_duration_of_at_least(e, "AGENT_HEARTBEAT", 30.0, 1.0, "1s"),
            lease_renew_s=_duration_of_at_least(e, "AGENT_LEASE_RENEW", 600.0, 1.0, "1s"),
            lease_namespace=_lease_namespace(e),
            status_rewrite_s=_duration_of_at_least(e, "AGENT_STATUS_REWRITE", 1800.0, 1.0, "1s"),
            twin_resync_s=read_env(e, "TWIN_RESYNC", parse_duration, 1800.0),
            pool_list_interval_s=read_env(e, "POOL_LIST_INTERVAL", parse_duration, 60.0),
            node_resync_s=read_env(e, "NODE_RESYNC", parse_duration, 1800.0),
            tool_timeout_s=_duration_of_at_least(e, "GPU_TOOL_TIMEOUT", 3.0, 0.1, "100ms"),
            dcgm_every=_dcgm_every(e),
            tool_path=e.get("GPU_TOOL_PATH", ""),
            power_export_endpoint=export_endpoint, power_export_interval_s=export_interval_s,
            power_export_metrics=_power_export_metrics(e),
            bmc_secret_dir=bmc_secret_dir, bmc_timeout_s=bmc_timeout_s,
            hardware_catalog_extra=e.get("HARDWARE_CATALOG_EXTRA", "").strip(),
            pod_resources_socket=_pod_resources_socket(e),
            api_timeout_s=_duration_of_at_least(e, "KUBE_API_TIMEOUT", 10.0, 0.1, "100ms"),
            dvfs=_dvfs(e),
        )


def _dcgm_every(e: Mapping[str, str]) -> int:
    every = read_env(e, "DCGM_EVERY", _number(1), 2.0)
    if every != int(every):
        raise SettingError("DCGM_EVERY", e["DCGM_EVERY"], "a whole number of reads, at least 1")
    return int(every)


def _power_export(e: Mapping[str, str]) -> tuple[str, float, str, float]:
    """(POWER_EXPORT_ENDPOINT, POWER_EXPORT_INTERVAL, BMC_SECRET_DIR, BMC_TIMEOUT)."""
    endpoint = e.get("POWER_EXPORT_ENDPOINT", "").strip()
    if endpoint and not re.match(r"^https?://[^/\s]+", endpoint):
        raise SettingError("POWER_EXPORT_ENDPOINT", endpoint, "an http:// or https:// URL")
    interval_s = _duration_of_at_least(e, "POWER_EXPORT_INTERVAL", 10.0, 1.0, "1s")
    bmc_secret_dir = e.get("BMC_SECRET_DIR", "").strip()
    if bmc_secret_dir and not endpoint:
        raise SettingError("BMC_SECRET_DIR", bmc_secret_dir, "POWER_EXPORT_ENDPOINT set too, or BMC_SECRET_DIR unset: "
                           "the BMC's host power is only read for the power export")
    return endpoint, interval_s, bmc_secret_dir, _duration_of_at_least(e, "BMC_TIMEOUT", 5.0, 0.5, "500ms")


def _power_export_metrics(e: Mapping[str, str]) -> str:
    value = e.get("POWER_EXPORT_METRICS", "").strip() or "all"
    if value not in ("all", "gpu"):
        raise SettingError("POWER_EXPORT_METRICS", value, '"all" or "gpu"')
    return value


def _pod_resources_socket(e: Mapping[str, str]) -> str:
    value = e.get("POD_RESOURCES_SOCKET", "").strip()
    if value and value != "none" and not value.startswith("/"):
        raise SettingError("POD_RESOURCES_SOCKET", value, 'an absolute path to a unix socket, or "none"')
    return value


def _pool_shard_id(e: Mapping[str, str]) -> int:
    """POOL_SHARD_ID, else the ordinal at the end of POD_NAME (a StatefulSet Pod's), else 0."""
    shard = e.get("POOL_SHARD_ID", "").strip()
    if not shard:
        m = re.search(r"-(\d+)$", e.get("POD_NAME", ""))
        shard = m.group(1) if m else "0"
    # ASCII digits only: int() would also take "+1", "1_0" and other scripts' digits.
    if not (shard.isascii() and shard.isdigit() and len(shard) < 10):
        raise SettingError("POOL_SHARD_ID", shard, "a non-negative integer")
    return int(shard)


def _dvfs(e: Mapping[str, str]) -> DvfsConfig:
    """The DVFS fallback's tuning (DVFS_*) and the power meter's window (ENERGY_WINDOW)."""
    return DvfsConfig(
        ema_alpha=read_env(e, "DVFS_EMA_ALPHA", _number(0.0), 0.30),
        high_margin_w=read_env(e, "DVFS_HIGH_MARGIN_W", _number(0.0), 10.0),
        low_margin_w=read_env(e, "DVFS_LOW_MARGIN_W", _number(0.0), 15.0),
        step_pct=read_env(e, "DVFS_STEP_PCT", _number(1.0), 10.0),
        min_freq_khz=int(read_env(e, "DVFS_MIN_FREQ_KHZ", _number(0.0), 1_500_000.0)),
        cooldown_s=read_env(e, "DVFS_COOLDOWN", parse_duration, 20.0),
        trip_count=int(read_env(e, "DVFS_TRIP_COUNT", _number(1.0), 2.0)),
        verify_interval_s=read_env(e, "DVFS_VERIFY_INTERVAL", parse_duration, 60.0),
        energy_window_s=read_env(e, "ENERGY_WINDOW", parse_duration, 5.0),
    )


def _lease_namespace(e: Mapping[str, str]) -> str:
    ns = (e.get("AGENT_LEASE_NAMESPACE") or e.get("POD_NAMESPACE") or "").strip()
    return "" if ns == "none" else ns
