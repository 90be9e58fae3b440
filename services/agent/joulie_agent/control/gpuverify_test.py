"""Drift: a GPU the agent had set to its target that no longer enforces it."""

from joulie_agent.control.gpuverify import describe, drifted
from joulie_agent.discovery.gputools import GPUDevice, parse_nvidia_enforced


def test_an_enforced_limit_above_the_target_is_drift_even_when_the_requested_one_matches() -> None:
    devices = [GPUDevice(0, current_cap_w=350, enforced_w=350), GPUDevice(1, current_cap_w=350, enforced_w=700)]
    assert drifted({0: 350, 1: 350}, {0: 350, 1: 350}, devices) == {1: "gpu 1 enforces 700.0W, intent 350.0W"}


def test_an_enforced_limit_below_the_target_keeps_the_cap_and_is_not_drift() -> None:
    # A power brake or thermal limit: the board stays under its cap, setting it again changes nothing.
    assert drifted({0: 350}, {0: 350}, [GPUDevice(0, current_cap_w=350, enforced_w=300)]) == {}


def test_a_gpu_not_yet_set_to_its_target_is_a_first_application_not_drift() -> None:
    assert drifted({0: 350}, {}, [GPUDevice(0, current_cap_w=700, enforced_w=700)]) == {}
    assert drifted({0: 350}, {0: 400}, [GPUDevice(0, current_cap_w=700, enforced_w=700)]) == {}


def test_without_an_enforced_reading_the_requested_limit_is_read_back() -> None:
    # The AMD tools report only the cap in force.
    assert drifted({2: 300}, {2: 300}, [GPUDevice(2, current_cap_w=750)]) == {2: "gpu 2 limit 750.0W, intent 300.0W"}


def test_drift_is_summarised_in_one_line() -> None:
    many = {i: f"gpu {i} enforces 700.0W, intent 350.0W" for i in range(6)}
    text = describe(many)
    assert text.endswith("(+2 more); re-applied") and text.count("gpu ") == 4
    assert describe({}) == ""


def test_enforced_limit_rows_name_the_bad_line() -> None:
    got, warnings = parse_nvidia_enforced("0, 700.00\n1, [N/A]\nx, 3\n2\n")
    assert got == {0: 700.0}
    assert warnings == ["nvidia-smi enforced.power.limit: line 3: index 'x' is not an integer",
                        "nvidia-smi enforced.power.limit: line 4: expected 2 fields, got 1: '2'"]
