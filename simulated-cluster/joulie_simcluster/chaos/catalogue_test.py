from __future__ import annotations

import pytest

from joulie_simcluster.chaos.catalogue import DEFAULT_FAULTS, FAULTS, choose, parse_faults, plan


def test_the_plan_is_every_fault_repeated_in_a_seeded_order_with_random_delays() -> None:
    faults = parse_faults(",".join(DEFAULT_FAULTS))
    a, b = plan(faults, 2, seed=7, max_delay_s=6), plan(faults, 2, seed=7, max_delay_s=6)
    assert a == b, "one seed, one plan"
    assert a != plan(faults, 2, seed=8, max_delay_s=6)
    assert sorted((s.fault.name, s.repetition) for s in a) == sorted((f, r) for f in DEFAULT_FAULTS for r in (1, 2))
    assert all(1.0 <= s.delay_s <= 6.0 and 0 <= s.pick < 1 for s in a)


def test_unknown_faults_are_refused_naming_the_known_ones() -> None:
    with pytest.raises(ValueError, match=r"unknown fault 'disk-full'; known: agent-kill"):
        parse_faults("agent-kill,disk-full")
    with pytest.raises(ValueError, match="none given"):
        parse_faults(" , ")
    assert set(DEFAULT_FAULTS) <= set(FAULTS)


def test_choose_is_stable_over_the_candidates_order() -> None:
    assert choose(["b", "a", "c"], 0.0) == "a" and choose(["c", "a", "b"], 0.99) == "c"
    with pytest.raises(ValueError):
        choose([], 0.5)
