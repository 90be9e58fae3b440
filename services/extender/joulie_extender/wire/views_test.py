"""NodeTwin / NodeHardware / Node objects read as the views the rules take."""

from datetime import UTC, datetime

from joulie_api.generated.nodehardware import NodeHardware
from joulie_api.generated.nodetwin import AgentLiveness, NodeTwin, NodeTwinSpec, NodeTwinStatus
from joulie_extender.rules.powerest import HardwareInfo
from joulie_extender.wire.views import hardware_info, profile_label_of, twin_view

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def test_profile_label_of_reads_only_a_non_empty_string() -> None:
    assert profile_label_of({"metadata": {"labels": {"joulie.io/power-profile": "eco"}}}) == "eco"
    assert profile_label_of({"metadata": {"labels": {"joulie.io/power-profile": ""}}}) is None
    assert profile_label_of({"metadata": {"labels": None}}) is None
    assert profile_label_of({}) is None


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


def test_a_node_whose_agent_is_lost_scores_neutral_like_a_stale_twin() -> None:
    # Issue 23: the controller keeps the twin fresh, but nothing on the node enforces its caps.
    now = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)
    status = NodeTwinStatus(schedulable_class="eco", predicted_power_headroom_score=90, last_updated=now)
    twin = NodeTwin(spec=NodeTwinSpec(node_name="n1", profile="eco"), status=status)
    assert twin_view(twin).last_updated == now
    lost = twin.model_copy(update={"status": status.model_copy(update={"agent": AgentLiveness(state="agent-lost")})})
    assert twin_view(lost).last_updated is None


def test_the_power_state_is_read_from_the_nodetwin_status() -> None:
    body = {"spec": {"nodeName": "n", "profile": "eco", "power": {"state": "off"}},
            "status": {"schedulableClass": "eco", "power": {"state": "off", "reason": "no workload Pods for 10m"}}}
    assert twin_view(NodeTwin.model_validate(body)).power_state == "off"
    del body["status"]["power"]
    assert twin_view(NodeTwin.model_validate(body)).power_state == "on"
