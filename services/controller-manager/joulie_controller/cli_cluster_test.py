"""`joulie-controller-manager run --once` against the real API server."""

from __future__ import annotations

import uuid

import pytest
from kubernetes import client as k8s

from joulie_api.names import GROUP, PLURAL_NODE_TWIN, VERSION
from joulie_controller.cli import main
from joulie_controller.kube_cluster_test import make_node
from joulie_localcluster.controlplane import ControlPlane

pytest_plugins = ["joulie_testinfra.fixtures"]


def test_run_once_writes_the_twin_of_a_selected_node(control_plane: ControlPlane, kube_api: k8s.ApiClient,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    tag = uuid.uuid4().hex[:8]
    make_node(k8s.CoreV1Api(kube_api), f"cli-{tag}", tag)
    monkeypatch.setenv("NODE_SELECTOR", f"test.joulie.io/suite={tag}")
    monkeypatch.setenv("NODE_POWER_PROMETHEUS_ADDRESS", "")
    assert main(["run", "--once", "--kubeconfig", str(control_plane.kubeconfig)]) == 0
    twin = k8s.CustomObjectsApi(kube_api).get_cluster_custom_object(GROUP, VERSION, PLURAL_NODE_TWIN, f"cli-{tag}")
    assert isinstance(twin, dict)
    assert twin["spec"]["profile"] == "performance"
    assert twin["status"]["powerMeasurement"]["source"] == "prometheus-no-data"
