"""The pure parts of the emulated power states: which Nodes go down or up, the BMC Secret, the login file."""

from __future__ import annotations

import http.server
import json
import stat
import threading
from pathlib import Path
from typing import ClassVar

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


class _Simulator(http.server.BaseHTTPRequestHandler):
    """The two routes the supervisor may read, as a simulator with or without /debug/power answers."""

    has_power_route: ClassVar[bool] = True
    asked: ClassVar[list[str]] = []

    def do_GET(self) -> None:  # - the stdlib's name
        type(self).asked.append(self.path)
        body: dict[str, object]
        if self.path == "/debug/power" and self.has_power_route:
            body = {"nodes": {"cpu-0": "on", "gpu-0": "booting"}}
        elif self.path == "/debug/emulate":
            body = {"nodes": [{"name": "cpu-0", "power": {"state": "off"}}, {"name": "gpu-0"}]}
        else:
            self.send_error(404)
            return
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


def test_the_supervisor_reads_power_states_alone_and_from_the_whole_truth_of_an_older_simulator() -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Simulator)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    address = f"127.0.0.1:{server.server_address[1]}"
    try:
        assert power.read_power_states(address) == {"cpu-0": "on", "gpu-0": "booting"}
        assert _Simulator.asked == ["/debug/power"]  # not every node's truth each second
        _Simulator.has_power_route = False
        assert power.read_power_states(address) == {"cpu-0": "off", "gpu-0": "on"}
    finally:
        server.shutdown()
        server.server_close()
