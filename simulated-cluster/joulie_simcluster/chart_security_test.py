"""The chart's least privilege, as an operator's security review reads the render (docs/security.md):
which Secrets each Pod can read, how each Pod runs, which admission policies guard the writes.
The same objects against the real kube-apiserver: ``chart_server_test.py``."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from joulie_simcluster import chart
from joulie_simcluster.chart_cases import JOULIE, POOL_VALUES, container, helm, one

pytest_plugins = ["joulie_testinfra.fixtures"]

__all__ = ["helm"]

ALL_OPTIONS = JOULIE / "ci/all-options-values.yaml"
READ_ONLY_SECRET = "joulie-bmc-readonly"
TELEMETRY_AGENT_SECRET = "joulie-telemetry-agent"


def _pod(workload: Mapping[str, Any]) -> dict[str, Any]:
    return dict(workload["spec"]["template"]["spec"])


def secrets_of(pod: Mapping[str, Any]) -> set[str]:
    """Every Secret a Pod can read: volumes (plain and projected) and env of each container."""
    out: set[str] = set()
    for v in pod.get("volumes") or []:
        if "secret" in v:
            out.add(v["secret"]["secretName"])
        for source in (v.get("projected") or {}).get("sources") or []:
            if "secret" in source:
                out.add(source["secret"]["name"])
    for c in [*(pod.get("containers") or []), *(pod.get("initContainers") or [])]:
        for e in c.get("env") or []:
            ref = (e.get("valueFrom") or {}).get("secretKeyRef")
            if ref:
                out.add(ref["name"])
        out |= {f["secretRef"]["name"] for f in c.get("envFrom") or [] if "secretRef" in f}
    return out


def _agent_workloads(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        d for d in docs if d["kind"] in ("DaemonSet", "StatefulSet", "Deployment") and "agent" in d["metadata"]["name"]
    ]


@pytest.mark.parametrize("values", [[ALL_OPTIONS], [ALL_OPTIONS, POOL_VALUES]], ids=["daemonset", "pool"])
def test_agent_pods_mount_no_secret_that_powers_nodes(values: list[Path]) -> None:
    """With the power policy on (the controller's BMC Secrets in the namespace) and host power from the
    BMCs, an agent Pod can read the read-only account's Secret and its own push certificate's (the
    authenticated telemetry path: it powers nothing) and no other; without them, none."""
    docs = chart.render_chart(JOULIE, values)
    agents = _agent_workloads(docs)
    assert agents, "the render has an agent"
    one(docs, "Role", "joulie-controller-manager-bmc-secrets")  # the power-control Secrets exist here
    for w in agents:
        assert secrets_of(_pod(w)) == {READ_ONLY_SECRET, TELEMETRY_AGENT_SECRET}, w["metadata"]["name"]
    bare = chart.render_chart(JOULIE, values, {"agent.powerExport.readOnlyBmcSecret": "", "telemetryTls.enabled": "false"})
    for w in _agent_workloads(bare):
        assert secrets_of(_pod(w)) == set(), w["metadata"]["name"]
        assert "BMC_SECRET_DIR" not in {e["name"] for e in container(w)["env"]}


def test_the_former_bmc_secret_value_is_refused_with_the_replacement_named() -> None:
    with pytest.raises(chart.ChartError) as err:
        chart.render_chart(JOULIE, [ALL_OPTIONS], {"agent.powerExport.bmcSecret": "joulie-bmcs"})
    assert "agent.powerExport.bmcSecret was removed" in str(err.value)
    assert "agent.powerExport.readOnlyBmcSecret" in str(err.value)


# --- how each Pod runs ----------------------------------------------------------------------------

# Pod Security "restricted" (kubernetes.io/docs/concepts/security/pod-security-standards): the fields
# each Pod of the controller manager and the extender must carry. The real API server's verdict on the
# same Pods: chart_admission_test.py.
RESTRICTED_VOLUMES = {
    "configMap",
    "csi",
    "downwardAPI",
    "emptyDir",
    "ephemeral",
    "persistentVolumeClaim",
    "projected",
    "secret",
}


def restricted_violations(pod: Mapping[str, Any]) -> list[str]:
    out = []
    psc = pod.get("securityContext") or {}
    for key in ("hostNetwork", "hostPID", "hostIPC"):
        if pod.get(key):
            out.append(key)
    out += [f"volume {v['name']}" for v in pod.get("volumes") or [] if not set(v) - {"name"} <= RESTRICTED_VOLUMES]
    for c in [*pod["containers"], *(pod.get("initContainers") or [])]:
        sc = c.get("securityContext") or {}
        if not (sc.get("runAsNonRoot") or psc.get("runAsNonRoot")) or 0 in (sc.get("runAsUser"), psc.get("runAsUser")):
            out.append(f"{c['name']}: may run as root")
        if sc.get("privileged") or sc.get("allowPrivilegeEscalation") is not False:
            out.append(f"{c['name']}: privilege escalation")
        caps = sc.get("capabilities") or {}
        if caps.get("drop") != ["ALL"] or set(caps.get("add") or []) - {"NET_BIND_SERVICE"}:
            out.append(f"{c['name']}: capabilities")
        seccomp = (sc.get("seccompProfile") or psc.get("seccompProfile") or {}).get("type")
        if seccomp not in ("RuntimeDefault", "Localhost"):
            out.append(f"{c['name']}: seccomp {seccomp}")
        if not sc.get("readOnlyRootFilesystem"):
            out.append(f"{c['name']}: writable root filesystem")  # not in "restricted"; asked for here
        out += [f"{c['name']}: hostPort" for p in c.get("ports") or [] if p.get("hostPort")]
    return out


@pytest.mark.parametrize(
    "sets",
    [{}, {"schedulerExtender.tls.secretName": "x", "schedulerExtender.tls.clientCA": "true"}],
    ids=["plain", "tls"],
)
def test_controller_and_extender_pods_meet_pod_security_restricted(sets: dict[str, str]) -> None:
    docs = chart.render_chart(JOULIE, [ALL_OPTIONS], sets)
    for name in ("joulie-controller-manager", "joulie-scheduler-extender"):
        pod = _pod(one(docs, "Deployment", name))
        assert restricted_violations(pod) == [], name
        assert pod["securityContext"]["runAsUser"] != 0
    # On the host's network they cannot be "restricted" (not even "baseline"): the option says so.
    hostnet = chart.render_chart(JOULIE, [ALL_OPTIONS], {"schedulerExtender.hostNetwork": "true"})
    assert restricted_violations(_pod(one(hostnet, "Deployment", "joulie-scheduler-extender"))) == ["hostNetwork"]


def test_the_agent_writes_only_the_powercap_and_cpufreq_trees_and_stays_off_the_host_network() -> None:
    docs = chart.render_chart(JOULIE, [ALL_OPTIONS])
    ds = one(docs, "DaemonSet", "joulie-agent")
    pod, c = _pod(ds), container(ds)
    assert pod["hostNetwork"] is False and pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    host_paths = {v["name"]: v["hostPath"]["path"] for v in pod["volumes"] if "hostPath" in v}
    writable = {
        host_paths[m["name"]]: m["mountPath"]
        for m in c["volumeMounts"]
        if m["name"] in host_paths and not m.get("readOnly")
    }
    # Where the agent writes (joulie_agent/host/hostread.py HostPaths: powercap_devices, cpufreq; the
    # class/powercap entries are links into devices/virtual/powercap).
    assert writable == {
        "/sys/devices/virtual/powercap": "/host-sys/devices/virtual/powercap",
        "/sys/devices/system/cpu/cpufreq": "/host-sys/devices/system/cpu/cpufreq",
    }
    whole = next(m for m in c["volumeMounts"] if m["mountPath"] == "/host-sys")
    assert (
        whole["readOnly"] is True and whole["recursiveReadOnly"] == "IfPossible" and host_paths[whole["name"]] == "/sys"
    )
    assert c["securityContext"]["privileged"] is True  # the GPU tools' default

    cpu_only = chart.render_chart(
        JOULIE, [ALL_OPTIONS], {"agent.daemonset.privileged": "false", "agent.daemonset.hostNetwork": "true"}
    )
    ds = one(cpu_only, "DaemonSet", "joulie-agent")
    assert container(ds)["securityContext"] == {
        "privileged": False,
        "runAsUser": 0,
        "runAsGroup": 0,
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
    }
    assert _pod(ds)["hostNetwork"] is True and _pod(ds)["dnsPolicy"] == "ClusterFirstWithHostNet"


def _env(workload: Mapping[str, Any]) -> dict[str, str]:
    return {e["name"]: e.get("value", "") for e in container(workload)["env"]}


def test_the_agent_reads_the_kubelets_pod_resources_directory_read_only_and_nothing_when_off() -> None:
    ds = one(chart.render_chart(JOULIE, [ALL_OPTIONS]), "DaemonSet", "joulie-agent")
    host_paths = {v["name"]: v["hostPath"] for v in _pod(ds)["volumes"] if "hostPath" in v}
    mount = next(m for m in container(ds)["volumeMounts"] if m["mountPath"] == "/var/lib/kubelet/pod-resources")
    # Only that directory (not /var/lib/kubelet: the Pods' volumes and the kubelet's credentials live there).
    assert mount["readOnly"] is True
    assert host_paths[mount["name"]] == {"path": "/var/lib/kubelet/pod-resources", "type": "Directory"}
    assert "POD_RESOURCES_SOCKET" not in _env(ds)  # the agent's default is the mounted socket

    off = one(chart.render_chart(JOULIE, [ALL_OPTIONS], {"agent.daemonset.podResources.enabled": "false"}),
              "DaemonSet", "joulie-agent")
    assert not any("pod-resources" in str(v) for v in _pod(off)["volumes"])
    assert _env(off)["POD_RESOURCES_SOCKET"] == "none"


def test_the_extender_binds_where_asked_serves_tls_and_keeps_debug_endpoints_off() -> None:
    docs = chart.render_chart(JOULIE, [ALL_OPTIONS])
    x = one(docs, "Deployment", "joulie-scheduler-extender")
    env = _env(x)
    assert env["EXTENDER_ADDR"] == "0.0.0.0:9876" and "EXTENDER_DEBUG_ENDPOINTS" not in env
    assert (env["EXTENDER_MAX_CONCURRENT"], env["EXTENDER_MAX_BODY_BYTES"]) == ("8", "16777216")
    assert not any(k.startswith("EXTENDER_TLS") for k in env)
    assert container(x)["readinessProbe"]["httpGet"] == {"path": "/healthz", "port": "http", "scheme": "HTTP"}

    loop = one(
        chart.render_chart(
            JOULIE,
            [ALL_OPTIONS],
            {"schedulerExtender.hostNetwork": "true", "schedulerExtender.bindAddress": "127.0.0.1"},
        ),
        "Deployment",
        "joulie-scheduler-extender",
    )
    assert _env(loop)["EXTENDER_ADDR"] == "127.0.0.1:9876"
    assert container(loop)["livenessProbe"]["httpGet"]["host"] == "127.0.0.1"

    tls = one(
        chart.render_chart(JOULIE, [ALL_OPTIONS], {"schedulerExtender.tls.secretName": "extender-tls"}),
        "Deployment",
        "joulie-scheduler-extender",
    )
    env = _env(tls)
    assert (env["EXTENDER_TLS_CERT_FILE"], env["EXTENDER_TLS_KEY_FILE"]) == (
        "/etc/joulie/extender-tls/tls.crt",
        "/etc/joulie/extender-tls/tls.key",
    )
    assert "EXTENDER_TLS_CLIENT_CA_FILE" not in env
    assert {"name": "tls", "secret": {"secretName": "extender-tls"}} in _pod(tls)["volumes"]
    assert container(tls)["startupProbe"]["httpGet"]["scheme"] == "HTTPS"
    mtls = one(
        chart.render_chart(
            JOULIE,
            [ALL_OPTIONS],
            {"schedulerExtender.tls.secretName": "extender-tls", "schedulerExtender.tls.clientCA": "true"},
        ),
        "Deployment",
        "joulie-scheduler-extender",
    )
    assert _env(mtls)["EXTENDER_TLS_CLIENT_CA_FILE"] == "/etc/joulie/extender-tls/ca.crt"
    assert container(mtls)["readinessProbe"]["tcpSocket"] == {"port": "http"}  # kubelet has no client cert


def test_a_read_only_root_still_gives_the_pex_an_unpacked_writable_root() -> None:
    """A PEX on a read-only PEX_ROOT unpacks its dependencies again into /tmp at every start; the init
    container copies the image's unpacked root (ci/images/build.py: ENV PEX_ROOT=/opt/joulie/.pex) into
    the emptyDir the service then uses as PEX_ROOT."""
    docs = chart.render_chart(JOULIE, [ALL_OPTIONS])
    for name in ("joulie-controller-manager", "joulie-scheduler-extender"):
        w = one(docs, "Deployment", name)
        (init,) = _pod(w)["initContainers"]
        assert init["image"] == container(w)["image"]
        assert init["command"] == ["cp", "-R", "/opt/joulie/.pex/.", "/pex-root/"]
        assert {"name": "pex-root", "mountPath": "/pex-root"} in init["volumeMounts"]
        assert {"name": "pex-root", "mountPath": "/pex-root"} in container(w)["volumeMounts"]
        assert _env(w)["PEX_ROOT"] == "/pex-root"
        assert {v["name"]: set(v) for v in _pod(w)["volumes"]}["pex-root"] == {"name", "emptyDir"}


# --- without the admission policies -------------------------------------------------------------------


def _rules(docs: list[dict[str, Any]], kind: str, name_part: str) -> list[dict[str, Any]]:
    return [r for d in docs if d["kind"] == kind and name_part in d["metadata"]["name"] for r in d.get("rules") or []]


def test_without_admission_policies_the_writes_they_guard_are_not_granted() -> None:
    # The receipts' Pod patch is held to one annotation only by joulie-controller-pod-writes: without it,
    # the render refuses rather than grant a patch of any Pod.
    with pytest.raises(chart.ChartError) as err:
        chart.render_chart(JOULIE, [ALL_OPTIONS], {"admissionPolicies.enabled": "false"})
    assert "ENERGY_RECEIPTS" in str(err.value) and "admissionPolicies.enabled=false" in str(err.value)
    off = {"admissionPolicies.enabled": "false", "controllerManager.env.ENERGY_RECEIPTS": "off"}
    docs = chart.render_chart(JOULIE, [ALL_OPTIONS], off)
    pod_verbs = {v for r in _rules(docs, "ClusterRole", "controller-manager") if "pods" in r.get("resources", [])
                 for v in r["verbs"]}
    assert "patch" not in pod_verbs and not any(
        "events" in r.get("resources", []) for r in _rules(docs, "ClusterRole", "controller-manager"))
    # Agents: no Lease rights (RBAC alone would let any agent patch the leader Lease), and they say so.
    assert not [d for d in docs if d["kind"] == "Role" and d["metadata"]["name"].endswith("-agent-heartbeat")]
    for w in _agent_workloads(docs):
        assert {"name": "AGENT_LEASE_NAMESPACE", "value": "none"} in container(w)["env"], w["metadata"]["name"]
    with_policies = chart.render_chart(JOULIE, [ALL_OPTIONS], {})
    assert [d for d in with_policies if d["kind"] == "Role" and d["metadata"]["name"].endswith("-agent-heartbeat")]
