"""S15's evaluation: each GPU Pod named on its boards, with their DRAM activity."""

from joulie_simcluster.smoke import gpupods


def test_s15_each_gpu_pod_is_named_on_its_boards_with_dram_activity() -> None:
    pods = {("default", "sim-a"): ("gpu-0", 2), ("ml", "sim-b"): ("gpu-1", 1)}
    alloc = [
        {"instance": "gpu-0", "hw_id": "gpu-0", "k8s_namespace_name": "default", "k8s_pod_name": "sim-a"},
        {"instance": "gpu-0", "hw_id": "gpu-1", "k8s_namespace_name": "default", "k8s_pod_name": "sim-a"},
        # UTF-8 names (otel-utf8 mode) read the same.
        {"instance": "gpu-1", "hw.id": "gpu-3", "k8s.namespace.name": "ml", "k8s.pod.name": "sim-b"},
    ]
    dram = [
        ({"instance": "gpu-0", "hw_id": "gpu-0"}, 0.41),
        ({"instance": "gpu-0", "hw_id": "gpu-1"}, 0.0),
        ({"instance": "gpu-1", "hw.id": "gpu-3"}, 0.77),
    ]
    a = gpupods.gpu_pod_signals(pods, alloc, dram)
    assert a.status == "pass", a.observed
    assert a.value == 3.0


def test_s15_fails_on_a_missing_pod_a_wrong_node_a_board_count_or_dram_out_of_range() -> None:
    pods = {("default", "sim-a"): ("gpu-0", 2), ("default", "sim-c"): ("gpu-2", 1)}
    alloc = [{"instance": "gpu-9", "hw_id": "gpu-0", "k8s_namespace_name": "default", "k8s_pod_name": "sim-a"}]
    a = gpupods.gpu_pod_signals(pods, alloc, [({"instance": "gpu-9", "hw_id": "gpu-0"}, 1.3)])
    assert a.status == "fail"
    for part in (
        "sim-c on gpu-2: no hw.gpu.allocation",
        "places it on ['gpu-9']",
        "1 boards in hw.gpu.allocation, it requests 2",
        "outside [0, 1]",
    ):
        assert part in a.observed, a.observed
    assert gpupods.gpu_pod_signals({}, [], []).status == "fail"  # nothing to check is no pass
