import pytest

from joulie_common.sharding import fnv1a32, owns_node


@pytest.mark.parametrize(("text", "want"), [("", 0x811C9DC5), ("a", 0xE40C292C), ("foobar", 0xBF9CF968)])
def test_fnv1a32_matches_the_reference_vectors(text: str, want: int) -> None:
    assert fnv1a32(text) == want


@pytest.mark.parametrize("shards", [2, 3, 7])
def test_every_node_has_exactly_one_owner(shards: int) -> None:
    nodes = [f"node-{i}" for i in range(200)]
    owners = [[k for k in range(shards) if owns_node(n, shards, k)] for n in nodes]
    assert all(len(o) == 1 for o in owners)
    assert {o[0] for o in owners} == set(range(shards))  # no replica is left idle on 200 nodes


@pytest.mark.parametrize("shards", [0, 1])
def test_without_sharding_every_replica_owns_every_node(shards: int) -> None:
    assert owns_node("node-0", shards, 0) and owns_node("node-0", shards, 5)
