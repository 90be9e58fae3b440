"""The pure parts of the emulated power states: which Nodes go down or up, the BMC Secret, the login file."""

from __future__ import annotations

import stat
from pathlib import Path

from joulie_simcluster.runtimes import power

BMCS = {"schemaVersion": 1, "bmcs": [
    {"node": "cpu-0", "address": "http://127.0.0.1:41153", "system": "/redfish/v1/Systems/1"},
    {"node": "gpu.node-1", "address": "http://127.0.0.1:41154"},
]}


def test_a_node_is_down_from_its_shutdown_until_its_boot_ends() -> None:
    states = {"a": "on", "b": "shutting-down", "c": "off", "d": "booting"}
    assert power.transitions(states, []) == power.Transitions(("b", "c", "d"), ())
    assert power.transitions(states, ["b", "c", "d"]) == power.Transitions((), ())
    back = {**states, "c": "on", "d": "on"}
    assert power.transitions(back, ["b", "c", "d"]) == power.Transitions((), ("c", "d"))
    # The simulator restarted without it (or every node on after a restart): back up.
    assert power.transitions({"a": "on"}, ["x"]) == power.Transitions((), ("x",))


def test_the_secret_is_one_pool_secret_the_controllers_directory_reads() -> None:
    m = power.secret_manifest(BMCS, {"username": "joulie", "password": "pw"})
    assert m["metadata"] == {"name": "simcluster-bmcs", "namespace": "joulie-system",
                             "labels": {"joulie.io/bmc-credentials": "true"}}
    assert m["stringData"] == {"username": "joulie", "password": "pw",
                               "cpu-0.address": "http://127.0.0.1:41153", "cpu-0.system": "/redfish/v1/Systems/1",
                               "gpu.node-1.address": "http://127.0.0.1:41154"}


def test_the_login_is_made_once_per_state_dir_and_private(tmp_path: Path) -> None:
    first = power.ensure_credentials(tmp_path)
    assert first["username"] == "joulie" and len(first["password"]) >= 20
    assert power.ensure_credentials(tmp_path) == first
    mode = power.credentials_path(tmp_path).stat().st_mode
    assert not mode & (stat.S_IRWXG | stat.S_IRWXO)


def test_the_powered_off_record_round_trips(tmp_path: Path) -> None:
    assert power.read_powered_off(tmp_path) == {}
    power.write_powered_off(tmp_path, {"cpu-0": 12.5})
    assert power.read_powered_off(tmp_path) == {"cpu-0": 12.5}
