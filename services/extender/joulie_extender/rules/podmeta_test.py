"""What a Pod says besides its class: its workload kind and whether it asked for eco."""

from joulie_extender.rules.podmeta import eco_class, workload_kind


def test_pod_kind_and_eco_class_come_from_labels_or_annotations() -> None:
    assert workload_kind({"metadata": {"labels": {"joulie.io/workload-kind": " cpu-memory "}}}) == "cpu-memory"
    assert workload_kind({"metadata": {"annotations": {"joulie.io/workload-kind": "gpu-inference"}}}) == "gpu-inference"
    assert workload_kind({"metadata": {"labels": ["not", "a", "map"]}}) == ""
    assert workload_kind({}) == ""
    assert eco_class({"metadata": {"labels": {"joulie.io/workload-class": "eco"}}})
    assert not eco_class({"metadata": {"annotations": {"joulie.io/workload-class": "standard"}}})
