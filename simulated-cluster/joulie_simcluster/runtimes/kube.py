"""The Kubernetes calls every runtime shares (the process runtime and the k3s one): GET through the
admin kubeconfig, readiness, listing Nodes, and applying the spec's fake Nodes until KWOK reports
them Ready. The deploy and the smoke read the cluster through these too.
"""

from __future__ import annotations

import json
import ssl
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client as k8s
from kubernetes import config as k8s_config

from joulie_api import names
from joulie_api.backoff import Backoff
from joulie_localcluster.procs import tail
from joulie_simcluster.context import RenderedSpec
from joulie_simcluster.errors import RuntimeFailure
from joulie_simcluster.state import StateDir

FIELD_MANAGER = "simcluster"
NODEHARDWARES = f"/apis/{names.GROUP}/{names.VERSION}/nodehardwares"
NODETWINS = f"/apis/{names.GROUP}/{names.VERSION}/nodetwins"


def _kubeconfig_parts(kubeconfig: Path) -> tuple[str, str, str, str]:
    cfg = yaml.safe_load(kubeconfig.read_text())
    cluster = cfg["clusters"][0]["cluster"]
    user = cfg["users"][0]["user"]
    return cluster["server"], cluster["certificate-authority"], user["client-certificate"], user["client-key"]


def api_get(kubeconfig: Path, path: str, timeout_s: float = 3.0) -> tuple[int, str]:
    url, ca, crt, key = _kubeconfig_parts(kubeconfig)
    ctx = ssl.create_default_context(cafile=ca)
    ctx.load_cert_chain(crt, key)
    try:
        with urllib.request.urlopen(url + path, context=ctx, timeout=timeout_s) as resp:
            return int(resp.status), resp.read().decode()
    except urllib.error.HTTPError as err:
        return int(err.code), err.read().decode(errors="replace")


def api_ready(kubeconfig: Path) -> bool:
    try:
        return api_get(kubeconfig, "/readyz")[0] == 200
    except (OSError, KeyError, IndexError, TypeError, yaml.YAMLError, ssl.SSLError):
        return False


def core_api(kubeconfig: Path) -> k8s.CoreV1Api:
    api_client: k8s.ApiClient = k8s_config.new_client_from_config(config_file=str(kubeconfig))  # type: ignore[no-untyped-call]
    return k8s.CoreV1Api(api_client)


def list_nodes(api: k8s.CoreV1Api, label_selector: str = "") -> list[dict[str, Any]]:
    """The Nodes as plain JSON-shaped dicts (camelCase keys, as the API serves them)."""
    items = api.list_node(label_selector=label_selector).items
    return [dict(api.api_client.sanitize_for_serialization(n)) for n in items]


def node_ready(node: dict[str, Any]) -> bool:
    conds = (node.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conds)


def node_name(node: dict[str, Any]) -> str:
    return str(node["metadata"]["name"])


def kube_list(kubeconfig: Path, path: str, attempts: int = 6) -> list[dict[str, Any]]:
    """The items of a list. 429 ("storage is (re)initializing" right after a CRD appears) and 5xx
    are retried on the Backoff sequence for a few seconds; anything else is an error naming the path."""
    code, body = 0, ""
    for delay in [*list(Backoff().delays())[: attempts - 1], 0.0]:
        code, body = api_get(kubeconfig, path, timeout_s=10)
        if code == 200:
            items: list[dict[str, Any]] = json.loads(body).get("items") or []
            return items
        if code != 429 and code < 500:
            break
        time.sleep(delay)
    raise RuntimeFailure(f"GET {path}: HTTP {code}: {body[:300]}")


def _node_failure(state: StateDir, what: str) -> RuntimeFailure:
    return RuntimeFailure(f"{what}; last log lines of {state.log('kwok')}:\n{tail(state.log('kwok'), 20)}")


def apply_nodes(
    state: StateDir, rendered: RenderedSpec, progress: Callable[[str], None], ready_timeout_s: float = 120,
    real: Collection[str] = (),
) -> tuple[int, list[str], float]:
    """Applies the spec's Nodes, deletes simulated Nodes it no longer names, waits for Ready.
    `real`: spec Nodes a real kubelet registers (the kubelet runtime's agent nodes), neither applied
    nor deleted nor waited for here. Returns (applied, deleted names, seconds until all Ready)."""
    t0 = time.monotonic()
    api = core_api(state.kubeconfig)
    spec = rendered.spec
    nodes = [n for n in rendered.nodes if n["metadata"]["name"] not in real]
    wanted = {n["metadata"]["name"] for n in nodes}
    for node in nodes:
        body = {k: v for k, v in node.items() if k != "status"}
        api.patch_node(
            node["metadata"]["name"], body, field_manager=FIELD_MANAGER, force=True,
            _content_type="application/apply-patch+yaml",
        )
        # KWOK keeps conditions and heartbeats; capacity and nodeInfo come from the spec.
        status = {
            "apiVersion": "v1", "kind": "Node", "metadata": {"name": node["metadata"]["name"]},
            "status": {k: v for k, v in node.get("status", {}).items() if k != "conditions"},
        }
        if status["status"]:
            api.patch_node_status(
                node["metadata"]["name"], status, field_manager=FIELD_MANAGER, force=True,
                _content_type="application/apply-patch+yaml",
            )
    progress(f"applied {len(nodes)} Nodes of spec {spec.name}")
    # Every simulated Node (any spec) the spec no longer names: another spec replaces the last one.
    deleted = []
    for listed_node in list_nodes(api, names.LABEL_SIM_CLUSTER):
        if node_name(listed_node) not in wanted and node_name(listed_node) not in real:
            api.delete_node(node_name(listed_node))
            deleted.append(node_name(listed_node))
    if deleted:
        progress(f"deleted {len(deleted)} Nodes the spec no longer names: {', '.join(sorted(deleted))}")
    deadline = time.monotonic() + ready_timeout_s
    last = -1
    while True:
        listed = list_nodes(api, f"{names.LABEL_SIM_CLUSTER}={spec.name}")
        ready = {node_name(n) for n in listed if node_ready(n)} & wanted
        if len(ready) != last:
            progress(f"{len(ready)}/{len(wanted)} Nodes Ready")
            last = len(ready)
        if ready == wanted:
            break
        if time.monotonic() > deadline:
            raise _node_failure(
                state, f"Nodes not Ready after {ready_timeout_s:.0f} s: {sorted(wanted - ready)}"
            )
        time.sleep(0.2)
    return len(nodes), deleted, time.monotonic() - t0
