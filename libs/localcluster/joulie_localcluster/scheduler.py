"""kube-scheduler against a test control plane, optionally calling a scheduler extender."""

from __future__ import annotations

import ssl
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from joulie_localcluster.controlplane import ControlPlane
from joulie_localcluster.procs import ManagedProcess, free_port
from joulie_localcluster.tools import Tools


@dataclass(frozen=True)
class ExtenderConfig:
    """How kube-scheduler calls an extender. `ignorable` keeps pods scheduling when it is down."""

    url_prefix: str
    filter_verb: str = "filter"
    prioritize_verb: str = "prioritize"
    weight: int = 1
    node_cache_capable: bool = False
    ignorable: bool = True
    http_timeout: str = "5s"


def scheduler_config(kubeconfig: Path, extender: ExtenderConfig | None, qps: float | None = None) -> dict[str, Any]:
    """`qps`: the client's rate limit (kube-scheduler's default is 50, burst 100); burst is twice it."""
    cfg: dict[str, Any] = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "clientConnection": {"kubeconfig": str(kubeconfig)},
        "leaderElection": {"leaderElect": False},
    }
    if qps is not None:
        cfg["clientConnection"].update(qps=qps, burst=int(qps * 2))
    if extender is not None:
        cfg["extenders"] = [
            {
                "urlPrefix": extender.url_prefix,
                "filterVerb": extender.filter_verb,
                "prioritizeVerb": extender.prioritize_verb,
                "weight": extender.weight,
                "enableHTTPS": False,
                "nodeCacheCapable": extender.node_cache_capable,
                "ignorable": extender.ignorable,
                "httpTimeout": extender.http_timeout,
            }
        ]
    return cfg


def start_scheduler(
    tools: Tools, cp: ControlPlane, *, extender: ExtenderConfig | None = None, timeout_s: float = 30,
    qps: float | None = None,
) -> ManagedProcess:
    port = free_port()
    config_path = cp.workdir / "kube-scheduler.yaml"
    config_path.write_text(yaml.safe_dump(scheduler_config(cp.kubeconfig, extender, qps)))
    proc = cp.group.add(
        ManagedProcess(
            "kube-scheduler",
            [
                str(tools.path("kube-scheduler")),
                f"--config={config_path}",
                f"--authentication-kubeconfig={cp.kubeconfig}",
                f"--authorization-kubeconfig={cp.kubeconfig}",
                "--bind-address=127.0.0.1",
                f"--secure-port={port}",
                "--v=2",
            ],
            cp.workdir / "logs" / "kube-scheduler.log",
        ).start()
    )
    ctx = ssl.create_default_context()
    # The scheduler serves /healthz with a self-signed certificate it makes at start-up.
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE

    def healthy() -> bool:
        with urllib.request.urlopen(f"https://127.0.0.1:{port}/healthz", context=ctx, timeout=2) as resp:
            return bool(resp.status == 200)

    proc.wait_until(healthy, timeout_s, "healthy (/healthz)")
    return proc
