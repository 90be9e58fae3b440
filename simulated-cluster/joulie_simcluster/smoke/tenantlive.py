"""What the tenant cases (``tenantcases.py``, run by ``tenants.py``) stand on: a case's verdict (pure: a case
passes only when what it holds did not move and its control did), the Pods they create, and the live
cluster as they read and change it (``Live``)."""

from __future__ import annotations

import contextlib
import time
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from joulie_api import names
from joulie_simcluster.context import Context
from joulie_simcluster.nodes import KWOK_TAINT_KEY
from joulie_simcluster.runtimes import kube

TEAM, TENANT = "team", "tenant"
PERF = {names.ANNOTATION_WORKLOAD_CLASS: "performance"}
MEMORY_BOUND = {"joulie.io/workload-kind": "cpu-memory"}

Result = tuple[str, bool, str]


# --- pure ------------------------------------------------------------------------------------


def moved(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    """Each node whose value changed, ``node: before -> after``."""
    return [f"{n}: {before.get(n)} -> {after.get(n)}" for n in sorted(set(before) | set(after))
            if before.get(n) != after.get(n)]


def case(name: str, held: list[str], control_ok: bool, held_text: str, control_text: str) -> Result:
    """A case passes when nothing ``held`` moved and its control did move."""
    ok = not held and control_ok
    seen = (f"held: {'; '.join(held)}" if held else held_text) + f"; control: {control_text}"
    return name, ok, seen


def pod(name: str, *, node: str | None = None, cpu: str = "2", labels: Mapping[str, str] | None = None,
        annotations: Mapping[str, str] | None = None, selector: Mapping[str, str] | None = None,
        scheduler: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [{"name": "c", "image": "fake", "resources": {"requests": {"cpu": cpu}}}],
        "tolerations": [{"key": KWOK_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}],
    }
    if node:
        spec["nodeName"] = node
    if selector:
        spec["nodeSelector"] = dict(selector)
    if scheduler:
        spec["schedulerName"] = scheduler
    return {"apiVersion": "v1", "kind": "Pod", "spec": spec,
            "metadata": {"name": name, "labels": dict(labels or {}), "annotations": dict(annotations or {})}}


# --- the live cluster ------------------------------------------------------------------------


class Live:
    def __init__(self, ctx: Context, progress: Callable[[str], None]):
        self.ctx, self.progress = ctx, progress
        self.api = kube.core_api(ctx.state.kubeconfig)
        self.interval_s = ctx.settings.timing.controller_interval_s

    @property
    def env(self) -> dict[str, str]:
        return self.ctx.state.read_deploy_env() or {}

    def twins(self) -> dict[str, dict[str, Any]]:
        return {o["spec"]["nodeName"]: o for o in kube.kube_list(self.ctx.state.kubeconfig, kube.NODETWINS)}

    def profiles(self, nodes: Sequence[str]) -> dict[str, str]:
        tw = self.twins()
        return {n: str((tw.get(n, {}).get("spec") or {}).get("profile", "")) for n in nodes}

    def caps(self, nodes: Sequence[str]) -> dict[str, Any]:
        tw = self.twins()
        return {n: ((tw.get(n, {}).get("spec") or {}).get("cpu") or {}).get("packagePowerCapPctOfMax") for n in nodes}

    def power_state(self, node: str) -> str:
        return str(((self.twins().get(node, {}).get("status") or {}).get("power") or {}).get("state", ""))

    def create(self, ns: str, body: dict[str, Any]) -> None:
        self.api.create_namespaced_pod(ns, body)  # type: ignore[arg-type]

    def delete(self, ns: str, name: str) -> None:
        with contextlib.suppress(ApiException):
            self.api.delete_namespaced_pod(name, ns, grace_period_seconds=0)

    def namespace(self, name: str) -> None:
        try:
            self.api.create_namespace(k8s.V1Namespace(metadata=k8s.V1ObjectMeta(name=name)))
        except ApiException as e:
            if e.status != 409:
                raise

    def wait(self, what: str, cond: Callable[[], bool], timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                if cond():
                    return True
            except (OSError, ApiException, KeyError) as e:
                self.progress(f"(reading the cluster: {e!r}; again)")
            if time.monotonic() > deadline:
                self.progress(f"no {what} within {timeout_s:.0f}s")
                return False
            time.sleep(1.0)

    def running(self, ns: str, name: str) -> bool:
        st = self.api.read_namespaced_pod(name, ns).status
        return st is not None and st.phase == "Running"

    def unschedulable(self, ns: str, name: str) -> bool:
        st = self.api.read_namespaced_pod(name, ns).status
        return st is not None and any(c.type == "PodScheduled" and c.status == "False" and c.reason == "Unschedulable"
                                      for c in st.conditions or [])

    def ticks(self, n: int = 4) -> None:
        time.sleep(n * self.interval_s + 1)

    def controller_metric(self, name: str, labels: Mapping[str, str]) -> float | None:
        with urllib.request.urlopen(f"http://{self.env['CONTROLLER_METRICS']}/metrics", timeout=5) as resp:
            text = resp.read().decode()
        for line in text.splitlines():
            if line.startswith(f"{name}{{") and all(f'{k}="{v}"' in line for k, v in labels.items()):
                return float(line.rsplit(" ", 1)[1])
        return None
