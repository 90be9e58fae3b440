"""The KWOK controller: keeps fake Nodes Ready and moves their pods through phases (stages)."""

from __future__ import annotations

import urllib.request

from joulie_localcluster.controlplane import ControlPlane
from joulie_localcluster.procs import ManagedProcess, free_port
from joulie_localcluster.tools import Tools

# KWOK manages only Nodes carrying this annotation, so a real node is never touched by mistake.
KWOK_NODE_ANNOTATION = "kwok.x-k8s.io/node"
KWOK_NODE_ANNOTATION_VALUE = "fake"
# Fake nodes carry this taint so only pods that tolerate it (the simulated workload) land there.
KWOK_TAINT_KEY = "kwok.x-k8s.io/node"


def start_kwok(tools: Tools, cp: ControlPlane, timeout_s: float = 30) -> ManagedProcess:
    port = free_port()
    proc = cp.group.add(
        ManagedProcess(
            "kwok",
            [
                str(tools.path("kwok")),
                f"--kubeconfig={cp.kubeconfig}",
                "--manage-all-nodes=false",
                f"--manage-nodes-with-annotation-selector={KWOK_NODE_ANNOTATION}={KWOK_NODE_ANNOTATION_VALUE}",
                "--cidr=10.244.0.0/16",
                "--node-ip=127.0.0.1",
                f"--server-address=127.0.0.1:{port}",
                *(f"--config={stage}" for stage in tools.kwok_stages()),
            ],
            cp.workdir / "logs" / "kwok.log",
        ).start()
    )

    def healthy() -> bool:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as resp:
            return bool(resp.status == 200)

    proc.wait_until(healthy, timeout_s, "healthy (/healthz)")
    return proc
