"""The descriptors files mode keeps open for the counters it rewrites every tick."""

import resource

import pytest

from joulie_simulator.views.files.publish import fd_budget, raise_fd_limit


def test_a_1000_node_clusters_counters_stay_open_under_a_common_descriptor_limit() -> None:
    # About 7000 counters change every tick at 1000 Nodes; a quarter of a 20 000 limit kept ~2000
    # of them closed, each then opened and closed every tick.
    assert fd_budget(20_000) >= 7_000
    assert fd_budget(1_024) == 0  # all of it left to the sockets and watches
    assert fd_budget(65_536) > fd_budget(20_000)


def test_the_soft_descriptor_limit_is_raised_to_the_hard_one() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY:
        pytest.skip("no finite hard limit to raise to")
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(soft, 1024), hard))  # as a login shell often leaves it
    assert raise_fd_limit() == hard
    assert resource.getrlimit(resource.RLIMIT_NOFILE) == (hard, hard)
