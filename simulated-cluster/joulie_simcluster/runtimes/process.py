"""The process runtime of simcluster: the real control plane as local processes on 127.0.0.1.

``up`` starts etcd, kube-apiserver (Joulie CRDs applied), kube-scheduler, KWOK, Prometheus and, in
the telemetry modes otel-collector and otel-bridge, an OpenTelemetry Collector through
:mod:`joulie_localcluster` with the state directory as work dir, records their PIDs in cluster.env and
leaves them running; a later ``up`` reuses a live recorded cluster. ``up`` then applies the spec's
fake Nodes (server-side apply, :func:`joulie_simcluster.runtimes.kube.apply_nodes`), deletes simulated
Nodes the spec no longer names, and waits until KWOK reports every one Ready. ``status`` and ``down``
work from the state directory alone.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import shutil
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TextIO

from kubernetes import client as k8s

from joulie_localcluster.controlplane import ControlPlane, start_control_plane
from joulie_localcluster.kwok import start_kwok
from joulie_localcluster.otelcol import Otelcol, start_otelcol
from joulie_localcluster.procs import ManagedProcess, ProcessFailedError, ProcessGroup, free_port
from joulie_localcluster.prometheus import PrometheusSettings, PrometheusTls, start_prometheus
from joulie_localcluster.scheduler import ExtenderConfig, start_scheduler
from joulie_localcluster.tools import ToolMissingError, load_tools
from joulie_simcluster import telemetry, telemetrytls
from joulie_simcluster.context import Context, RenderedSpec
from joulie_simcluster.errors import RuntimeFailure
from joulie_simcluster.progress import Progress
from joulie_simcluster.runtimes.kube import api_ready, apply_nodes, core_api, list_nodes, node_ready
from joulie_simcluster.runtimes.pids import pid_alive, stop_pid
from joulie_simcluster.runtimes.runtime import DEFAULT_CRD_DIR, PROCESS, RECORD_KEY, StopDeployed, UpRequest
from joulie_simcluster.runtimes.supervision import control as supervisor
from joulie_simcluster.runtimes.supervision.backoff import policy_of
from joulie_simcluster.runtimes.supervision.lock import changing
from joulie_simcluster.runtimes.supervision.processes import (
    cluster_commands_path,
    record_cluster_commands,
    start_again,
    watched,
)
from joulie_simcluster.state import OPTIONAL_PROCESSES, PROCESSES, StateDir, pid_key, recorded_pids
from joulie_simcluster.timing import Timing, duration

# --- cluster liveness -------------------------------------------------------------------------


def live_processes(env: Mapping[str, str]) -> list[tuple[str, int, bool]]:
    return [(proc, pid, pid_alive(pid, proc)) for proc, pid in recorded_pids(env)]


def cluster_live(state: StateDir) -> tuple[bool, str]:
    """Whether cluster.env records a cluster whose processes all run and whose API is ready."""
    env = state.read_cluster_env()
    if env is None:
        return False, "no cluster recorded"
    procs = live_processes(env)
    wanted = list(PROCESSES) + (list(OPTIONAL_PROCESSES) if _mode_of(env).needs_collector else [])
    missing = [p for p in wanted if p not in {name for name, _, _ in procs}]
    if missing:
        return False, f"cluster.env records no PID for {', '.join(missing)}"
    dead = [f"{name} (pid {pid})" for name, pid, alive in procs if not alive]
    if dead:
        return False, f"not running: {', '.join(dead)}"
    if not api_ready(state.kubeconfig):
        return False, "kube-apiserver /readyz not ok"
    return True, "live"


def stop_recorded(state: StateDir, env: Mapping[str, str], progress: Callable[[str], None] | None = None) -> int:
    """Stops the processes cluster.env records, in reverse start order. Returns how many ran."""
    stopped = 0
    with changing(state.root):  # the supervisor must not restart what is stopped on purpose
        for proc, pid in reversed(recorded_pids(env)):
            if stop_pid(pid, proc):
                stopped += 1
                if progress:
                    progress(f"stopped {proc} (pid {pid})")
    return stopped


# --- up ---------------------------------------------------------------------------------------


def _mode_of(env: Mapping[str, str]) -> telemetry.Mode:
    try:
        return telemetry.mode(env.get("TELEMETRY", "otlp"))
    except telemetry.TelemetryError:
        return telemetry.mode("otlp")


def _port_of(argv: list[str], flag: str) -> str:
    for arg in argv:
        if arg.startswith(flag + "="):
            return arg.split("=", 1)[1].rsplit(":", 1)[-1]
    return ""


def _start_processes(
    state: StateDir, crd_dir: Path, progress: Callable[[str], None], telemetry_mode: str, timing: Timing,
    tls: bool = True,
) -> dict[str, str]:
    try:
        tools = load_tools()
    except ToolMissingError as e:
        raise RuntimeFailure(str(e)) from e
    if not crd_dir.is_dir():
        raise RuntimeFailure(f"CRD directory {crd_dir} not found (run from the repository root or pass --crds)")
    # A fresh control plane: old data and certificates would not match the new processes. The old
    # TSDB goes too: a previous run's series (another telemetry mode's target_info, say) inside the
    # lookback window would be joined with the new ones.
    for stale in ("etcd-data", "pki", "tsdb", telemetrytls.DIR_NAME):
        shutil.rmtree(state.root / stale, ignore_errors=True)
    state.logs.mkdir(parents=True, exist_ok=True)
    cp: ControlPlane | None = None
    # The extender's port is fixed now, so kube-scheduler's configuration names it before the
    # extender exists (ignorable: pods schedule without it, as a real install's scheduler does).
    extender_port = free_port()
    # Likewise the simulator's HTTP port: a scraping Prometheus (telemetry mode scrape) names it.
    simulator_port = free_port()
    try:
        progress(f"starting etcd and kube-apiserver (CRDs from {crd_dir})")
        cp = start_control_plane(tools, state.root, crd_dir=crd_dir, timeout_s=60)
        progress(f"kube-apiserver ready at {cp.url} ({cp.ready_s:.1f}s, CRDs Established)")
        start_scheduler(
            tools, cp, timeout_s=60,
            extender=ExtenderConfig(url_prefix=f"http://127.0.0.1:{extender_port}", weight=5, node_cache_capable=True),
        )
        progress(f"kube-scheduler healthy (extender at 127.0.0.1:{extender_port})")
        start_kwok(tools, cp, timeout_s=60)
        progress("kwok healthy")
        tls_env = _telemetry_pki(state, tls)
        prom = start_prometheus(tools, state.root, cp.group, _prometheus_settings(telemetry_mode, simulator_port, timing),
                                timeout_s=60, tls=_prometheus_tls(tls_env))
        progress(f"prometheus ready at {prom.url} (OTLP receiver on, telemetry mode {telemetry_mode}"
                 f"{', client certificates required' if tls_env else ''})")
        col = _start_collector(state, cp.group, telemetry_mode, prom.url, simulator_port, timing, progress, tls_env)
    except (ProcessFailedError, ToolMissingError, OSError) as e:
        if cp is not None:
            cp.stop()
        raise RuntimeFailure(f"starting the control plane failed: {e}") from e
    procs: dict[str, ManagedProcess] = {p.name: p for p in cp.group.procs}
    cluster_commands_path(state).unlink(missing_ok=True)
    record_cluster_commands(state, cp.group.procs)  # how the supervisor starts each again, on this data
    env = {
        RECORD_KEY: PROCESS,
        "API_URL": cp.url,
        "API_PORT": cp.url.rsplit(":", 1)[-1],
        "ETCD_PORT": _port_of(list(procs["etcd"].argv), "--listen-client-urls"),
        "KUBE_SCHEDULER_PORT": _port_of(list(procs["kube-scheduler"].argv), "--secure-port"),
        "KWOK_PORT": _port_of(list(procs["kwok"].argv), "--server-address"),
        "PROMETHEUS_URL": prom.url,
        **tls_env,
        "TELEMETRY": telemetry_mode,
        "SIMULATOR_HTTP_PORT": str(simulator_port),
        "EXTENDER_PORT": str(extender_port),
        "KUBECONFIG": str(state.kubeconfig),
        "STARTED_AT": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    for name in PROCESSES:
        env[pid_key(name)] = str(procs[name].pid)
    env.update(_collector_env(col))
    return env


def _telemetry_pki(state: StateDir, tls: bool) -> dict[str, str]:
    """SIMCLUSTER_TELEMETRY_TLS: a fresh throwaway PKI under the state dir, as the cluster.env entry that
    names it; {} for plain HTTP."""
    if not tls:
        return {}
    pki = telemetrytls.make(state.root)
    return {telemetrytls.TLS_DIR_KEY: str(pki.directory)}


def _prometheus_tls(tls_env: Mapping[str, str]) -> PrometheusTls | None:
    pki = telemetrytls.pki_of(tls_env)
    return telemetrytls.prometheus_tls(pki) if pki is not None else None


def _start_collector(
    state: StateDir, group: ProcessGroup, telemetry_mode: str, prometheus_url: str, simulator_port: int,
    timing: Timing, progress: Callable[[str], None], tls_env: Mapping[str, str] | None = None,
) -> Otelcol | None:
    """The OpenTelemetry Collector of a mode that has one (config <state>/otelcol.yaml), else None."""
    m = telemetry.mode(telemetry_mode)
    if not m.needs_collector:
        return None
    settings = m.collector_settings(
        prometheus_url, f"127.0.0.1:{free_port()}", f"127.0.0.1:{free_port()}", f"127.0.0.1:{simulator_port}",
        duration(timing.otlp_interval_s), telemetrytls.collector_files(tls_env or {}))
    col = start_otelcol(load_tools(), state.root, group, settings.mode, prometheus_url, settings=settings, timeout_s=60)
    where = (f"OTLP in at {col.otlp_url}" if settings.otlp_http_endpoint
             else f"scraping 127.0.0.1:{simulator_port}{settings.metrics_path}")
    progress(f"otelcol healthy ({settings.mode}: {where}, out to {prometheus_url}/api/v1/otlp)")
    return col


def _collector_env(col: Otelcol | None) -> dict[str, str]:
    """cluster.env keys of the Collector; OTELCOL_OTLP_URL is where the simulator pushes (otel-collector)."""
    if col is None:
        return {}
    return {pid_key("otelcol"): str(col.proc.pid), "OTELCOL_HEALTH_URL": col.health_url,
            "OTELCOL_OTLP_URL": col.otlp_url if col.settings.otlp_http_endpoint else ""}


def _prometheus_settings(telemetry_mode: str, simulator_port: int, timing: Timing) -> PrometheusSettings:
    interval = duration(timing.otlp_interval_s)
    return telemetry.mode(telemetry_mode).prometheus_settings(f"127.0.0.1:{simulator_port}", interval)


def _restart_telemetry(
    state: StateDir, env: dict[str, str], telemetry_mode: str, timing: Timing, progress: Callable[[str], None],
    tls: bool = True,
) -> None:
    """Another telemetry mode on a live cluster: Prometheus (and the Collector, if the mode has one)
    again with that mode's settings. A deploy afterwards points the simulator at the new path."""
    with changing(state.root):
        for proc in ("otelcol", "prometheus"):
            old = env.pop(pid_key(proc), "")
            if old.isdigit():
                stop_pid(int(old), proc)
        state.write_cluster_env(env)
    for key in ("OTELCOL_HEALTH_URL", "OTELCOL_OTLP_URL", telemetrytls.TLS_DIR_KEY):
        env.pop(key, None)
    shutil.rmtree(state.root / "tsdb", ignore_errors=True)
    shutil.rmtree(state.root / telemetrytls.DIR_NAME, ignore_errors=True)
    group = ProcessGroup()
    try:
        tls_env = _telemetry_pki(state, tls)
        prom = start_prometheus(load_tools(), state.root, group,
                                _prometheus_settings(telemetry_mode, int(env.get("SIMULATOR_HTTP_PORT") or 0), timing),
                                timeout_s=60, tls=_prometheus_tls(tls_env))
        env.update({pid_key("prometheus"): str(prom.proc.pid), "PROMETHEUS_URL": prom.url, "TELEMETRY": telemetry_mode,
                    **tls_env})
        env.update(_collector_env(_start_collector(state, group, telemetry_mode, prom.url,
                                                   int(env.get("SIMULATOR_HTTP_PORT") or 0), timing, progress,
                                                   tls_env)))
        record_cluster_commands(state, group.procs)
    except (ProcessFailedError, ToolMissingError, OSError) as e:
        group.stop_all()  # nothing unrecorded may outlive a failed restart
        raise RuntimeFailure(f"restarting the telemetry path for mode {telemetry_mode} failed: {e}") from e
    progress(f"prometheus restarted at {prom.url} for telemetry mode {telemetry_mode}")


def _pids_now(state: StateDir) -> dict[str, str]:
    """The PIDs cluster.env records now: the supervisor may have restarted a process since we read it."""
    now = state.read_cluster_env() or {}
    return {k: v for k, v in now.items() if k.endswith("_PID")}


def revive(state: StateDir, progress: Callable[[str], None], timeout_s: float = 90.0) -> bool:
    """A recorded cluster with some processes dead: start those again with their recorded command
    lines, on the existing etcd data, certificates and ports (what kubelet does for a static Pod),
    and wait until it is live. False (nothing started) when there is nothing to start from."""
    if not cluster_commands_path(state).is_file() or not (state.root / "etcd-data").is_dir():
        return False
    with changing(state.root):
        dead = [w for w in watched(state) if w.kind == "cluster" and not w.alive]
        for w in dead:
            try:
                proc = start_again(state, w.name, "cluster")
            except (KeyError, OSError) as e:
                progress(f"cannot start {w.name} again ({e!r}); starting a fresh cluster")
                return False
            progress(f"{w.name} (pid {w.pid}) was not running: started again on the existing data as pid {proc.pid}")
    deadline = time.monotonic() + timeout_s
    why = ""
    while time.monotonic() < deadline:
        live, why = cluster_live(state)
        if live:
            return True
        time.sleep(0.5)
    progress(f"the restarted cluster did not come back within {timeout_s:.0f}s ({why}); starting a fresh one")
    return False


def up(ctx: Context, rendered: RenderedSpec, *, crd_dir: Path = DEFAULT_CRD_DIR, telemetry_mode: str = "otlp") -> str:
    """Brings the cluster up (or reuses it) with the spec's Nodes; returns the summary line. The
    telemetry mode is the caller's (``smoke`` and ``up``: SIMCLUSTER_TELEMETRY; ``bench-live``: otlp)."""
    state, progress, timing = ctx.state, ctx.progress, ctx.settings.timing
    spec = rendered.spec
    try:
        telemetry.mode(telemetry_mode)
    except telemetry.TelemetryError as e:
        raise RuntimeFailure(str(e)) from e
    state.root.mkdir(parents=True, exist_ok=True)
    live, why = cluster_live(state)
    env = state.read_cluster_env()
    if not live and env is not None and revive(state, progress):
        live, why = cluster_live(state)
        env = state.read_cluster_env()
    if live and env is not None:
        progress(f"reusing the running cluster at {env.get('API_URL')} ({state.root})")
        reused = True
        tls = ctx.settings.telemetry_tls
        if env.get("TELEMETRY", "otlp") != telemetry_mode or bool(env.get(telemetrytls.TLS_DIR_KEY)) != tls:
            _restart_telemetry(state, env, telemetry_mode, timing, progress, tls)
    else:
        progress(f"no live cluster in {state.root} ({why}); starting one")
        supervisor.stop(state)
        if env is not None:
            stop_recorded(state, env, progress)
            state.cluster_env.unlink(missing_ok=True)
        env = _start_processes(state, crd_dir, progress, telemetry_mode, timing, ctx.settings.telemetry_tls)
        reused = False
    env["SPEC_NAME"] = spec.name
    with changing(state.root):
        env = {**env, **_pids_now(state)}
        state.write_cluster_env(env)
    pid = supervisor.ensure(state, policy_of(timing))
    progress(f"supervisor running (pid {pid}; restarts with backoff {timing.restart_backoff_s:g}s doubling to "
             f"{timing.restart_backoff_max_s:g}s; log {state.log('supervisor')})")
    try:
        applied, deleted, ready_s = apply_nodes(state, rendered, progress)
    except k8s.ApiException as e:
        raise RuntimeFailure(
            f"applying the Nodes failed: HTTP {e.status} {e.reason}: {e.body}; "
            f"kube-apiserver log {state.log('kube-apiserver')}"
        ) from e
    state.spec.write_text(rendered.text)
    with changing(state.root):
        env = {**env, **_pids_now(state)}
        env["SPEC_APPLIED_AT"] = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        state.write_cluster_env(env)
    summary = (
        f"simcluster up: spec {spec.name}, {applied} Nodes applied, {len(deleted)} deleted, "
        f"applied and all Ready in {ready_s:.1f}s, {progress.elapsed():.1f}s in all "
        f"({'reused' if reused else 'started'} control plane, API {env['API_URL']})"
    )
    print(summary, file=progress.out, flush=True)
    return summary


# --- status / down ----------------------------------------------------------------------------


def status(state: StateDir, out: TextIO | None = None) -> int:
    """Prints the recorded cluster's processes, API readiness and Nodes. 0 if all is up, 1 if not."""
    out = out or sys.stdout
    env = state.read_cluster_env()
    if env is None:
        print(f"no cluster recorded in {state.root}", file=out)
        return 1
    print(f"cluster: {state.root} (spec {env.get('SPEC_NAME', '?')}, started {env.get('STARTED_AT', '?')})", file=out)
    sup = supervisor.read(state)
    print(f"supervisor: {f'pid {sup.pid} running' if sup and sup.running else 'NOT RUNNING (nothing restarts)'}"
          f"  log {state.log('supervisor')}", file=out)
    ok = True
    restarts = supervisor.restarts(state)
    for name, pid, alive in live_processes(env):
        ok = ok and alive
        print(f"  {name:<15} pid {pid:<8} {'running' if alive else 'NOT RUNNING':<11}  restarts {restarts.get(name, 0):<3} "
              f"log {state.log(name)}", file=out)
    ready = api_ready(state.kubeconfig)
    print(f"api: {env.get('API_URL', '?')} {'ready' if ready else 'NOT READY'}", file=out)
    if not ready:
        return 1
    try:
        nodes = list_nodes(core_api(state.kubeconfig))
    except Exception as e:  # - status reports, never raises
        print(f"nodes: cannot list: {e}", file=out)
        return 1
    n_ready = sum(1 for n in nodes if node_ready(n))
    print(f"nodes: {len(nodes)} ({n_ready} Ready)", file=out)
    return 0 if ok and n_ready == len(nodes) else 1


def down(state: StateDir, *, keep: bool, progress: Progress | None = None) -> int:
    """Stops the recorded processes and removes cluster.env; the state dir too (but runs/) unless `keep`.
    Idempotent: returns how many processes were running."""
    progress = progress or Progress()
    if supervisor.stop(state):
        progress("stopped the supervisor")
    env = state.read_cluster_env()
    stopped = stop_recorded(state, env, progress) if env is not None else 0
    state.cluster_env.unlink(missing_ok=True)
    if keep:
        progress(f"stopped {stopped} processes; kept {state.root} (logs, trees and data; a later up starts afresh)")
    else:
        # The run results outlive the cluster (seed: "down keeps them").
        for entry in state.root.iterdir() if state.root.is_dir() else []:
            if entry.name == "runs":
                continue
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry, ignore_errors=True)
            else:
                entry.unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            state.root.rmdir()  # only when nothing (no runs/) is left
        progress(f"stopped {stopped} processes; removed {state.root} (runs/ kept)")
    return stopped


class ProcessRuntime:
    """The default runtime: every component a local process (:class:`~joulie_simcluster.runtimes.runtime.Runtime`)."""

    name = PROCESS
    components_as_pods = False
    runs_smoke = True

    def up(self, ctx: Context, rendered: RenderedSpec, request: UpRequest) -> str:
        return up(ctx, rendered, crd_dir=request.crd_dir, telemetry_mode=request.telemetry_mode)

    def status(self, state: StateDir) -> int:
        return status(state)

    def down(self, ctx: Context, stop_deployed: StopDeployed) -> None:
        state, progress = ctx.state, ctx.progress
        if supervisor.stop(state):  # first: nothing may restart what down stops
            progress("stopped the supervisor")
        stop_deployed(state, progress)
        down(state, keep=ctx.settings.keep, progress=progress)

    def release(self, state: StateDir, progress: Progress, stop_deployed: StopDeployed) -> None:
        stop_deployed(state, progress)
        down(state, keep=True, progress=progress)
