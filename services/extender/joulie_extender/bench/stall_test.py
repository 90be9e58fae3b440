from joulie_extender.bench.stall import NO_CONDITION, StallWatch, group_reasons, report_lines, stalled_at, why


def test_a_series_that_keeps_binding_never_stalls() -> None:
    samples = [(float(t), t * 10) for t in range(0, 300)]
    assert stalled_at(samples, 60) is None


def test_nothing_bound_for_stall_s_stalls_at_that_sample() -> None:
    # 40 bound within 10 s, then the last 10 never bind.
    samples = [(float(t), min(40, 4 * t)) for t in range(0, 200)]
    assert stalled_at(samples, 60) == 70.0


def test_a_bind_before_stall_s_restarts_the_clock() -> None:
    samples = [(0.0, 0), (50.0, 0), (55.0, 1), (100.0, 1), (114.0, 1), (115.0, 1)]
    assert stalled_at(samples, 60) == 115.0


def test_an_arm_in_which_nothing_ever_binds_stalls() -> None:
    watch = StallWatch(60)
    assert not watch.observe(10.0, 0)
    assert not watch.observe(69.0, 0)
    assert watch.observe(70.0, 0)


def test_reasons_are_grouped_most_common_first() -> None:
    eco = why(
        "Unschedulable",
        "0/1000 nodes are available: 334 performance pod rejected from eco node,\n" " 666 Insufficient nvidia.com/gpu.",
    )
    cpu = why("Unschedulable", "0/1000 nodes are available: 1000 Insufficient cpu.")
    groups = group_reasons([eco] * 20 + [cpu] * 3 + [why(None, None)])
    assert groups == [(20, eco), (3, cpu), (1, NO_CONDITION)]
    assert "\n" not in eco and "334 performance pod rejected from eco node, 666" in eco
    lines = report_lines(groups)
    assert lines[0] == f"20 Pods: {eco}"
    assert lines[2] == f"1 Pod: {NO_CONDITION}"


def test_the_report_sums_the_reasons_past_the_first_few() -> None:
    groups = group_reasons([f"r{i}" for i in range(5)] + ["r0"])
    assert report_lines(groups, max_groups=2) == ["2 Pods: r0", "1 Pod: r1", "3 more Pods with 3 other reasons"]
