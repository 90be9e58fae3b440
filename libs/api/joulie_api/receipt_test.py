from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from joulie_api.receipt import EnergyReceipt, ReceiptFormatError, parse_annotation

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
