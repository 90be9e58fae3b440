"""Metrics follow the reconcile outcome: one active state per node, families replaced, not accumulated."""

from __future__ import annotations

from joulie_controller.model.caps import Caps, CpuCap
from joulie_controller.model.fsm import State
from joulie_controller.reconcile.snapshot import NodeOutcome, TickResult
from joulie_controller.telemetry.metrics import Metrics


def outcome(node: str, state: State, prev: State, transition: str | None, family: str = "cpu:x") -> NodeOutcome:
    profile = "performance" if state == State.ACTIVE_PERFORMANCE else "eco"
    return NodeOutcome(node, profile, state == State.DRAINING_PERFORMANCE, prev, state, transition, 0, family,
                       Caps(CpuCap(pct_of_max=100), None))


def test_state_profile_transitions_and_families() -> None:
    m = Metrics()
    m.record_tick(TickResult([], [outcome("a", State.ACTIVE_PERFORMANCE, State.UNKNOWN, None),
                                  outcome("b", State.DRAINING_PERFORMANCE, State.ACTIVE_PERFORMANCE, "deferred",
                                          "gpu:h100")], None, []))
    get = m.registry.get_sample_value
    assert get("joulie_policy_node_state", {"node": "b", "state": "DrainingPerformance"}) == 1
    assert get("joulie_policy_node_state", {"node": "b", "state": "ActiveEco"}) == 0
    assert get("joulie_policy_node_profile_label", {"node": "a", "profile": "performance"}) == 1
    assert get("joulie_policy_state_transitions_total", {"node": "b", "from_state": "ActivePerformance",
                                                         "to_state": "ActiveEco", "result": "deferred"}) == 1
    assert get("joulie_policy_family_performance_nodes", {"family": "gpu:h100"}) == 0
    m.record_tick(TickResult([], [outcome("a", State.ACTIVE_ECO, State.ACTIVE_PERFORMANCE, "applied")], None, []))
    assert get("joulie_policy_family_nodes", {"family": "gpu:h100"}) is None  # stale family removed
    assert get("joulie_policy_node_state", {"node": "b", "state": "DrainingPerformance"}) is None
    assert get("joulie_policy_state_transitions_total", {"node": "a", "from_state": "ActivePerformance",
                                                         "to_state": "ActiveEco", "result": "applied"}) == 1


def test_power_states_are_counted_per_state_and_actions_per_action() -> None:
    from joulie_controller.power.powerstate import PowerAction

    m = Metrics()
    m.record_tick(TickResult([], [], None, [], [PowerAction("a", "cordon", "idle")],
                             {"a": "suspending", "b": "on", "c": "on"}))
    get = m.registry.get_sample_value
    assert get("joulie_power_nodes", {"state": "on"}) == 2 and get("joulie_power_nodes", {"state": "off"}) == 0
    assert get("joulie_power_actions_total", {"action": "cordon"}) == 1
    assert get("joulie_power_nodes", {"state": "suspending"}) == 1


def test_the_forecast_and_the_warm_pool_are_exported_per_pool() -> None:
    from joulie_controller.power.warmpool import WarmNeed

    m = Metrics()
    need = WarmNeed("gpu", cores=16.0, gpus=2, arrivals=2, window_s=300.0, boot_s=240.0, rate_per_min=0.4,
                    basis="recent")
    m.record_tick(TickResult([], [], None, [], [], {}, {"gpu": need}))
    get = m.registry.get_sample_value
    assert get("joulie_power_forecast_arrivals_per_minute", {"pool": "gpu"}) == 0.4
    assert get("joulie_power_warm_pool_cores", {"pool": "gpu"}) == 16.0
    assert get("joulie_power_warm_pool_gpus", {"pool": "gpu"}) == 2
    assert get("joulie_power_pool_boot_seconds", {"pool": "gpu"}) == 240.0


def test_a_node_whose_power_is_dropped_as_implausible_shows_while_it_lasts() -> None:
    m = Metrics()
    get = m.registry.get_sample_value
    m.record_tick(TickResult([], [], None, [], implausible={"a": "above-ceiling"}))
    assert get("joulie_twin_power_implausible", {"node": "a", "kind": "above-ceiling"}) == 1
    m.record_tick(TickResult([], [], None, [], implausible={"a": "below-components"}))
    assert get("joulie_twin_power_implausible", {"node": "a", "kind": "above-ceiling"}) is None
    assert get("joulie_twin_power_implausible", {"node": "a", "kind": "below-components"}) == 1
    m.record_tick(TickResult([], [], None, []))
    assert get("joulie_twin_power_implausible", {"node": "a", "kind": "below-components"}) is None


def test_receipts_are_exported_under_the_vocabulary_names_and_finished_pods_go_after_a_while() -> None:
    from joulie_controller.model.receipt import Receipt
    from joulie_telemetry.vocabulary import NODE_ENERGY_UNALLOCATED, POD_ENERGY, POD_ENERGY_SAVED, POD_TIME_ADDED

    m = Metrics()
    get = m.registry.get_sample_value
    pod = {"k8s_namespace_name": "ml", "k8s_pod_name": "train", "k8s_node_name": "g1"}
    part = Receipt(gpu_j=100.0, cpu_busy_j=10.0, cpu_idle_j=5.0, platform_j=20.0, saved_j=7.0, added_s=3.0)
    m.record_receipts({"ml/train": ("g1", part)}, {"g1": Receipt(gpu_j=50.0)}, [])
    m.record_receipts({"ml/train": ("g1", part)}, {"g1": Receipt(gpu_j=50.0)}, ["ml/train"], keep_windows=2)
    assert get(POD_ENERGY.prometheus_name(), {**pod, "joulie_energy_device": "gpu"}) == 200.0
    assert get(POD_ENERGY.prometheus_name(), {**pod, "joulie_energy_device": "cpu_idle"}) == 10.0
    assert get(POD_ENERGY_SAVED.prometheus_name(), pod) == 14.0
    assert get(POD_TIME_ADDED.prometheus_name(), pod) == 6.0
    assert get(NODE_ENERGY_UNALLOCATED.prometheus_name(), {"k8s_node_name": "g1"}) == 100.0
    # A cost (negative saving) is not subtracted from the counter.
    m.record_receipts({"ml/train": ("g1", Receipt(saved_j=-5.0))}, {}, [])
    assert get(POD_ENERGY_SAVED.prometheus_name(), pod) == 14.0
    m.record_receipts({}, {}, [], window_end_s=1_765_000_000.5)
    assert get(POD_ENERGY.prometheus_name(), {**pod, "joulie_energy_device": "gpu"}) is None
    # Where the counters stand: a reader aligns its own meters on the last window's close.
    assert get("joulie_receipt_window_end_timestamp_seconds") == 1_765_000_000.5


def test_boards_whose_gpu_series_are_refuted_are_counted_by_kind_never_by_forged_name() -> None:
    m = Metrics()
    get = m.registry.get_sample_value
    assert get("joulie_gpu_series_implausible_boards", {"kind": "unlisted-board"}) == 0  # present before any
    m.record_gpu_refuted(["unlisted-board", "unlisted-board", "power-above-limit"])
    assert get("joulie_gpu_series_implausible_boards", {"kind": "unlisted-board"}) == 2
    assert get("joulie_gpu_series_implausible_boards", {"kind": "power-above-limit"}) == 1
    m.record_gpu_refuted([])
    assert get("joulie_gpu_series_implausible_boards", {"kind": "unlisted-board"}) == 0
    exposed = {s.labels.get("kind") for f in m.registry.collect() if f.name == "joulie_gpu_series_implausible_boards"
               for s in f.samples}
    assert exposed == {"power-above-limit", "ratio-out-of-range", "unlisted-board"}
