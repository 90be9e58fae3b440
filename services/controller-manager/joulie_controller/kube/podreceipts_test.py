"""The Pod times the receipts read: when a Pod started and when a finished one ended."""

from __future__ import annotations

from datetime import UTC, datetime

from joulie_controller.kube.kube import pod_info
from joulie_controller.kube.podreceipts import finish_of, last_finish, receipt_patch_metadata, unix_time


def test_start_and_finish_times_from_the_pod_status() -> None:
    t = datetime(2026, 12, 6, 0, 0, 10, tzinfo=UTC).timestamp()
    assert unix_time("2026-12-06T00:00:10Z") == t
    assert unix_time("yesterday") is None and unix_time(None) is None
    pod = pod_info(
        {
            "metadata": {"name": "p", "namespace": "ns"},
            "spec": {},
            "status": {"phase": "Running", "startTime": "2026-12-06T00:00:10Z"},
        }
    )
    assert pod.started_at == t
    done = {
        "status": {
            "containerStatuses": [
                {"state": {"terminated": {"finishedAt": "2026-12-06T00:05:00Z"}}},
                {"state": {"terminated": {"finishedAt": "2026-12-06T00:06:00Z"}}},
                {"state": {"running": {}}},
            ]
        }
    }
    assert last_finish(done) == t + 350
    assert last_finish({"status": {}}) is None


def test_a_pod_of_the_same_name_created_since_is_not_the_one_that_finished() -> None:
    old = {"metadata": {"name": "p", "uid": "u-old"}, "status": {}}
    new = {"metadata": {"name": "p", "uid": "u-new"}, "status": {"phase": "Running"}}
    assert pod_info({"metadata": {"name": "p", "namespace": "ns", "uid": "u-new"}, "spec": {}}).uid == "u-new"
    # The Pod the receipt is for is gone; a LIST by name finds its successor only.
    assert finish_of([new], "u-old") is False
    assert finish_of([old], "u-old") is None and finish_of([new], "") is None
    # The receipt's patch names its Pod: the API server refuses it on another Pod (metadata.uid is immutable).
    assert receipt_patch_metadata("{}", "u-old")["uid"] == "u-old"
    assert "uid" not in receipt_patch_metadata("{}", "")


def test_only_the_api_servers_uid_refusal_counts_as_a_later_pod() -> None:
    from joulie_controller.kube.podreceipts import uid_refused

    assert uid_refused("Precondition failed: UID in precondition: u-old, UID in object meta: u-new")
    assert uid_refused('Pod "p" is invalid: metadata.uid: Invalid value: "u-old": field is immutable')
    # a conflict on a Pod whose name holds "uid" (druid-0) is not one
    assert not uid_refused('Operation cannot be fulfilled on pods "druid-0": the object has been modified')
