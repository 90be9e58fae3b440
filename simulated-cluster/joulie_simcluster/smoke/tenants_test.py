"""The tenant cases' verdicts (``simcluster tenants``): a case passes only when what it holds did not move
and its control did; the live run itself is ``./simcluster tenants``."""

from __future__ import annotations

from joulie_simcluster.nodes import KWOK_TAINT_KEY
from joulie_simcluster.smoke import tenantlive, tenants


def test_a_case_fails_when_something_moved_or_its_control_did_not() -> None:
    held = tenants.moved({"a": 50, "b": 60}, {"a": 50, "b": 30})
    assert held == ["b: 60 -> 30"]
    assert tenants.case("x", held, True, "", "ok")[1] is False
    assert tenants.case("x", [], False, "nothing moved", "the control never moved")[1] is False
    name, ok, seen = tenants.case("x", [], True, "nothing moved", "released")
    assert (name, ok) == ("x", True) and seen == "nothing moved; control: released"


def test_the_tenant_pods_say_what_each_case_needs() -> None:
    p = tenantlive.pod("foreign", cpu="4", annotations=tenants.PERF, selector={"a": "b"}, scheduler="bogus-scheduler")
    assert p["spec"]["schedulerName"] == "bogus-scheduler" and p["spec"]["nodeSelector"] == {"a": "b"}
    assert p["metadata"]["annotations"] == {"joulie.io/workload-class": "performance"}
    assert p["spec"]["tolerations"][0]["key"] == KWOK_TAINT_KEY and "nodeName" not in p["spec"]
    assert tenantlive.pod("s", node="xeon-0")["spec"]["nodeName"] == "xeon-0"
