import pytest

from joulie_api.names import POWER_OFF, POWER_ON, POWER_STATES, object_name_for_node


@pytest.mark.parametrize(
    ("node", "expected"),
    [
        ("Node_A/1", "node-a-1"),
        ("n2.atos", "n2-atos"),
        ("  worker-7  ", "worker-7"),
        ("--edge--", "edge"),
        ("a..b", "a--b"),  # repeated dashes are kept, as in the Go original
        ("GPU-Node-0", "gpu-node-0"),
    ],
)
def test_object_name_matches_go_original(node: str, expected: str) -> None:
    assert object_name_for_node(node) == expected


def test_object_name_refuses_a_name_with_nothing_usable() -> None:
    with pytest.raises(ValueError, match="no character usable"):
        object_name_for_node("__//")


def test_power_states_are_the_ones_the_nodetwin_crd_accepts() -> None:
    """The controller writes POWER_STATES into status.power.state and on/off into spec.power.state;
    the API server refuses anything the CRD's enums leave out."""
    from joulie_api.generated.nodetwin import PowerSpec, PowerStatus

    for state in POWER_STATES:
        assert PowerStatus(state=state).state == state
    assert {PowerSpec(state=s).state for s in (POWER_ON, POWER_OFF)} == {"on", "off"}
    with pytest.raises(ValueError):
        PowerStatus(state="sleeping")  # type: ignore[arg-type]
