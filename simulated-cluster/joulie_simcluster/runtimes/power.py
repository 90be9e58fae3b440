"""Emulated nodes' power states made visible to the cluster: the BMC Secret, NotReady Nodes, agents
stopped while their node is off (process runtime).

The simulator runs an emulated BMC per node (``emulate --bmc``, addresses in
``<state>/hwemu/bmcs.json``); the harness chose the credentials (``<state>/bmc/credentials.yaml``,
mode 0600, never on a command line) and gives them to the controller manager as a real operator
would: one Secret, ``joulie-system/simcluster-bmcs``, labelled ``joulie.io/bmc-credentials=true``
(docs/redfish.md). ``bmcs.json`` changes when the simulator restarts (new free ports); the
supervisor then writes the Secret again.

A node switched off through its BMC must look off, as a real one would: its kubelet stops, so its
Node goes NotReady, and its DaemonSet Pods (here: its agent process) stop. KWOK v0.8's
``node-initialize`` stage sets Ready=True on every Node it manages whose Ready is not True, at
once, so a NotReady patch alone would be undone: the harness takes the Node out of KWOK's hands
(removes the ``kwok.x-k8s.io/node`` annotation KWOK selects on) and patches Ready=False; when the
emulator says the node is on again the annotation comes back and KWOK marks it Ready. The
decisions (``transitions``, ``secret_manifest``) are pure; the rest are thin shells.
"""

from __future__ import annotations

import json
import secrets
import time
import urllib.error
import urllib.request
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from joulie_simcluster.errors import RuntimeFailure
from joulie_simcluster.nodes import KWOK_NODE_ANNOTATION, KWOK_NODE_ANNOTATION_VALUE
from joulie_simcluster.runtimes.kube import core_api

SECRET_NAMESPACE = "joulie-system"
"""The controller manager's namespace (POD_NAMESPACE's default): where it reads BMC Secrets."""
SECRET_NAME = "simcluster-bmcs"
SECRET_LABEL = "joulie.io/bmc-credentials"
BMC_USERNAME = "joulie"
POWERED_OFF_REASON = "PoweredOff"


def credentials_path(state_root: Path) -> Path:
    return state_root / "bmc" / "credentials.yaml"


def bmcs_path(state_root: Path) -> Path:
    return state_root / "hwemu" / "bmcs.json"


def powered_off_path(state_root: Path) -> Path:
    """Nodes the harness has taken down (NotReady, agent stopped): the supervisor's record."""
    return state_root / "powered-off.json"


def ensure_credentials(state_root: Path) -> dict[str, str]:
    """The emulated BMCs' login, made once per state dir (a fresh random password)."""
    path = credentials_path(state_root)
    if path.is_file():
        data = yaml.safe_load(path.read_text())
        if isinstance(data, dict) and data.get("username") and data.get("password"):
            return {"username": str(data["username"]), "password": str(data["password"])}
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    creds = {"username": BMC_USERNAME, "password": secrets.token_urlsafe(18)}
    path.touch(mode=0o600)
    path.write_text(yaml.safe_dump(creds))
    return creds


def secret_manifest(bmcs: Mapping[str, Any], creds: Mapping[str, str]) -> dict[str, Any]:
    """One pool Secret for every emulated BMC of ``bmcs.json`` (``{"bmcs": [{node, address, system}]}``)."""
    data: dict[str, str] = {"username": creds["username"], "password": creds["password"]}
    for b in bmcs.get("bmcs") or []:
        data[f"{b['node']}.address"] = str(b["address"])
        if b.get("system"):
            data[f"{b['node']}.system"] = str(b["system"])
    return {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
            "metadata": {"name": SECRET_NAME, "namespace": SECRET_NAMESPACE, "labels": {SECRET_LABEL: "true"}},
            "stringData": data}


def apply_secret(kubeconfig: Path, manifest: Mapping[str, Any]) -> None:
    """Create or replace the BMC Secret (and its namespace)."""
    api = core_api(kubeconfig)
    try:
        try:
            api.create_namespace(k8s.V1Namespace(metadata=k8s.V1ObjectMeta(name=SECRET_NAMESPACE)))
        except ApiException as e:
            if e.status != 409:
                raise
        try:
            api.replace_namespaced_secret(SECRET_NAME, SECRET_NAMESPACE, dict(manifest))  # type: ignore[arg-type]
        except ApiException as e:
            if e.status != 404:
                raise
            api.create_namespaced_secret(SECRET_NAMESPACE, dict(manifest))  # type: ignore[arg-type]
    except ApiException as e:
        raise RuntimeFailure(f"writing Secret {SECRET_NAMESPACE}/{SECRET_NAME} failed: HTTP {e.status} {e.reason}") from None


def sync_secret(state_root: Path, kubeconfig: Path, last: str | None = None) -> str | None:
    """Writes the Secret when ``bmcs.json`` differs from ``last`` (its text); returns the text
    now in the Secret (None: no bmcs.json yet)."""
    try:
        text = bmcs_path(state_root).read_text()
        doc = json.loads(text)
    except (FileNotFoundError, json.JSONDecodeError):
        return last
    if text != last:
        apply_secret(kubeconfig, secret_manifest(doc, ensure_credentials(state_root)))
    return text


@dataclass(frozen=True)
class Transitions:
    down: tuple[str, ...]
    """Nodes to take down now: the emulator says not on (shutting down, off, booting)."""
    up: tuple[str, ...]
    """Nodes to bring back: the emulator says on again."""


def transitions(power: Mapping[str, str], down_now: Iterable[str]) -> Transitions:
    """What changes, from the emulator's power state per node and the nodes already taken down.
    A node is down from its shutdown until its boot has ended (its kubelet is not running); a node
    the emulator no longer lists (simulator restarted without it) comes back up."""
    down_set = set(down_now)
    down = tuple(sorted(n for n, s in power.items() if s != "on" and n not in down_set))
    up = tuple(sorted(n for n in down_set if power.get(n, "on") == "on"))
    return Transitions(down, up)


def read_power_states(simulator_http: str, timeout_s: float = 2.0) -> dict[str, str]:
    """Node -> the emulator's power state (``/debug/power``; a simulator without it: ``/debug/emulate``
    ``nodes[].power.state``, every node's whole truth)."""
    try:
        with urllib.request.urlopen(f"http://{simulator_http}/debug/power", timeout=timeout_s) as resp:
            states = json.loads(resp.read()).get("nodes", {})
        return {str(n): str(s) for n, s in states.items()}
    except urllib.error.HTTPError as err:
        if err.code != 404:
            raise
    with urllib.request.urlopen(f"http://{simulator_http}/debug/emulate", timeout=timeout_s) as resp:
        doc = json.loads(resp.read())
    return {n["name"]: str((n.get("power") or {}).get("state", "on")) for n in doc.get("nodes", []) if "name" in n}


def set_node_powered(kubeconfig: Path, node: str, powered: bool) -> None:
    """Off: out of KWOK's hands, Ready=False (reason PoweredOff). On: back in KWOK's hands, which
    marks it Ready (node-initialize)."""
    api = core_api(kubeconfig)
    if powered:
        api.patch_node(node, {"metadata": {"annotations": {KWOK_NODE_ANNOTATION: KWOK_NODE_ANNOTATION_VALUE}}})
        return
    api.patch_node(node, {"metadata": {"annotations": {KWOK_NODE_ANNOTATION: None}}})
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    node_obj = api.read_node_status(node)
    conditions = [c for c in ((node_obj.status.conditions if node_obj.status else None) or []) if c.type != "Ready"]
    ready = {"type": "Ready", "status": "False", "reason": POWERED_OFF_REASON,
             "message": "powered off through its BMC (emulated); kubelet stopped",
             "lastHeartbeatTime": now, "lastTransitionTime": now}
    body = {"status": {"conditions": [api.api_client.sanitize_for_serialization(c) for c in conditions] + [ready]}}
    api.patch_node_status(node, body)


def read_powered_off(state_root: Path) -> dict[str, float]:
    """Node -> when (epoch s) the harness took it down."""
    try:
        data = json.loads(powered_off_path(state_root).read_text())
        return {str(k): float(v) for k, v in data.items()}
    except (FileNotFoundError, json.JSONDecodeError, AttributeError, ValueError):
        return {}


def write_powered_off(state_root: Path, nodes: Mapping[str, float]) -> None:
    path = powered_off_path(state_root)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(dict(nodes), indent=1, sort_keys=True))
    tmp.replace(path)
