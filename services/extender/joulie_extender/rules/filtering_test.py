"""The eco rule without a twin: the node's joulie.io/power-profile label (issue 21)."""

from datetime import UTC, datetime, timedelta

import pytest

from joulie_extender.rules.filtering import REASON_DRAINING, REASON_ECO, REASON_ECO_LABEL, rejection_reason
from joulie_extender.rules.scoring import TwinView

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
STALENESS = timedelta(minutes=5)
FRESH = TwinView("n", "performance", last_updated=NOW - timedelta(seconds=30))
STALE_ECO = TwinView("n", "eco", last_updated=NOW - timedelta(minutes=10))


@pytest.mark.parametrize(
    ("cls", "view", "label", "reason"),
    [
        # No twin at all (start-up, agent never reported): the label alone decides.
        ("performance", None, "eco", REASON_ECO_LABEL),
        ("performance", None, "Eco ", REASON_ECO_LABEL),
        ("performance", None, "performance", None),
        ("performance", None, None, None),
        # A stale twin's class is not trusted; the label still is.
        ("performance", STALE_ECO, None, None),
        ("performance", STALE_ECO, "eco", REASON_ECO_LABEL),
        # The label wins over a fresh twin that has not caught up yet.
        ("performance", FRESH, "eco", REASON_ECO_LABEL),
        # A fresh twin's own reason comes first.
        ("performance", TwinView("n", "eco", last_updated=NOW), "eco", REASON_ECO),
        ("performance", TwinView("n", "eco", last_updated=NOW, draining=True), "eco", REASON_DRAINING),
        # Standard pods pass any label.
        ("standard", None, "eco", None),
        ("standard", STALE_ECO, "eco", None),
    ],
)
def test_performance_pods_are_kept_off_eco_labelled_nodes(
    cls: str, view: TwinView | None, label: str | None, reason: str | None
) -> None:
    assert rejection_reason(cls, view, now=NOW, staleness=STALENESS, profile_label=label) == reason


@pytest.mark.parametrize("cls", ["performance", "standard"])
@pytest.mark.parametrize(("state", "rejected"), [("suspending", True), ("off", True), ("failed", True),
                                                 ("resuming", False), ("on", False)])
def test_a_node_powered_down_by_the_power_policy_is_rejected_for_any_pod(cls: str, state: str, rejected: bool) -> None:
    view = TwinView("n", "performance", last_updated=NOW, power_state=state)
    reason = rejection_reason(cls, view, now=NOW, staleness=STALENESS)
    assert (reason == f"joulie: node is {state} (power policy, taint joulie.io/suspended)") == rejected
    assert rejected or reason is None


def test_a_stale_twin_saying_off_is_not_trusted() -> None:
    stale_off = TwinView("n", "performance", last_updated=NOW - timedelta(minutes=10), power_state="off")
    assert rejection_reason("standard", stale_off, now=NOW, staleness=STALENESS) is None
