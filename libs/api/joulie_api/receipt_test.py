from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from joulie_api.receipt import EnergyReceipt, ReceiptFormatError, parse_annotation, roll_up

RECEIPT = EnergyReceipt(
    "gpu-0",
    "finished",
    3600.0,
    {"gpu": 2.1e6, "cpuBusy": 4.0e4, "cpuIdle": 3.1e4, "platform": 2.2e5},
    1.2e5,
    (4.0e4, 1.6e5),
    95.0,
    "attribution:joulie/v1; counterfactual:capmodel-ratio",
    "2026-12-05T22:00:00Z",
)


def test_a_receipt_round_trips_through_its_annotation_and_stays_small() -> None:
    text = RECEIPT.to_annotation()
    assert parse_annotation(text) == RECEIPT
    assert len(text) < 400  # an annotation, not a document
    assert parse_annotation(text).total_j == pytest.approx(2.1e6 + 4.0e4 + 3.1e4 + 2.2e5)


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda b: b.update(v=2), "v=2: expected 1"),
        (lambda b: b.update(state="done"), "state='done': expected one of running, finished"),
        (lambda b: b["energyJ"].update(gpu="lots"), "gpu='lots': expected a finite number"),
        (lambda b: b.update(savedRangeJ=[1.0]), "savedRangeJ=[1.0]: expected [low, high]"),
        (lambda b: b.pop("heldS"), "heldS=None: expected a finite number"),
    ],
)
def test_a_malformed_annotation_names_the_field_and_what_was_expected(
    mutate: Callable[[dict[str, Any]], object], message: str
) -> None:
    body = json.loads(RECEIPT.to_annotation())
    mutate(body)
    with pytest.raises(ReceiptFormatError, match=message.replace("[", r"\[").replace("]", r"\]")):
        parse_annotation(json.dumps(body))
    with pytest.raises(ReceiptFormatError, match="not JSON"):
        parse_annotation("{")


def test_roll_up_sums_by_key_and_overall_and_counts_the_running() -> None:
    running = EnergyReceipt("n", "running", 60.0, {"gpu": 10.0, "cpuIdle": 2.0}, -1.0, (-3.0, 1.0), 4.0)
    by_team, total = roll_up([("b", RECEIPT), ("a", running), ("b", running)])
    assert list(by_team) == ["a", "b"]
    assert (by_team["b"].pods, by_team["b"].running) == (2, 1)
    assert by_team["b"].energy_j["gpu"] == pytest.approx(2.1e6 + 10.0)
    assert by_team["b"].saved_j == pytest.approx(1.2e5 - 1.0)  # a cost counts against the saving
    assert total.total_j == pytest.approx(RECEIPT.total_j + 2 * running.total_j)
    assert total.to_json()["savedRangeJ"] == [pytest.approx(4.0e4 - 6.0), pytest.approx(1.6e5 + 2.0)]
