"""The per-board SM clock locks (spec.gpu.clockLocks) as the real kube-apiserver validates them."""

from __future__ import annotations

import uuid
from typing import Any, cast

import pytest
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from joulie_api.backoff import Backoff
from joulie_api.generated.nodetwin import (
    CapDecision,
    ControlStatus,
    GPUBoardClockLock,
    GPUBoardClockLockStatus,
    GPUCapSpec,
    GPUClockLock,
    GPUClockLockStatus,
    GPUControlStatus,
    NodeTwin,
    NodeTwinSpec,
    NodeTwinStatus,
)
from joulie_api.kube import NODE_TWIN, JoulieClient
from joulie_api.names import FIELD_MANAGER_AGENT, FIELD_MANAGER_CONTROLLER_MANAGER, GROUP, PLURAL_NODE_TWIN, VERSION

pytest_plugins = ["joulie_testinfra.fixtures"]


def _twin(locks: list[dict[str, Any]], node_wide: dict[str, Any] | None = None) -> dict[str, Any]:
    name = f"locks-{uuid.uuid4().hex[:6]}"
    gpu: dict[str, Any] = {"clockLocks": locks}
    if node_wide is not None:
        gpu["clockLock"] = node_wide
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "NodeTwin",
        "metadata": {"name": name},
        "spec": {"nodeName": name, "profile": "eco", "gpu": gpu},
    }


def _refusal(kube_api: k8s.ApiClient, body: dict[str, Any]) -> str:
    with pytest.raises(ApiException) as err:
        k8s.CustomObjectsApi(kube_api).create_cluster_custom_object(
            GROUP, VERSION, PLURAL_NODE_TWIN, body, dry_run="All"
        )
    assert err.value.status == 422
    return err.value.body or ""


def test_disjoint_entries_beside_a_node_wide_lock_are_accepted(kube_api: k8s.ApiClient) -> None:
    body = _twin([{"gpus": [0, 1, 2, 3], "pctOfMax": 60}, {"gpus": [5], "maxMhz": 1410}], {"pctOfMax": 80})
    made = cast(
        dict[str, Any],
        k8s.CustomObjectsApi(kube_api).create_cluster_custom_object(
            GROUP, VERSION, PLURAL_NODE_TWIN, body, dry_run="All"
        ),
    )
    assert made["spec"]["gpu"]["clockLocks"][1] == {"gpus": [5], "maxMhz": 1410}


def test_a_board_in_two_entries_is_refused(kube_api: k8s.ApiClient) -> None:
    body = _refusal(kube_api, _twin([{"gpus": [0, 1], "pctOfMax": 60}, {"gpus": [4, 1], "pctOfMax": 70}]))
    assert "spec.gpu.clockLocks" in body and "a GPU index appears in more than one entry" in body


def test_a_board_twice_in_one_entry_is_refused(kube_api: k8s.ApiClient) -> None:
    body = _refusal(kube_api, _twin([{"gpus": [2, 2], "pctOfMax": 60}]))
    assert "spec.gpu.clockLocks[0].gpus[1]" in body and "Duplicate value" in body


@pytest.mark.parametrize("entry", [{"gpus": [0]}, {"gpus": [0], "pctOfMax": 60, "maxMhz": 1400}])
def test_an_entry_needs_exactly_one_ceiling(kube_api: k8s.ApiClient, entry: dict[str, Any]) -> None:
    body = _refusal(kube_api, _twin([entry]))
    assert "spec.gpu.clockLocks[0]" in body and "set exactly one of maxMhz and pctOfMax" in body


@pytest.mark.parametrize(
    ("entry", "says"),
    [
        ({"gpus": [-1], "pctOfMax": 60}, "spec.gpu.clockLocks[0].gpus[0]"),
        ({"gpus": [64], "pctOfMax": 60}, "spec.gpu.clockLocks[0].gpus[0]"),
        ({"gpus": [], "pctOfMax": 60}, "spec.gpu.clockLocks[0].gpus"),
        ({"gpus": [0], "pctOfMax": 5}, "spec.gpu.clockLocks[0].pctOfMax"),
        ({"gpus": [0], "maxMhz": 9000}, "spec.gpu.clockLocks[0].maxMhz"),
    ],
)
def test_an_entry_out_of_range_is_refused(kube_api: k8s.ApiClient, entry: dict[str, Any], says: str) -> None:
    assert says in _refusal(kube_api, _twin([entry]))


def test_more_than_64_entries_are_refused(kube_api: k8s.ApiClient) -> None:
    body = _refusal(kube_api, _twin([{"gpus": [i], "pctOfMax": 60} for i in range(65)]))
    assert "spec.gpu.clockLocks" in body and "must have at most 64 items" in body


def test_the_controller_record_and_the_agent_boards_round_trip_through_the_typed_client(
    kube_api: k8s.ApiClient,
) -> None:
    no_wait = Backoff(delays_s=())
    controller = JoulieClient(kube_api, FIELD_MANAGER_CONTROLLER_MANAGER, no_wait)
    agent = JoulieClient(kube_api, FIELD_MANAGER_AGENT, no_wait)
    name = f"locks-{uuid.uuid4().hex[:6]}"
    entry = GPUBoardClockLock(gpus=[0, 1, 2, 3], pct_of_max=60)
    controller.apply(
        NODE_TWIN,
        name,
        NodeTwin(
            spec=NodeTwinSpec(
                node_name=name,
                profile="eco",
                gpu=GPUCapSpec(clock_lock=GPUClockLock(pct_of_max=80), clock_locks=[entry]),
            )
        ),
    )
    controller.apply_status(NODE_TWIN, name, NodeTwinStatus(cap_decision=CapDecision(gpu_clock_locks=[entry])))
    boards = [
        GPUBoardClockLockStatus(index=0, result="applied", source="clockLocks[0]", locked_max_mhz=1185),
        GPUBoardClockLockStatus(index=4, result="released", message="left every entry"),
    ]
    twin = agent.apply_status(
        NODE_TWIN,
        name,
        NodeTwinStatus(
            control_status=ControlStatus(
                gpu=GPUControlStatus(clock_lock=GPUClockLockStatus(result="applied", boards=boards))
            )
        ),
    )
    assert twin.spec is not None and twin.spec.gpu is not None and twin.spec.gpu.clock_locks == [entry]
    assert twin.status is not None and twin.status.cap_decision is not None
    assert twin.status.cap_decision.gpu_clock_locks == [entry], "the agent's apply kept the controller's record"
    got = twin.status.control_status
    assert got is not None and got.gpu is not None and got.gpu.clock_lock is not None
    assert got.gpu.clock_lock.boards == boards
