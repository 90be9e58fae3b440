"""Which Node S14 locks."""

import pytest

from joulie_hwprofiles.schema import builtin_profile
from joulie_simcluster.errors import RuntimeFailure
from joulie_simcluster.smoke.lockstep import lock_node


def test_the_lock_goes_on_an_nvidia_node_whose_boards_keep_their_state_without_a_client() -> None:
    profiles = {
        n: builtin_profile(p)
        for n, p in (
            ("a-sxm", "nvidia-h100-sxm-8gpu"),
            ("b-nvl", "nvidia-h100-nvl-8gpu"),
            ("c-mi300x", "amd-instinct-mi300x-8gpu"),
        )
    }
    assert lock_node(profiles) == "b-nvl"  # the SXM boards run with persistence mode off
    assert lock_node({"a-sxm": profiles["a-sxm"]}) == "a-sxm"
    with pytest.raises(RuntimeFailure, match="no NVIDIA GPU Node"):
        lock_node({"c-mi300x": profiles["c-mi300x"], "cpu": builtin_profile("intel-xeon-2s-rapl")})
