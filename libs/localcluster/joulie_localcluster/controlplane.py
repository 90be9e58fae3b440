"""etcd + kube-apiserver (and optionally kube-controller-manager) on 127.0.0.1, with the Joulie CRDs."""

from __future__ import annotations

import json
import ssl
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client as k8s

from joulie_api.kubeconfig import api_client
from joulie_common.yamlload import load_yaml_all
from joulie_localcluster.certs import Pki, make_pki
from joulie_localcluster.procs import ManagedProcess, ProcessFailedError, ProcessGroup, free_port
from joulie_localcluster.tools import Tools

# A virtual range only: no traffic is routed to it; the apiserver needs one to allocate Service IPs.
SERVICE_CIDR = "10.96.0.0/24"
EXTENDED_RESOURCE_TOLERATION = "ExtendedResourceToleration"


@dataclass
class ControlPlane:
    workdir: Path
    url: str
    kubeconfig: Path
    pki: Pki
    group: ProcessGroup = field(default_factory=ProcessGroup)
    # Seconds from start until the apiserver was ready with the CRDs served.
    ready_s: float = 0.0

    def api_client(self) -> k8s.ApiClient:
        return api_client(self.kubeconfig)

    def get(self, path: str, timeout_s: float = 5.0) -> tuple[int, str]:
        """GET a path on the apiserver as the admin user."""
        ctx = ssl.create_default_context(cafile=str(self.pki.ca_crt))
        ctx.load_cert_chain(str(self.pki.admin_crt), str(self.pki.admin_key))
        try:
            with urllib.request.urlopen(self.url + path, context=ctx, timeout=timeout_s) as resp:
                return int(resp.status), resp.read().decode()
        except urllib.error.HTTPError as err:
            return int(err.code), err.read().decode(errors="replace")

    def stop(self) -> None:
        self.group.stop_all()


def write_kubeconfig(path: Path, url: str, pki: Pki) -> None:
    cfg: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "joulie-test", "cluster": {"server": url, "certificate-authority": str(pki.ca_crt)}}],
        "users": [
            {"name": "admin", "user": {"client-certificate": str(pki.admin_crt), "client-key": str(pki.admin_key)}}
        ],
        "contexts": [{"name": "joulie-test", "context": {"cluster": "joulie-test", "user": "admin"}}],
        "current-context": "joulie-test",
    }
    path.write_text(yaml.safe_dump(cfg))


def start_etcd(tools: Tools, workdir: Path, group: ProcessGroup, timeout_s: float = 30) -> str:
    client_port, peer_port = free_port(), free_port()
    client_url, peer_url = f"http://127.0.0.1:{client_port}", f"http://127.0.0.1:{peer_port}"
    proc = group.add(
        ManagedProcess(
            "etcd",
            [
                str(tools.path("etcd")),
                "--name=joulie-test",
                f"--data-dir={workdir / 'etcd-data'}",
                f"--listen-client-urls={client_url}",
                f"--advertise-client-urls={client_url}",
                f"--listen-peer-urls={peer_url}",
                f"--initial-advertise-peer-urls={peer_url}",
                f"--initial-cluster=joulie-test={peer_url}",
                "--listen-metrics-urls=",
                # Test data is throwaway: skipping fsync makes etcd fast on shared disks.
                "--unsafe-no-fsync",
                "--log-level=warn",
            ],
            workdir / "logs" / "etcd.log",
        ).start()
    )

    def healthy() -> bool:
        with urllib.request.urlopen(client_url + "/health", timeout=2) as resp:
            return bool(json.loads(resp.read()).get("health") == "true")

    proc.wait_until(healthy, timeout_s, "healthy")
    return client_url


def start_control_plane(
    tools: Tools,
    workdir: Path,
    *,
    crd_dir: Path | None = None,
    timeout_s: float = 30,
    controller_manager: bool = False,
) -> ControlPlane:
    """Starts etcd and kube-apiserver; applies the CRDs in `crd_dir` and waits until they are served."""
    workdir.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    group = ProcessGroup()
    try:
        pki = make_pki(workdir / "pki")
        etcd_url = start_etcd(tools, workdir, group, timeout_s)
        port = free_port()
        url = f"https://127.0.0.1:{port}"
        kubeconfig = workdir / "kubeconfig"
        write_kubeconfig(kubeconfig, url, pki)
        cp = ControlPlane(workdir, url, kubeconfig, pki, group)
        apiserver = group.add(
            ManagedProcess(
                "kube-apiserver",
                [
                    str(tools.path("kube-apiserver")),
                    f"--etcd-servers={etcd_url}",
                    "--bind-address=127.0.0.1",
                    "--advertise-address=127.0.0.1",
                    f"--secure-port={port}",
                    f"--cert-dir={workdir / 'pki'}",
                    f"--tls-cert-file={pki.server_crt}",
                    f"--tls-private-key-file={pki.server_key}",
                    f"--client-ca-file={pki.ca_crt}",
                    f"--service-account-key-file={pki.sa_pub}",
                    f"--service-account-signing-key-file={pki.sa_key}",
                    "--service-account-issuer=https://kubernetes.default.svc",
                    f"--service-cluster-ip-range={SERVICE_CIDR}",
                    "--authorization-mode=Node,RBAC",
                    # As every real cluster runs it (kubelets pass the same flag): the agent DaemonSet
                    # and the FUSE-mode simulator are privileged, and a dry run must accept them.
                    "--allow-privileged=true",
                    # Without kube-controller-manager no namespace gets its `default` ServiceAccount (the
                    # ServiceAccount plugin would refuse every pod) and nothing lifts the not-ready taint
                    # TaintNodesByCondition puts on new Nodes (no pod would ever schedule).
                    *([] if controller_manager else ["--disable-admission-plugins=ServiceAccount,TaintNodesByCondition"]),
                    # As GPU clusters run it (GKE does; NVIDIA's docs pair it with the nvidia.com/gpu
                    # taint): a Pod asking nvidia.com/gpu or amd.com/gpu gets a toleration for the taint
                    # of that name, so trace jobs asking GPUs reach the tainted GPU Nodes.
                    f"--enable-admission-plugins={EXTENDED_RESOURCE_TOLERATION}",
                    # The default reconciler publishes the advertise address as the kubernetes Service
                    # endpoint and complains every 10 s that 127.0.0.1 is loopback.
                    "--endpoint-reconciler-type=none",
                    # A real node (the simulated cluster's kubelet runtime) is dialled at its address for
                    # logs and exec: its Hostname resolves nowhere here. Fake Nodes are never dialled.
                    "--kubelet-preferred-address-types=InternalIP,Hostname,ExternalIP",
                    "--enable-priority-and-fairness=false",
                    "--profiling=false",
                    "--v=1",
                ],
                workdir / "logs" / "kube-apiserver.log",
            ).start()
        )
        apiserver.wait_until(lambda: cp.get("/readyz")[0] == 200, timeout_s, "ready (/readyz)")
        if controller_manager:
            start_controller_manager(tools, cp, timeout_s)
        if crd_dir is not None:
            apply_crds(cp, crd_dir, timeout_s=max(5.0, timeout_s - (time.monotonic() - started)))
        cp.ready_s = time.monotonic() - started
        return cp
    except BaseException:
        group.stop_all()
        raise


def start_controller_manager(tools: Tools, cp: ControlPlane, timeout_s: float) -> ManagedProcess:
    port = free_port()
    proc = cp.group.add(
        ManagedProcess(
            "kube-controller-manager",
            [
                str(tools.path("kube-controller-manager")),
                f"--kubeconfig={cp.kubeconfig}",
                f"--authentication-kubeconfig={cp.kubeconfig}",
                f"--authorization-kubeconfig={cp.kubeconfig}",
                "--bind-address=127.0.0.1",
                f"--secure-port={port}",
                f"--service-account-private-key-file={cp.pki.sa_key}",
                f"--root-ca-file={cp.pki.ca_crt}",
                f"--cluster-signing-cert-file={cp.pki.ca_crt}",
                f"--cluster-signing-key-file={cp.pki.ca_key}",
                "--use-service-account-credentials=false",
                "--leader-elect=false",
                "--controllers=*,-nodeipam,-nodelifecycle,-cloud-node-lifecycle,-route,-service",
                "--v=1",
            ],
            cp.workdir / "logs" / "kube-controller-manager.log",
        ).start()
    )

    def default_sa() -> bool:
        k8s.CoreV1Api(cp.api_client()).read_namespaced_service_account("default", "default")
        return True

    proc.wait_until(default_sa, timeout_s, "serving (default ServiceAccount created)")
    return proc


def load_crds(crd_dir: Path) -> list[dict[str, Any]]:
    crds = []
    for path in sorted(crd_dir.glob("*.yaml")):
        for doc in load_yaml_all(path):
            if isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinition":
                crds.append(doc)
    if not crds:
        raise FileNotFoundError(f"no CustomResourceDefinition in {crd_dir}/*.yaml")
    return crds


def apply_crds(cp: ControlPlane, crd_dir: Path, timeout_s: float = 20) -> list[str]:
    """Server-side applies every CRD in `crd_dir` and waits until each is Established."""
    api = k8s.ApiextensionsV1Api(cp.api_client())
    names = []
    for crd in load_crds(crd_dir):
        name = crd["metadata"]["name"]
        api.patch_custom_resource_definition(
            name, crd, field_manager="joulie-testinfra", force=True, _content_type="application/apply-patch+yaml"
        )
        names.append(name)
    deadline = time.monotonic() + timeout_s
    pending = set(names)
    while pending and time.monotonic() < deadline:
        for name in list(pending):
            obj = api.read_custom_resource_definition(name)
            conds = obj.status.conditions if obj.status and obj.status.conditions else []
            if any(c.type == "Established" and c.status == "True" for c in conds):
                pending.discard(name)
        if pending:
            time.sleep(0.2)
    if pending:
        raise ProcessFailedError(f"CRDs not Established after {timeout_s:.0f} s: {sorted(pending)}")
    return names
