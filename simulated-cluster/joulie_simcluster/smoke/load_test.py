"""The smoke's load: the trace deploy writes, the load the smoke expects from it, and what it says
when a Node lacks that load."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from joulie_simcluster.deploy.reports import workload_detail
from joulie_simcluster.nodes import render_nodes
from joulie_simcluster.smoke import load as smokeload
from joulie_simcluster.spec import load_spec
from joulie_workload.pods import pod_manifest
from joulie_workload.trace import load_trace, write_trace

SMOKE = Path("simulated-cluster/specs/smoke.yaml")


def _nodes() -> list[dict[str, Any]]:
    return render_nodes(load_spec(SMOKE))


def test_one_general_job_per_node_pinned_to_it_leaving_two_cores() -> None:
    jobs = {j.job_id: j for j in smokeload.smoke_jobs(_nodes())}
    shared = ("h100-nvl-0", "intel-0")
    assert smokeload.shared_nodes(_nodes()) == shared
    assert sorted(jobs) == sorted([f"smoke-load-{n['metadata']['name']}" for n in _nodes()]
                                  + [f"smoke-load-{n}-b" for n in shared])
    intel, second = jobs["smoke-load-intel-0"], jobs["smoke-load-intel-0-b"]
    assert intel.node_selector == second.node_selector == {"kubernetes.io/hostname": "intel-0"}
    assert (intel.workload_class, intel.submit_s, intel.requests.cpu, intel.requests.gpu) == ("general", 0.0, 62.0, 0)
    assert second.requests.cpu == 31.0  # the two share the 93 cores one job would take
    assert (intel.utilization.cpu, intel.utilization.gpu) == (1.0, 1.0)
    assert jobs["smoke-load-vm-0"].requests.cpu == 6.0  # allocatable 8
    nvl = (jobs["smoke-load-h100-nvl-0"].requests.gpu, jobs["smoke-load-h100-nvl-0-b"].requests.gpu)
    assert nvl == (6, 2)


def test_every_gpu_is_asked_for_as_the_resource_the_node_offers() -> None:
    jobs = {j.job_id: j for j in smokeload.smoke_jobs(_nodes())}
    assert (jobs["smoke-load-h100-sxm-0"].requests.gpu, jobs["smoke-load-h100-sxm-0"].requests.gpu_resource) == (8, "nvidia.com/gpu")
    assert (jobs["smoke-load-mi300x-0"].requests.gpu, jobs["smoke-load-mi300x-0"].requests.gpu_resource) == (8, "amd.com/gpu")
    res = pod_manifest(jobs["smoke-load-mi300x-0"], "smoke")["spec"]["containers"][0]["resources"]
    assert res["requests"]["amd.com/gpu"] == "8" and res["requests"]["cpu"] == "380000m"


def test_a_job_tolerates_its_nodes_own_taints_so_the_scheduler_can_place_it() -> None:
    jobs = {j.job_id: j for j in smokeload.smoke_jobs(_nodes())}
    spec = pod_manifest(jobs["smoke-load-h100-nvl-0"], "smoke")["spec"]
    assert {"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"} in spec["tolerations"]
    managed = pod_manifest(jobs["smoke-load-intel-managed-0"], "smoke")["spec"]["tolerations"]
    assert [t["key"] for t in managed] == ["kwok.x-k8s.io/node", "dedicated"]
    assert [t["key"] for t in pod_manifest(jobs["smoke-load-intel-0"], "smoke")["spec"]["tolerations"]] == ["kwok.x-k8s.io/node"]


def test_the_work_outlasts_any_smoke_and_the_pod_carries_the_workload_class() -> None:
    for job in smokeload.smoke_jobs(_nodes()):
        assert job.ideal_runtime_s > 365 * 86400, job.job_id
        labels = pod_manifest(job, "smoke")["metadata"]["labels"]
        assert labels["joulie.io/workload-class"] == "general"  # S12: classified pods only on fake Nodes


def test_the_trace_round_trips_through_the_file_the_runner_reads(tmp_path: Path) -> None:
    jobs = smokeload.smoke_jobs(_nodes())
    path = smokeload.trace_path(tmp_path)
    path.parent.mkdir()
    write_trace(path, jobs)
    assert load_trace(path) == sorted(jobs, key=lambda j: j.job_id)


def test_the_expected_load_is_the_engines_requests_over_allocatable_and_every_board_busy() -> None:
    nodes = _nodes()
    want = smokeload.expected_loads(nodes, smokeload.smoke_jobs(nodes))
    assert set(want) == {n["metadata"]["name"] for n in nodes}
    assert abs(want["intel-0"].cpu_util - 93 / 95) < 1e-12 and want["intel-0"].gpu_util == ()
    assert abs(want["vm-0"].cpu_util - 0.75) < 1e-12
    assert want["h100-nvl-0"].gpu_util == (1.0,) * 8 and abs(want["mi300x-0"].cpu_util - 380 / 382) < 1e-12
    assert smokeload.load_summary(want) == "CPU 75.0%-99.5%, GPUs 100% on 24 boards of 3 Nodes"


def _truth(cpu: float, gpus: list[float]) -> dict[str, Any]:
    return {"load": {"cpuUtil": cpu, "gpuUtil": gpus}, "gpus": [{"index": i, "util": u} for i, u in enumerate(gpus)]}


def test_a_node_lacks_load_until_cpu_and_every_gpu_show_the_engines_values() -> None:
    nodes = [n for n in _nodes() if n["metadata"]["name"] in ("intel-0", "h100-sxm-0")]
    want = smokeload.expected_loads(nodes, smokeload.smoke_jobs(nodes))
    full = {"intel-0": _truth(93 / 95, []), "h100-sxm-0": _truth(93 / 95, [1.0] * 8)}
    assert smokeload.lacking_load(want, full) == {}
    idle = {"intel-0": _truth(0.0, []), "h100-sxm-0": _truth(93 / 95, [1.0] * 7 + [0.0])}
    assert smokeload.lacking_load(want, idle) == {
        "h100-sxm-0": "CPU 97.9%, GPUs [100%, 100%, 100%, 100%, 100%, 100%, 100%, 0%] "
                      "(want CPU 97.9%, GPUs [100%, 100%, 100%, 100%, 100%, 100%, 100%, 100%])",
        "intel-0": "CPU 0.0% (want CPU 97.9%)",
    }
    assert smokeload.lacking_load(want, {"intel-0": full["intel-0"]}) == {"h100-sxm-0": "not in the emulator's truth"}


def test_a_lacking_node_names_its_pod_and_why_it_is_not_bound() -> None:
    pods = [
        {"metadata": {"namespace": "default", "name": "sim-smoke-load-intel-0"},
         "spec": {"nodeSelector": {"kubernetes.io/hostname": "intel-0"}},
         "status": {"phase": "Pending", "conditions": [
             {"type": "PodScheduled", "status": "False", "message": "0/9 nodes are available: 1 Insufficient cpu."}]}},
        {"metadata": {"namespace": "default", "name": "sim-smoke-load-vm-0"},
         "spec": {"nodeSelector": {"kubernetes.io/hostname": "vm-0"}, "nodeName": "vm-0"}, "status": {"phase": "Running"}},
    ]
    states = smokeload.pod_states(pods)
    lines = smokeload.describe_lacking({"intel-0": "CPU 0.0% (want CPU 97.9%)", "vm-0": "x", "epyc-0": "y"}, states)
    assert lines == [
        "intel-0: CPU 0.0% (want CPU 97.9%); pod default/sim-smoke-load-intel-0 Pending, not bound: "
        "0/9 nodes are available: 1 Insufficient cpu.",
        "vm-0: x; pod default/sim-smoke-load-vm-0 Running on vm-0",
        "epyc-0: y; no pod sim-smoke-load-epyc-0 (see the workload log)",
    ]


def test_cpu_quantities_in_cores_and_the_least_a_job_asks() -> None:
    assert (smokeload.cpu_cores("95"), smokeload.cpu_cores("63500m"), smokeload.cpu_cores("2.5")) == (95.0, 63.5, 2.5)
    tiny = {"metadata": {"name": "t-0"}, "spec": {}, "status": {"allocatable": {"cpu": "2"}}}
    (job,) = smokeload.smoke_jobs([tiny])
    assert job.requests.cpu == 1.0 and job.tolerations == []


def test_the_workload_runner_reports_its_jobs_from_its_metrics() -> None:
    body = "# HELP joulie_sim_jobs_running Jobs running.\njoulie_sim_jobs_running 9.0\njoulie_sim_jobs_pending 0.0\n"
    assert workload_detail(body) == "/metrics answers; jobs 9 running, 0 pending"
    assert workload_detail("") == "/metrics answers; jobs ? running, ? pending"
    body += ('joulie_sim_job_completed_total{class="general",node="vm-0"} 2.0\n'
             'joulie_sim_job_completed_total{class="eco",node="intel-0"} 1.0\n')
    assert workload_detail(body) == "/metrics answers; jobs 9 running, 0 pending, 3 completed"
