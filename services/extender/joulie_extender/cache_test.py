from datetime import UTC, datetime, timedelta

from joulie_api.generated.nodehardware import NodeHardware
from joulie_api.generated.nodetwin import NodeTwin
from joulie_extender.cache import KIND_HARDWARE, KIND_NODE, KIND_TWIN, StateCache
from joulie_extender.powerest import HardwareInfo
from joulie_extender.scoring import TwinView
from joulie_extender.views import hardware_info, profile_label_of, twin_view

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


def test_profile_label_of_reads_only_a_non_empty_string() -> None:
    assert profile_label_of({"metadata": {"labels": {"joulie.io/power-profile": "eco"}}}) == "eco"
    assert profile_label_of({"metadata": {"labels": {"joulie.io/power-profile": ""}}}) is None
    assert profile_label_of({"metadata": {"labels": None}}) is None
    assert profile_label_of({}) is None


def test_cluster_context_is_recomputed_when_state_changes() -> None:
    c = StateCache()
    staleness = timedelta(minutes=5)
    c.put_twin("p1", TwinView("p1", "performance", headroom_score=40.0, last_updated=NOW))
    assert c.cluster_context(NOW, staleness).perf_pressure == 60.0
    c.put_twin("p2", TwinView("p2", "performance", headroom_score=80.0, last_updated=NOW))
    assert c.cluster_context(NOW, staleness).perf_pressure == 40.0
    # Time passing makes both stale: no pressure left.
    assert c.cluster_context(NOW + timedelta(minutes=10), staleness).perf_pressure == 0.0


def test_views_read_whole_numbers_and_missing_sections() -> None:
    twin = NodeTwin.model_validate({
        "spec": {"nodeName": "n1", "profile": "performance", "scheduling": {"draining": True}},
        "status": {"schedulableClass": "performance", "predictedPowerHeadroomScore": 40,
                   "powerMeasurement": {"measuredNodePowerW": 330, "nodeCappedPowerW": 660, "powerTrendWPerMin": -3},
                   "lastUpdated": "2026-01-01T00:00:00Z"},
    })
    v = twin_view(twin)
    assert (v.node_name, v.effective_class, v.headroom_score) == ("n1", "draining", 40.0)
    assert (v.measured_power_w, v.capped_power_w, v.power_trend_w_per_min) == (330.0, 660.0, -3.0)
    assert v.last_updated == NOW and v.has_power_measurement
    bare = twin_view(NodeTwin.model_validate({"spec": {"nodeName": "n2", "profile": "eco"}}))
    assert bare.last_updated is None and bare.schedulable_class == "unknown"

    hw = NodeHardware.model_validate({
        "spec": {"nodeName": "n1"},
        "status": {"cpu": {"sockets": 2, "totalCores": 96, "capRange": {"maxWattsPerSocket": 360}},
                   "gpu": {"present": False, "count": 4, "vendor": "nvidia", "capRangePerGpu": {"maxWatts": 400}},
                   "memory": {"totalBytes": 1024}},
    })
    assert hardware_info(hw) == HardwareInfo(720.0, 96, True, 4, 400.0, "nvidia", 1024)
    # Unknown socket count counts as one socket (a safe under-estimate).
    one = NodeHardware.model_validate({"spec": {"nodeName": "x"}, "status": {"cpu": {"capRange": {"maxWattsPerSocket": 200}}}})
    assert hardware_info(one).cpu_max_watts_total == 200.0
    assert hardware_info(NodeHardware.model_validate({"spec": {"nodeName": "y"}})) == HardwareInfo()


def test_watch_events_update_the_cache_and_a_bad_object_makes_its_node_neutral() -> None:
    from kubernetes import client as k8s

    from joulie_extender.cache import CacheEvents, WatchCache

    errors: list[str] = []
    c = WatchCache(k8s.ApiClient(), CacheEvents(on_decode_error=errors.append))
    twin = {"metadata": {"name": "n1", "resourceVersion": "7"},
            "spec": {"nodeName": "n1", "profile": "eco"}, "status": {"schedulableClass": "eco"}}
    assert c._apply_event(KIND_TWIN, {"type": "ADDED", "object": twin}) == "7"
    assert c.twin("n1") is not None and c.twin("n1").schedulable_class == "eco"  # type: ignore[union-attr]
    bad = {"metadata": {"name": "n1", "resourceVersion": "8"}, "spec": {"nodeName": "n1", "profile": "turbo"}}
    assert c._apply_event(KIND_TWIN, {"type": "MODIFIED", "object": bad}) == "8"
    assert c.twin("n1") is None and errors == [KIND_TWIN]
    bookmark = {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "9"}}}
    assert c._apply_event(KIND_TWIN, bookmark) == "9"
    hw = {"metadata": {"name": "n-1", "resourceVersion": "10"}, "spec": {"nodeName": "N_1"},
          "status": {"cpu": {"totalCores": 8}}}
    c._apply_event(KIND_HARDWARE, {"type": "ADDED", "object": hw})
    assert c.hardware("N_1") == HardwareInfo(cpu_total_cores=8)
    c._apply_event(KIND_HARDWARE, {"type": "DELETED", "object": hw})
    assert c.hardware("N_1") is None
    # Node events keep only the power-profile label; removing the label forgets the node.
    node = {"metadata": {"name": "w1", "resourceVersion": "11", "labels": {"joulie.io/power-profile": "eco"}}}
    c._apply_event(KIND_NODE, {"type": "ADDED", "object": node})
    assert c.profile_label("w1") == "eco"
    c._apply_event(KIND_NODE, {"type": "MODIFIED", "object": {"metadata": {"name": "w1", "labels": {}}}})
    assert c.profile_label("w1") is None


def test_a_node_whose_agent_is_lost_scores_neutral_like_a_stale_twin() -> None:
    # Issue 23: the controller keeps the twin fresh, but nothing on the node enforces its caps.
    from datetime import UTC, datetime

    from joulie_api.generated.nodetwin import AgentLiveness, NodeTwin, NodeTwinSpec, NodeTwinStatus
    from joulie_extender.views import twin_view

    now = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)
    status = NodeTwinStatus(schedulable_class="eco", predicted_power_headroom_score=90, last_updated=now)
    twin = NodeTwin(spec=NodeTwinSpec(node_name="n1", profile="eco"), status=status)
    assert twin_view(twin).last_updated == now
    lost = twin.model_copy(update={"status": status.model_copy(update={"agent": AgentLiveness(state="agent-lost")})})
    assert twin_view(lost).last_updated is None
