"""The joulie-simulator chart with the real helm (lint, template): its objects and privileges per
hwemu mode, and the refusal of a chart without a spec. The cases, helpers and the helm check are
``chart_cases``'s."""

from __future__ import annotations

import pytest
import yaml

from joulie_simcluster import chart
from joulie_simcluster.chart_cases import (  # helm: autouse here too
    SIM_VALUES,
    SIMULATOR,
    SMOKE_SPEC,
    VERSION_FILES,
    container,
    helm,
    ids,
    one,
    render,
    rules,
    version,
)
from joulie_simcluster.spec import load_spec

pytest_plugins = ["joulie_testinfra.fixtures"]

__all__ = ["helm"]


def test_lint_simulator() -> None:
    assert "0 chart(s) failed" in chart.lint_chart(SIMULATOR, [SIM_VALUES])
    assert "0 chart(s) failed" in chart.lint_chart(SIMULATOR, [SIM_VALUES], {"mode": "files"})



def test_simulator_in_fuse_mode_is_privileged_with_dev_fuse_and_a_shared_mount() -> None:
    docs = render("simulator-fuse")
    assert sorted(ids(docs)) == sorted([
        ("ServiceAccount", "joulie-simulator"), ("ClusterRole", "joulie-simulator"),
        ("ClusterRoleBinding", "joulie-simulator"), ("ConfigMap", "joulie-simulator-spec"),
        ("Deployment", "joulie-telemetry-sim"), ("Service", "joulie-telemetry-sim")])
    d = one(docs, "Deployment", "joulie-telemetry-sim")
    c = container(d)
    assert c["image"] == f"joulie.local/joulie-simulator:{version(VERSION_FILES['joulie-simulator', None])}"
    assert c["args"][:5] == ["emulate", "--spec=/etc/joulie-sim/spec.yaml", "--root=/var/lib/joulie-hwemu",
                             "--mode=fuse", "--tick=1"]
    assert "--http=0.0.0.0:18080" in c["args"]
    assert "--otlp-endpoint=http://prometheus-operated.monitoring:9090/api/v1/otlp/v1/metrics" in c["args"]
    assert c["securityContext"]["privileged"] is True
    mounts = {m["name"]: m for m in c["volumeMounts"]}
    assert mounts["hwemu"] == {"name": "hwemu", "mountPath": "/var/lib/joulie-hwemu", "mountPropagation": "Bidirectional"}
    assert mounts["dev-fuse"]["mountPath"] == "/dev/fuse"
    vols = {v["name"]: v for v in d["spec"]["template"]["spec"]["volumes"]}
    assert vols["dev-fuse"]["hostPath"] == {"path": "/dev/fuse", "type": "CharDevice"}
    assert d["spec"]["strategy"] == {"type": "Recreate"} and d["spec"]["replicas"] == 1
    svc = one(docs, "Service", "joulie-telemetry-sim")
    assert {"name": "http", "port": 80, "targetPort": "http"} in svc["spec"]["ports"]
    assert {"name": "http", "containerPort": 18080} in c["ports"]
    spec = yaml.safe_load(one(docs, "ConfigMap", "joulie-simulator-spec")["data"]["spec.yaml"])
    assert spec == yaml.safe_load(SIM_VALUES.read_text())["spec"]
    assert [p["name"] for p in spec["pools"]] == [p.name for p in load_spec(SMOKE_SPEC).pools]
    assert rules(one(docs, "ClusterRole", "joulie-simulator")) == {
        ("", "nodes"): {"get", "list", "watch"}, ("", "pods"): {"get", "list", "watch", "create", "delete"}}


def test_simulator_in_files_mode_needs_no_privileges() -> None:
    d = one(render("simulator-files"), "Deployment", "joulie-telemetry-sim")
    c = container(d)
    assert "--mode=files" in c["args"]
    assert c["securityContext"]["privileged"] is False
    assert [m["name"] for m in c["volumeMounts"]] == ["spec", "hwemu"]
    assert "mountPropagation" not in c["volumeMounts"][1]


def test_simulator_without_a_spec_says_what_is_missing() -> None:
    with pytest.raises(chart.ChartError, match=r"spec: list the emulated Nodes"):
        chart.render_chart(SIMULATOR, [])
    with pytest.raises(chart.ChartError, match=r"mode=block: expected fuse or files"):
        chart.render_chart(SIMULATOR, [SIM_VALUES], {"mode": "block"})
