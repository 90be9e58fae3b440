"""A look at the cluster: each condition reads only what it needs, and the timeline's partial look
keeps every part that could be read when another fails (a component down during a fault)."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from joulie_simcluster.errors import RuntimeFailure
from joulie_simcluster.scenario.conditions import Observation
from joulie_simcluster.scenario.observe import PART_FIELDS, TIMELINE_NEEDS, Looker, cluster_power_query, needs
from joulie_simcluster.scenario.schema import Condition
from joulie_simcluster.timing import timing


class FakeLooker(Looker):
    """The parts come from a table; a part named in `down` raises as an unreachable component would."""

    def __init__(self, down: set[str]) -> None:  # - no cluster: the shell's reads are replaced below
        self.down = down

    def look(self, parts: Collection[str]) -> Observation:
        if set(parts) & self.down:
            raise RuntimeFailure(f"{sorted(set(parts) & self.down)} unreachable")
        got: dict[str, dict[str, Any]] = {"twins": {"twins": {"a": {}}}, "truth": {"truth": {"a": {}}, "facility": {"pue": 1.2}},
               "prometheus": {"prometheus_power_w": 10.0}, "jobs": {"jobs": {"running": 1.0}}}
        out: dict[str, Any] = {"agents": ["a"]}
        for p in parts:
            out.update(got[p])
        return Observation(**out)


def test_a_partial_look_keeps_what_could_be_read() -> None:
    o, failed = FakeLooker({"prometheus"}).look_partial(TIMELINE_NEEDS)
    assert failed == ["prometheus"]
    assert o.prometheus_power_w is None and o.twins == {"a": {}} and o.jobs == {"running": 1.0}
    assert o.truth == {"a": {}} and o.facility == {"pue": 1.2} and o.agents == ["a"]
    o, failed = FakeLooker(set()).look_partial(TIMELINE_NEEDS)
    assert failed == [] and o.prometheus_power_w == 10.0
    assert set(PART_FIELDS) >= TIMELINE_NEEDS


def test_each_condition_reads_only_its_parts() -> None:
    def c(raw: dict[str, object]) -> Condition:
        return Condition.model_validate(raw)

    assert needs(c({"twin": {"field": "spec.profile", "equals": "eco"}})) == {"twins"}
    assert needs(c({"clusterPower": {"source": "truth", "minW": 1}})) == {"truth"}
    assert needs(c({"capsApplied": {}})) == {"twins", "hardware", "truth"}
    assert needs(c({"healthy": True})) == {"health"}


def test_the_cluster_power_query_is_the_controllers_summed_over_nodes() -> None:
    q = cluster_power_query("otlp", "auto", timing("ci"))
    assert q.startswith("sum(sum by (k8s_node_name) (rate(hw_host_energy_joules_total[12s]")
    # A mode without whole-host power sums the components' energy, as smoke S06 compares.
    assert "hw_energy_joules_total" in cluster_power_query("otel-bridge", "auto", timing("production"))
