from typing import Any

import pytest

from joulie_localcluster.kwok import KWOK_NODE_ANNOTATION, KWOK_NODE_ANNOTATION_VALUE, KWOK_TAINT_KEY
from joulie_localcluster.nodes import node_body

ALLOC = {"cpu": "8", "memory": "32Gi"}


@pytest.mark.parametrize(("kwok", "annotations", "taints"), [
    (False, None, None),
    (True, {KWOK_NODE_ANNOTATION: KWOK_NODE_ANNOTATION_VALUE}, [{"key": KWOK_TAINT_KEY, "value": "fake", "effect": "NoSchedule"}]),
])
def test_a_kwok_node_carries_the_annotation_and_the_taint(kwok: bool, annotations: Any, taints: Any) -> None:
    body = node_body("n-0", {"a": "b"}, ALLOC, kwok=kwok)
    assert body["metadata"].get("annotations") == annotations
    assert body["spec"].get("taints") == taints
    assert body["metadata"]["labels"] == {"a": "b"}
    assert body["status"] == {"allocatable": ALLOC, "capacity": ALLOC}
