"""Watch events applied to the store; a bad object makes its node neutral."""

from kubernetes import client as k8s

from joulie_extender.cache.store import KIND_HARDWARE, KIND_NODE, KIND_TWIN
from joulie_extender.cache.watch import CacheEvents, WatchCache
from joulie_extender.rules.powerest import HardwareInfo


def test_watch_events_update_the_cache_and_a_bad_object_makes_its_node_neutral() -> None:
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
