import pytest

from joulie_api.names import object_name_for_node


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
