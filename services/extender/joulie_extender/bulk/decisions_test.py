"""The column path (decisions.py over kernels.py) answers exactly what the per-node definitions
(filtering.rejection_reason, scoring.score_node) say, on random clusters and pods."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from joulie_extender.bulk.columns import NodeColumns
from joulie_extender.bulk.decisions import failed_nodes, node_scores
from joulie_extender.cache.store import StateCache
from joulie_extender.rules.filtering import rejection_reason
from joulie_extender.rules.podmeta import eco_class, workload_kind
from joulie_extender.rules.powerest import Coefficients, HardwareInfo, extract_pod_demand
from joulie_extender.rules.scoring import TwinView, marginal_watts, score_node
from joulie_extender.wire.scheduler import encode, parse_extender_args
from joulie_testinfra.fuzzing import fuzz_settings

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
STALENESS = timedelta(minutes=5)
COEFFS = Coefficients()
HARDWARE = (
    HardwareInfo(700.0, 128, False, 0, 0.0, "", 2**40),
    HardwareInfo(500.0, 64, True, 8, 700.0, "nvidia", 2**40),
    HardwareInfo(400.0, 96, True, 4, 350.0, "amd", 2**39),
)
finite = st.floats(-2000.0, 5000.0, allow_nan=False)


@st.composite
def twins(draw: st.DrawFn, name: str) -> TwinView:
    age = draw(st.sampled_from([None, 0.0, 30.0, 299.999999, 300.0, 300.000001, 3600.0]))
    return TwinView(
        node_name=name,
        schedulable_class=draw(st.sampled_from(["eco", "performance", "draining", "unknown", ""])),
        headroom_score=draw(st.none() | st.floats(-50.0, 150.0)),
        cooling_stress_score=draw(st.none() | st.floats(0.0, 100.0)),
        has_power_measurement=draw(st.booleans()),
        measured_power_w=draw(finite),
        capped_power_w=draw(st.sampled_from([0.0, -5.0]) | st.floats(1.0, 6000.0)),
        power_trend_w_per_min=draw(st.sampled_from([0.0]) | finite),
        last_updated=None if age is None else NOW - timedelta(seconds=age),
        draining=draw(st.booleans()),
        policy_name=draw(st.sampled_from(["", "work-aware-v1", "static-partition-v1"])),
        power_state=draw(st.sampled_from(["on", "on", "off", "suspending", "resuming", "failed"])),
    )


@st.composite
def clusters(draw: st.DrawFn) -> tuple[StateCache, list[str], dict[str, str | None]]:
    cache = StateCache()
    n = draw(st.integers(1, 40))
    names = [f"n{i}" for i in range(n)]
    labels: dict[str, str | None] = {}
    for name in names:
        if draw(st.booleans()):
            cache.put_twin(name, draw(twins(name)))
        if draw(st.booleans()):
            cache.put_hardware(name, name, draw(st.sampled_from(HARDWARE)))
        labels[name] = draw(st.sampled_from([None, "eco", " ECO ", "performance", ""]))
        if labels[name]:
            cache.put_profile_label(name, labels[name])
    # Churn: some entries replaced or deleted after the fact, as watches do.
    for name in draw(st.lists(st.sampled_from(names), max_size=5)):
        cache.delete("NodeTwin", name)
    for name in draw(st.lists(st.sampled_from(names), max_size=5)):
        cache.put_twin(name, draw(twins(name)))
    candidates = draw(st.lists(st.sampled_from([*names, "unknown-node"]), unique=True, min_size=1))
    return cache, candidates, labels


def pod(cls: str, kind: str, cpu: str, gpus: int) -> dict[str, Any]:
    return {
        "metadata": {"annotations": {"joulie.io/workload-class": cls}, "labels": {"joulie.io/workload-kind": kind}},
        "spec": {"containers": [{"resources": {"requests": {"cpu": cpu, **({"nvidia.com/gpu": str(gpus)} if gpus else {})}}}]},
    }


pods = st.builds(pod, st.sampled_from(["standard", "performance", "eco", ""]),
                 st.sampled_from(["", "cpu-compute", "cpu-memory", "gpu-inference", "gpu-training"]),
                 st.sampled_from(["1", "500m", "16"]), st.integers(0, 4))


@fuzz_settings(120)
@given(clusters(), pods, st.booleans())
def test_columns_answer_as_the_per_node_definitions(
    cluster: tuple[StateCache, list[str], dict[str, str | None]], p: dict[str, Any], full_nodes: bool
) -> None:
    cache, candidates, labels = cluster
    if full_nodes:  # the labels come from the request's Node objects, not the cache
        items = [{"metadata": {"name": c, "labels": {"joulie.io/power-profile": labels.get(c) or ""}}}
                 for c in candidates]
        args = parse_extender_args(encode({"Pod": p, "Nodes": {"items": items}}))
    else:
        args = parse_extender_args(encode({"Pod": p, "NodeNames": candidates}))
    cls = args.workload_class

    failed = failed_nodes(args, cache, now=NOW, staleness=STALENESS)
    expected_failed = {}
    for c in candidates:
        reason = rejection_reason(cls, cache.twin(c), now=NOW, staleness=STALENESS,
                                  profile_label=labels.get(c) or None if full_nodes else cache.profile_label(c))
        if reason is not None:
            expected_failed[c] = reason
    assert failed == expected_failed

    scores = node_scores(args, cache, now=NOW, staleness=STALENESS, coeffs=COEFFS)
    demand = extract_pod_demand(args.pod, cls)
    ctx = cache.cluster_context(NOW, STALENESS)
    expected = {
        c: score_node(cache.twin(c), marginal_watts(demand, cache.hardware(c), cls, COEFFS), cls, ctx, now=NOW,
                      staleness=STALENESS, workload_kind=workload_kind(args.pod), eco_class=eco_class(args.pod)).score
        for c in candidates
    }
    assert scores == expected
    assert list(scores) == candidates  # the reply keeps kube-scheduler's order


def test_rows_are_reused_and_the_table_grows_past_its_capacity() -> None:
    cols = NodeColumns(capacity=2)
    for i in range(5):
        cols.put_twin(TwinView(f"n{i}", "eco", measured_power_w=float(i), last_updated=NOW), "work-aware-v1")
    assert len(cols) == 5
    cols.put_hardware("n1", HARDWARE[1])
    cols.remove_twin("n1")  # n1 keeps its row for its hardware
    cols.remove_twin("n2")  # n2 had only a twin: its row is freed ...
    cols.put_twin(TwinView("n9", "performance", measured_power_w=9.0, last_updated=NOW), "work-aware-v1")
    assert len(cols) == 5  # ... and n9 takes it
    g = cols.gather(["n0", "n1", "n2", "n9", "nope"])
    assert g.has_twin.tolist() == [True, False, False, True, False]
    assert g.measured_w.tolist() == [0.0, 0.0, 0.0, 9.0, 0.0]
    assert g.hw_id.tolist() == [-1, 0, -1, -1, -1] and g.hardware == (HARDWARE[1],)
    assert g.eff_class.tolist() == [1, 0, 0, 2, 0]
