"""The store: entries keyed by node name, relists, labels, the memoised cluster context."""

from datetime import UTC, datetime, timedelta

from joulie_extender.cache.store import KIND_HARDWARE, KIND_NODE, KIND_TWIN, StateCache
from joulie_extender.rules.powerest import HardwareInfo
from joulie_extender.rules.scoring import TwinView

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def test_entries_are_keyed_by_node_name_and_follow_renames_and_deletes() -> None:
    c = StateCache()
    c.put_twin("node-a", TwinView("Node_A", "eco", last_updated=NOW))
    assert c.twin("Node_A") is not None and c.twin("node-a") is None
    # The object now describes another node: the old entry must not linger.
    c.put_twin("node-a", TwinView("node-a", "eco", last_updated=NOW))
    assert c.twin("Node_A") is None and c.twin("node-a") is not None
    c.delete(KIND_TWIN, "node-a")
    assert c.twin("node-a") is None
    c.delete(KIND_TWIN, "never-seen")  # a delete for an unknown object is harmless


def test_replace_after_a_relist_drops_what_is_gone_and_marks_synced() -> None:
    c = StateCache()
    c.put_hardware("old", "old", HardwareInfo(cpu_total_cores=8))
    assert not c.synced[KIND_HARDWARE]
    c.replace(KIND_HARDWARE, {"new": ("new", HardwareInfo(cpu_total_cores=16))})
    assert c.hardware("old") is None and c.hardware("new") == HardwareInfo(cpu_total_cores=16)
    assert c.synced[KIND_HARDWARE] and c.counts() == {KIND_TWIN: 0, KIND_HARDWARE: 1, KIND_NODE: 0}


def test_node_profile_labels_are_kept_per_node_and_forgotten_when_removed() -> None:
    c = StateCache()
    assert not c.synced[KIND_NODE]
    c.replace(KIND_NODE, {"n1": ("n1", "eco"), "n2": ("n2", "performance")})
    assert c.synced[KIND_NODE] and (c.profile_label("n1"), c.profile_label("n2")) == ("eco", "performance")
    c.put_profile_label("n1", None)  # label removed from the Node
    c.put_profile_label("n3", "eco")
    assert c.profile_label("n1") is None and c.profile_label("n3") == "eco"
    c.delete(KIND_NODE, "n2")
    assert c.profile_label("n2") is None and c.counts()[KIND_NODE] == 1


def test_cluster_context_is_recomputed_when_state_changes() -> None:
    c = StateCache()
    staleness = timedelta(minutes=5)
    c.put_twin("p1", TwinView("p1", "performance", headroom_score=40.0, last_updated=NOW))
    assert c.cluster_context(NOW, staleness).perf_pressure == 60.0
    c.put_twin("p2", TwinView("p2", "performance", headroom_score=80.0, last_updated=NOW))
    assert c.cluster_context(NOW, staleness).perf_pressure == 40.0
    # Time passing makes both stale: no pressure left.
    assert c.cluster_context(NOW + timedelta(minutes=10), staleness).perf_pressure == 0.0
