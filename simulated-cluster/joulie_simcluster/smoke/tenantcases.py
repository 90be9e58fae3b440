"""The tenant cases of issue 36 (``simcluster tenants``; what each holds and its control: ``tenants.py``),
each against the live cluster (``tenantlive.Live``) and returning its verdict."""

from __future__ import annotations

import json
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.metrics import CallbackOptions, Observation
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource

from joulie_api import names
from joulie_simcluster import chart, telemetrytls
from joulie_simcluster.deploy.processes import pid_key
from joulie_simcluster.smoke.telemetryauthstep import exporter_session
from joulie_simcluster.smoke.tenantlive import MEMORY_BOUND, PERF, TEAM, TENANT, Live, Result, case, moved, pod

FORGED_W = 50_000.0
UPLOADS = 100
UPLOAD_BYTES = 16 * 2**20
FILTER_ANSWER_S = 0.5
EXTENDER_RSS_LIMIT_MB = 400.0
"""The extender's limit in the chart is 512 Mi; the issue's probe took it to 1073 MB."""


# --- 1. forged power -------------------------------------------------------------------------


def _forge(cluster: Mapping[str, str], node: str, stop: threading.Event) -> str:
    """Pushes a second hw.host.energy counter for ``node`` growing by FORGED_W joules a second, with the
    agents' certificate, until ``stop``; "" or why it could not push."""
    pki = telemetrytls.pki_of(cluster)
    crt, key = pki.client("agent") if pki else (None, None)
    exporter = OTLPMetricExporter(
        endpoint=f"{cluster['PROMETHEUS_URL']}/api/v1/otlp/v1/metrics", timeout=5,
        certificate_file=str(pki.ca_crt) if pki else None, client_certificate_file=str(crt) if crt else None,
        client_key_file=str(key) if key else None, session=exporter_session())
    reader = PeriodicExportingMetricReader(exporter, export_interval_millis=1000)
    provider = MeterProvider(resource=Resource.create({
        "service.name": "joulie-agent", "service.instance.id": f"forger-{node}", "k8s.node.name": node,
        "host.name": node}), metric_readers=[reader])
    t0 = time.monotonic()

    def energy(_: CallbackOptions) -> list[Observation]:
        return [Observation(1e6 + FORGED_W * (time.monotonic() - t0))]

    provider.get_meter("forger").create_observable_counter("hw.host.energy", callbacks=[energy], unit="J")
    try:
        stop.wait()
    finally:
        provider.shutdown()
    return ""


def forged_power(live: Live, eco: list[str]) -> Result:
    """Caps compared on the nodes capped eco when it starts (the budget's shed lands on them); the family's
    performance node may change meanwhile as the spare is suspended again after the redeploy."""
    cluster = live.ctx.state.read_cluster_env() or {}
    if len(eco) < 2:
        return "forged-power-moves-no-cap", False, f"needs two capped eco Xeons, had {eco}"
    target = eco[0]
    xeons = eco
    before = live.caps(xeons)
    stop = threading.Event()
    t = threading.Thread(target=_forge, args=(cluster, target, stop), daemon=True)
    t.start()
    try:
        seen = live.wait("the forged reading refuted", lambda: (
            ((live.twins()[target].get("status") or {}).get("powerMeasurement") or {}).get("source")
            == "prometheus-implausible"), 60)
        live.ticks(4)
        after = live.caps(xeons)
        gauge = live.controller_metric("joulie_twin_power_implausible", {"node": target})
    finally:
        stop.set()
        t.join(10)
    return case("forged-power-moves-no-cap", moved(before, after), seen and gauge == 1,
                f"caps {after} unchanged over 4 ticks with {FORGED_W / 1000:.0f} kW forged for {target} "
                f"with the agents' push certificate",
                f"{target} powerMeasurement.source prometheus-implausible: {seen}, "
                f"joulie_twin_power_implausible{{node={target}}} = {gauge}")


# --- 2. untrusted performance Pod ------------------------------------------------------------


def untrusted_performance_pod(live: Live, eco: list[str]) -> Result:
    if len(eco) < 2:
        return "untrusted-performance-pod-uncaps-nothing", False, f"needs two capped eco Xeons, had {eco}"
    victim, control = eco[0], eco[1]
    before = {victim: (live.profiles([victim])[victim], live.caps([victim])[victim])}
    live.create(TENANT, pod("sneaky", node=victim, cpu="100m", labels=MEMORY_BOUND, annotations=PERF))
    live.wait("tenant/sneaky Running", lambda: live.running(TENANT, "sneaky"), 60)
    live.ticks(4)
    after = {victim: (live.profiles([victim])[victim], live.caps([victim])[victim])}
    live.create(TEAM, pod("trusted-perf", node=control, cpu="100m", labels=MEMORY_BOUND, annotations=PERF))
    released = live.wait("the trusted Pod's node uncapped", lambda: (
        live.profiles([control])[control] == "performance" and live.caps([control])[control] == 100), 60)
    live.delete(TENANT, "sneaky")
    live.delete(TEAM, "trusted-perf")
    # Not part of the verdict: once performance it may stay the family's floor node (performance first).
    live.wait("the control node capped again", lambda: live.profiles([control])[control] == "eco", 30)
    return case("untrusted-performance-pod-uncaps-nothing", moved(before, after), released,
                f"{victim} stayed {after[victim][0]} at {after[victim][1]} % over 4 ticks with tenant/sneaky "
                f"(performance) on it", f"team/trusted-perf on {control}: performance at 100 %: {released}")


# --- 3. pending Pods -------------------------------------------------------------------------


def pending_pods(live: Live, xeons: list[str], spare: str) -> Result:
    name = "pending-pods-release-and-wake-nothing"
    if live.power_state(spare) != names.POWER_OFF:
        return name, False, f"{spare} is not powered off by the power policy (state {live.power_state(spare)!r})"
    # No performance Xeon may have room for a 4-core performance Pod: fill each (both kube-scheduler's
    # 95 allocatable cores and the controller's 48 NodeHardware cores).
    perf = [n for n, p in live.profiles(xeons).items() if p == "performance"]
    for n in perf:
        live.create(TEAM, pod(f"filler-{n}", node=n, cpu="68"))
    eco = [n for n in xeons if n not in perf]
    before = {**live.profiles(eco), spare: live.power_state(spare)}
    wants_perf = {names.LABEL_POWER_PROFILE: "performance"}
    live.create(TEAM, pod("impossible", cpu="4", annotations=PERF,
                          selector={**wants_perf, "tenant.example/zone": "nowhere"}))
    live.create(TEAM, pod("foreign", cpu="4", annotations=PERF, selector=wants_perf, scheduler="bogus-scheduler"))
    marked = live.wait("team/impossible Unschedulable", lambda: live.unschedulable(TEAM, "impossible"), 60)
    live.ticks(4)
    after = {**live.profiles(eco), spare: live.power_state(spare)}
    held = moved(before, after) + ([] if marked else ["team/impossible was never marked Unschedulable"])
    live.delete(TEAM, "impossible")
    live.delete(TEAM, "foreign")
    live.create(TEAM, pod("fits", cpu="4", annotations=PERF, selector={**wants_perf, "joulie.io/pool": "xeon"}))
    released = live.wait("a capped Xeon released for team/fits", lambda: any(
        p == "performance" for p in live.profiles(eco).values()), 90)
    live.create(TEAM, pod("wake", cpu="1", selector={"kubernetes.io/hostname": spare}))
    woke = live.wait(f"{spare} powered on for team/wake", lambda: live.power_state(spare) in (names.POWER_RESUMING, names.POWER_ON),
                     120)
    return case(name, held, released and woke,
                f"{before} unchanged over 4 ticks with team/impossible (Unschedulable) and team/foreign "
                f"(schedulerName bogus-scheduler) Pending",
                f"team/fits released a capped Xeon: {released}; team/wake powered {spare} on: {woke}")


# --- 4. the extender under slow uploads ------------------------------------------------------


def _rss_mb(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def _slow_upload(addr: str, source_ip: str) -> socket.socket | None:
    host, port = addr.split(":")
    try:
        sock = socket.create_connection((host, int(port)), timeout=5, source_address=(source_ip, 0))
        sock.sendall(b"POST /prioritize HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Content-Length: %d\r\n\r\n" % UPLOAD_BYTES + b"{" + b" " * 1023)
        return sock
    except OSError:
        return None


def _filter_status(addr: str) -> tuple[int, float]:
    body = json.dumps({"Pod": {"metadata": {"name": "p"}}, "NodeNames": ["n1", "n2"]}).encode()  # as limits_test.py
    req = urllib.request.Request(f"http://{addr}/filter", data=body, headers={"Content-Type": "application/json"})
    started = time.monotonic()
    try:
        with urllib.request.urlopen(req, timeout=5) as resp:
            code = int(resp.status)
    except urllib.error.HTTPError as e:
        code = int(e.code)
    except OSError:
        code = -1
    return code, time.monotonic() - started


def _filter_calls(addr: str) -> float:
    with urllib.request.urlopen(f"http://{addr}/metrics", timeout=5) as resp:
        return sum(float(line.rsplit(" ", 1)[1]) for line in resp.read().decode().splitlines()
                   if line.startswith("joulie_scheduler_filter_requests_total{"))


def extender_slow_uploads(live: Live) -> Result:
    env = live.env
    addr, pid = env["EXTENDER_ADDR"], int(env.get(pid_key("extender"), "0") or 0)
    rss_before = _rss_mb(pid)
    held = [s for s in (_slow_upload(addr, f"127.0.{1 + i // 200}.{2 + i % 200}") for i in range(UPLOADS)) if s]
    problems: list[str] = []
    answers: list[tuple[int, float]] = []
    try:
        time.sleep(0.5)
        for _ in range(10):
            answers.append(_filter_status(addr))
        rss_held = _rss_mb(pid)
    finally:
        for s in held:
            s.close()
    slow = [f"{c} in {t:.2f}s" for c, t in answers if t > FILTER_ANSWER_S or c not in (200, 503)]
    if len(held) < UPLOADS:
        problems.append(f"only {len(held)} of {UPLOADS} uploads connected")
    problems += [f"/filter {s}" for s in slow]
    if rss_held is None or rss_held > EXTENDER_RSS_LIMIT_MB:
        problems.append(f"extender RSS {rss_held} MB while held (limit {EXTENDER_RSS_LIMIT_MB:g})")
    calls = _filter_calls(addr)
    live.create(TEAM, pod("after-uploads", cpu="1"))
    bound = live.wait("team/after-uploads bound through the extender", lambda: live.running(TEAM, "after-uploads")
                      and _filter_calls(addr) > calls, 60)
    live.delete(TEAM, "after-uploads")
    codes = sorted({c for c, _ in answers})
    return case("extender-answers-under-100-slow-uploads", problems, bound,
                f"{len(held)} uploads of {UPLOAD_BYTES >> 20} MiB held from {len(held)} addresses: /filter answered "
                f"{codes} each within {max(t for _, t in answers):.3f}s; extender RSS {rss_before} -> {rss_held} MB",
                f"after the body timeout kube-scheduler called /filter again and team/after-uploads ran: {bound}")


# --- 5. Pod Security admission ----------------------------------------------------------------

ALL_OPTIONS = Path("charts/joulie/ci/all-options-values.yaml")


def _admitted(live: Live, ns: str, name: str, template: Mapping[str, Any]) -> tuple[bool, str]:
    """A server-side dry run of the Pod the workload would create, in ``ns``: (admitted, why not)."""
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns},
            "spec": json.loads(json.dumps(template["spec"]))}
    try:
        live.api.create_namespaced_pod(ns, body, dry_run="All")  # type: ignore[arg-type]
        return True, ""
    except ApiException as e:
        return False, f"HTTP {e.status}: {str(e.body)[:300]}"


def pod_security(live: Live) -> Result:
    """The chart's controller manager and extender Pods (every option on) admitted in a namespace that
    enforces Pod Security "restricted"; the agent refused there, as it must be (privileged by default
    for NVML and amd-smi, and host paths of /sys even unprivileged, which "baseline" forbids too): it
    belongs in a namespace labelled "privileged", where the same Pod is admitted (the control)."""
    docs = chart.render_chart(chart.CHART_DIR, [ALL_OPTIONS])
    levels = {"joulie-psa-restricted": "restricted", "joulie-psa-baseline": "baseline",
              "joulie-psa-privileged": "privileged"}
    for ns, level in levels.items():
        try:
            live.api.create_namespace(k8s.V1Namespace(metadata=k8s.V1ObjectMeta(
                name=ns, labels={"pod-security.kubernetes.io/enforce": level})))
        except ApiException as e:
            if e.status != 409:
                raise

    def template(kind: str, name: str) -> Mapping[str, Any]:
        found = chart.find(docs, kind, name)
        if len(found) != 1:
            raise KeyError(f"{kind}/{name} not rendered once from {ALL_OPTIONS}")
        return cast(Mapping[str, Any], found[0]["spec"]["template"])

    problems: list[str] = []
    for name in ("joulie-controller-manager", "joulie-scheduler-extender"):
        ok, why = _admitted(live, "joulie-psa-restricted", name, template("Deployment", name))
        if not ok:
            problems.append(f"{name} refused under restricted: {why}")
    agent = template("DaemonSet", "joulie-agent")
    refused = {level: _admitted(live, f"joulie-psa-{level}", "joulie-agent", agent) for level in ("restricted", "baseline")}
    for level, (ok, why) in refused.items():
        if ok or "violates PodSecurity" not in why:
            problems.append(f"the privileged agent under {level}: {'admitted' if ok else why}")
    control, why = _admitted(live, "joulie-psa-privileged", "joulie-agent", agent)
    return case("pod-security-admission", problems, control,
                "controller manager and extender admitted under restricted; the agent refused under restricted and "
                "baseline (violates PodSecurity)", f"the agent admitted under privileged: {control} {why}".rstrip())
