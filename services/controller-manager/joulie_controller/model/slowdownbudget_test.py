"""A Pod's slowdown budget: its owner's annotation where an operator allows it, within the ceiling;
the cluster's otherwise, and the decision says why."""

from __future__ import annotations

import pytest

from joulie_controller.model.fsm import PodInfo
from joulie_controller.model.slowdownbudget import pod_budget


def _pod(ns: str, value: str | None) -> PodInfo:
    return PodInfo(ns, "job", annotations={"joulie.io/max-slowdown": value} if value is not None else {})


@pytest.mark.parametrize("value", ["10%", "0.1", " 10 %"])
def test_an_allowed_annotation_is_the_pods_budget(value: str) -> None:
    b = pod_budget(_pod("ml", value), 3.0, ("ml",), 10.0)
    assert b.tau == pytest.approx(0.10) and b.source == "annotation"


def test_no_annotation_is_the_cluster_budget() -> None:
    b = pod_budget(_pod("ml", None), 3.0, ("*",), 10.0)
    assert b.tau == pytest.approx(0.03) and b.source == "cluster"


def test_a_namespace_not_listed_runs_at_the_cluster_budget_and_says_why() -> None:
    for allowed in ((), ("other",)):
        b = pod_budget(_pod("ml", "10%"), 3.0, allowed, 10.0)
        assert b.tau == pytest.approx(0.03)
        assert b.source == "annotation ignored: namespace ml is not in SLOWDOWN_ANNOTATION_NAMESPACES"
    assert pod_budget(_pod("ml", "10%"), 3.0, ("*",), 10.0).tau == pytest.approx(0.10)


def test_a_budget_over_the_ceiling_is_held_to_it() -> None:
    b = pod_budget(_pod("ml", "40%"), 3.0, ("ml",), 10.0)
    assert b.tau == pytest.approx(0.10) and "held to MAX_SLOWDOWN_CEILING_PCT=10" in b.source


@pytest.mark.parametrize("value", ["fast", "5", "-1%", "nan", ""])
def test_an_invalid_annotation_is_ignored_with_the_grammars_message(value: str) -> None:
    b = pod_budget(_pod("ml", value), 3.0, ("ml",), 10.0)
    assert b.tau == pytest.approx(0.03)
    assert b.source.startswith(f"annotation ignored: joulie.io/max-slowdown={value!r}: expected")


def test_a_stricter_owner_gets_less_than_the_cluster() -> None:
    assert pod_budget(_pod("ml", "1%"), 3.0, ("ml",), 10.0).tau == pytest.approx(0.01)
