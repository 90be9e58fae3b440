from typing import get_args

import pytest

from joulie_simcluster.runtimes.registry import RUNTIMES, recorded_runtime, runtime_for, smoke_runtime
from joulie_simcluster.runtimes.runtime import RECORD_KEY
from joulie_simcluster.settings import RuntimeName


def test_every_name_the_settings_accept_has_one_runtime_of_that_name() -> None:
    assert list(RUNTIMES) == list(get_args(RuntimeName))
    assert all(runtime_for(name).name == name for name in RUNTIMES)
    with pytest.raises(ValueError, match="no runtime 'docker'; one of process, k3s, kubelet"):
        runtime_for("docker")


def test_the_recorded_runtime_follows_cluster_env_and_is_the_process_one_without_a_record() -> None:
    assert recorded_runtime({RECORD_KEY: "kubelet"}).name == "kubelet"
    assert recorded_runtime({RECORD_KEY: "k3s"}).name == "k3s"
    assert recorded_runtime({RECORD_KEY: "process"}).name == "process"
    assert recorded_runtime(None).name == recorded_runtime({}).name == recorded_runtime({RECORD_KEY: "?"}).name == "process"


def test_what_each_runtime_supports() -> None:
    # Only the kubelet runtime deploys the chart's components as Pods; k3s is `up` only, so its smoke
    # runs on the process runtime.
    assert {n: r.components_as_pods for n, r in RUNTIMES.items()} == {"process": False, "k3s": False, "kubelet": True}
    assert [smoke_runtime(n).name for n in RUNTIMES] == ["process", "process", "kubelet"]
