"""Write skipping and the reconcile loop's error accounting, without a cluster."""

from joulie_agent.runner import SkipUnchanged


def test_unchanged_payload_is_skipped_until_the_rewrite_interval() -> None:
    s = SkipUnchanged(max_age_s=300)
    assert s.due("n1", {"a": 1}, 0)
    s.done("n1", {"a": 1}, 0)
    assert not s.due("n1", {"a": 1}, 299)
    assert s.due("n1", {"a": 2}, 10)
    assert s.due("n1", {"a": 1}, 300)
    assert s.due("n2", {"a": 1}, 10)
