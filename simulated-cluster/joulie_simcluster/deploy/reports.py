"""Whether each deployed component reports: alive, its endpoint answering, its objects written
(NodeHardware per agent, a NodeTwin with status per managed Node). ``deploy`` waits on these,
``status`` prints them and the smoke's S01 checks them."""

from __future__ import annotations

import json
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from joulie_common.sharding import owns_node  # the rule the agents shard by, not a copy
from joulie_localcluster.procs import tail
from joulie_simcluster.deploy.processes import deployed_alive, recorded_deploy_pids
from joulie_simcluster.errors import RuntimeFailure
from joulie_simcluster.runtimes.kube import NODEHARDWARES, NODETWINS, kube_list
from joulie_simcluster.runtimes.pids import pid_alive
from joulie_simcluster.state import StateDir
from joulie_simcluster.state import pid_key as cluster_pid_key

REPORT_TIMEOUT_S = 10.0
"""How long a component's endpoint may take to answer a report look: Prometheus's own default
scrape_timeout. 2 s failed the 1000-Node scenario's health look on a loaded 2-core machine (load
15-19: some pool agent's /metrics missed it in every look for 300 s, each answering a moment later);
a process that died is still seen at once (its pid, a refused connection)."""
REPORT_LOOKS_AT_ONCE = 8
"""Endpoints asked at once in one look: 44 components one after the other took minutes when each ran
close to its timeout."""


def http_ok(url: str, timeout_s: float = 2.0) -> tuple[bool, str]:
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as resp:
            return resp.status == 200, resp.read().decode(errors="replace")
    except (urllib.error.URLError, OSError, ValueError) as e:
        return False, str(e)


@dataclass
class Report:
    """Whether one component reports, and what was seen."""

    name: str
    ok: bool
    detail: str


def component_reports(state: StateDir, env: Mapping[str, str], managed_nodes: list[str]) -> list[Report]:
    """One Report per deployed process: alive, its endpoint answering, its objects written."""
    kubeconfig = state.kubeconfig
    out: list[Report] = []
    hardware = {h["spec"]["nodeName"] for h in kube_list(kubeconfig, NODEHARDWARES) if h.get("status")}
    twins = {t["spec"]["nodeName"] for t in kube_list(kubeconfig, NODETWINS) if (t.get("status") or {}).get("lastUpdated")}
    alive = [(name, pid, deployed_alive(name, pid, env)) for name, pid in recorded_deploy_pids(env)]
    urls = {name: env.get(f"URL_{name}", "") for name, _pid, up in alive if up}
    with ThreadPoolExecutor(REPORT_LOOKS_AT_ONCE) as pool:
        answers = dict(zip(urls, pool.map(lambda u: http_ok(u, REPORT_TIMEOUT_S) if u else (True, ""), urls.values()),
                           strict=True))
    for name, pid, up in alive:
        if not up:
            out.append(Report(name, False, f"pid {pid} not running; log {state.log(name)}"))
            continue
        url = urls[name]
        ok, body = answers[name]
        if not ok:
            out.append(Report(name, False, f"{url}: {body}"))
            continue
        component = env.get(f"COMPONENT_{name}", name)
        node = name.removeprefix("agent-")
        if name == "workload":  # the simulator's binary, not the emulator: no /debug/emulate here
            out.append(Report(name, True, workload_detail(body)))
        elif component == "simulator":
            served = {n["name"] for n in json.loads(body).get("nodes", [])}
            want = set(env.get("NODES", "").split(",")) - {""}
            missing = sorted(want - served)
            out.append(Report(name, not missing, f"{len(served)} nodes on /debug/emulate" + (f", missing {missing}" if missing else "")))
        elif component == "agent" and name.startswith("agent-pool-"):
            shard, shards = int(name.rsplit("-", 1)[1]), int(env.get("AGENT_SHARDS", "1"))
            mine = [n for n in env.get("AGENT_NODES", "").split(",") if n and owns_node(n, shards, shard)]
            done = [n for n in mine if n in hardware]
            out.append(Report(name, len(done) == len(mine), f"NodeHardware for {len(done)}/{len(mine)} Nodes of its shard"))
        elif component == "agent":
            out.append(Report(name, node in hardware, "NodeHardware published" if node in hardware else "no NodeHardware yet"))
        elif component == "controller-manager":
            missing = sorted(set(managed_nodes) - twins)
            out.append(Report(name, not missing, f"{len(twins)} NodeTwins with status" + (f", none yet for {missing}" if missing else "")))
        else:
            out.append(Report(name, True, "healthy"))
    return out


def collector_report(state: StateDir, cluster: Mapping[str, str]) -> Report | None:
    """The OpenTelemetry Collector of the Collector telemetry modes (``up`` starts it, not deploy):
    alive and its health check answering. None in the modes without one."""
    url = cluster.get("OTELCOL_HEALTH_URL", "")
    if not url:
        return None
    pid = cluster.get(cluster_pid_key("otelcol"), "")
    if not (pid.isdigit() and pid_alive(int(pid))):
        return Report("otelcol", False, f"pid {pid or '?'} not running; log {state.log('otelcol')}")
    ok, body = http_ok(url)
    return Report("otelcol", ok, "health check answers" if ok else f"{url}: {body}")


def runner_counts(metrics: str) -> dict[str, float]:
    """Jobs submitted, running, pending and completed from the workload runner's /metrics (the
    counters are per class and Node: summed)."""
    series = {"joulie_sim_job_submitted_total": "submitted", "joulie_sim_jobs_running": "running",
              "joulie_sim_jobs_pending": "pending", "joulie_sim_job_completed_total": "completed"}
    out: dict[str, float] = {}
    for line in metrics.splitlines():
        name, _, value = line.partition(" ")
        word = series.get(name.partition("{")[0])
        if word:
            out[word] = out.get(word, 0.0) + float(value)
    return out


def workload_detail(metrics: str) -> str:
    """The workload runner's /metrics in a few words: its jobs running, pending and completed."""
    seen = runner_counts(metrics)
    return "/metrics answers; jobs " + ", ".join(
        f"{seen[w]:.0f} {w}" if w in seen else f"? {w}" for w in ("running", "pending", "completed")
        if w != "completed" or w in seen)


def wait_reports(
    state: StateDir, env: Mapping[str, str], managed_nodes: list[str], timeout_s: float, progress: Callable[[str], None]
) -> list[Report]:
    deadline = time.monotonic() + timeout_s
    last = ""
    while True:
        # Re-read: the supervisor may have restarted a process since the caller read deploy.env.
        try:
            reports = component_reports(state, state.read_deploy_env() or env, managed_nodes)
        except (OSError, RuntimeFailure) as e:
            # One slow answer (a list of 1000 NodeTwins from a busy API server timed out at 1000
            # Nodes) is no reason to throw away a deploy that has been coming up for many minutes.
            if time.monotonic() > deadline:
                raise RuntimeFailure(f"cannot read the components' reports: {e}") from None
            line = f"cannot look at the reports this time ({e}); trying again"
            if line != last:
                progress(line)
                last = line
            time.sleep(5.0)
            continue
        ok = sum(r.ok for r in reports)
        line = f"{ok}/{len(reports)} components report"
        if line != last:
            pending = [r.name for r in reports if not r.ok]
            progress(line + (f" (waiting for {', '.join(pending[:6])}{' …' if len(pending) > 6 else ''})" if pending else ""))
            last = line
        if ok == len(reports):
            return reports
        dead = [r for r in reports if "not running" in r.detail]
        if dead or time.monotonic() > deadline:
            bad = dead or [r for r in reports if not r.ok]
            lines = [f"  {r.name}: {r.detail}\n{_indent(tail(state.log(r.name), 15))}" for r in bad[:5]]
            why = "exited" if dead else f"did not report within {timeout_s:.0f}s (SIMCLUSTER_DEPLOY_TIMEOUT sets the wait)"
            raise RuntimeFailure(f"{len(bad)} components {why}:\n" + "\n".join(lines))
        time.sleep(1.0)


def _indent(text: str) -> str:
    return "\n".join("      " + line for line in text.splitlines())


def print_reports(reports: list[Report], out: Any = None) -> None:
    out = out or sys.stdout
    width = max((len(r.name) for r in reports), default=8)
    for r in reports:
        print(f"  {r.name:<{width}}  {'ok ' if r.ok else 'NOT'}  {r.detail}", file=out)
