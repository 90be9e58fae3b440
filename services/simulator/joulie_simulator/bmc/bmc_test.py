"""The emulated BMCs on loopback, as a Redfish client sees them: DMTF's resource layout, sessions and
Basic auth, 401/404/409/400 with Redfish error bodies; exercised raw (requests) and with DMTF's own
client library (python-redfish-library, ``import redfish``)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import redfish
import requests

from joulie_hwprofiles.schema import builtin_profile
from joulie_simulator.bmc.serving.app import BmcCredentials
from joulie_simulator.bmc.serving.fleet import BmcFleet
from joulie_simulator.emulation.emulator import Emulator
from joulie_simulator.emulation.powerfaults import PowerOnFaults
from joulie_simulator.physics.model import Load
from joulie_simulator.testing import frozen_emulator, running_fleet

CREDS = BmcCredentials("operator", "s3cret-Pa55")
XEON = builtin_profile("intel-xeon-2s-rapl")


@pytest.fixture
def emu() -> Emulator:
    return frozen_emulator(("xeon-0", XEON), ("xeon-1", XEON))


@pytest.fixture
def fleet(emu: Emulator) -> Iterator[BmcFleet]:
    with running_fleet(emu, CREDS) as f:
        yield f


def _get(url: str, auth: tuple[str, str] | None = (CREDS.username, CREDS.password)) -> requests.Response:
    return requests.get(url, auth=auth, timeout=5)


def test_each_node_has_its_own_bmc_on_a_free_loopback_port_and_the_addresses_are_published(fleet: BmcFleet, tmp_path: Path) -> None:
    addrs = fleet.addresses
    assert sorted(addrs) == ["xeon-0", "xeon-1"] and len(set(addrs.values())) == 2
    assert all(a.startswith("http://127.0.0.1:") for a in addrs.values())
    fleet.write(tmp_path / "bmcs.json")
    doc = json.loads((tmp_path / "bmcs.json").read_text())
    assert doc == {"schemaVersion": 1, "bmcs": [
        {"node": "xeon-0", "address": addrs["xeon-0"], "system": "/redfish/v1/Systems/1"},
        {"node": "xeon-1", "address": addrs["xeon-1"], "system": "/redfish/v1/Systems/1"},
    ]}
    assert CREDS.password not in (tmp_path / "bmcs.json").read_text()
    assert _get(f"{addrs['xeon-1']}/redfish/v1/Systems/1").json()["HostName"] == "xeon-1"


def test_the_service_root_is_public_and_everything_else_wants_credentials(fleet: BmcFleet) -> None:
    base = fleet.addresses["xeon-0"]
    root = _get(f"{base}/redfish/v1/", auth=None)
    assert root.status_code == 200 and root.json()["Systems"] == {"@odata.id": "/redfish/v1/Systems"}
    assert root.json()["Links"]["Sessions"] == {"@odata.id": "/redfish/v1/SessionService/Sessions"}
    assert _get(f"{base}/redfish", auth=None).json() == {"v1": "/redfish/v1/"}
    for auth in (None, (CREDS.username, "wrong"), ("root", CREDS.password)):
        r = _get(f"{base}/redfish/v1/Systems/1", auth=auth)
        assert r.status_code == 401
        assert r.json()["error"]["@Message.ExtendedInfo"][0]["MessageId"].endswith(".NoValidSession")
    assert _get(f"{base}/redfish/v1/Systems/1").status_code == 200


def test_the_dmtf_layout_system_chassis_power_sensors_manager(fleet: BmcFleet, emu: Emulator) -> None:
    base = fleet.addresses["xeon-0"]
    systems = _get(f"{base}/redfish/v1/Systems").json()
    assert systems["Members"] == [{"@odata.id": "/redfish/v1/Systems/1"}] and systems["Members@odata.count"] == 1
    sys1 = _get(f"{base}/redfish/v1/Systems/1").json()
    assert sys1["PowerState"] == "On" and sys1["@odata.type"].startswith("#ComputerSystem.")
    reset = sys1["Actions"]["#ComputerSystem.Reset"]
    assert reset["target"] == "/redfish/v1/Systems/1/Actions/ComputerSystem.Reset"
    assert reset["ResetType@Redfish.AllowableValues"] == ["On", "ForceOff", "GracefulShutdown", "ForceRestart"]
    chassis = _get(f"{base}/redfish/v1/Chassis/1").json()
    assert chassis["Power"] == {"@odata.id": "/redfish/v1/Chassis/1/Power"}
    watts = _get(f"{base}/redfish/v1/Chassis/1/Power").json()["PowerControl"][0]["PowerConsumedWatts"]
    assert watts == pytest.approx(emu.node("xeon-0").state.host_power_w, abs=0.05)
    sensor = _get(f"{base}/redfish/v1/Chassis/1/Sensors/TotalPower").json()
    assert sensor["ReadingUnits"] == "W" and sensor["Reading"] == watts
    assert _get(f"{base}/redfish/v1/Managers/1").json()["ManagerType"] == "BMC"


def test_an_unknown_resource_is_404_with_a_redfish_error_body(fleet: BmcFleet) -> None:
    r = _get(f"{fleet.addresses['xeon-0']}/redfish/v1/Systems/2")
    assert r.status_code == 404
    info = r.json()["error"]["@Message.ExtendedInfo"][0]
    assert info["MessageId"].endswith(".ResourceMissingAtURI") and "/redfish/v1/Systems/2" in info["Message"]


@pytest.mark.parametrize(
    ("body", "status", "message_id"),
    [
        ({"ResetType": "On"}, 409, "ActionNotSupported"),  # it is on
        ({"ResetType": "Nmi"}, 400, "ActionParameterValueNotInList"),
        ({}, 400, "ActionParameterMissing"),
    ],
)
def test_a_reset_the_state_or_the_body_does_not_allow_is_refused(fleet: BmcFleet, emu: Emulator, body: dict[str, str], status: int,
                                                                 message_id: str) -> None:
    url = f"{fleet.addresses['xeon-0']}/redfish/v1/Systems/1/Actions/ComputerSystem.Reset"
    r = requests.post(url, json=body, auth=(CREDS.username, CREDS.password), timeout=5)
    assert r.status_code == status
    assert r.json()["error"]["@Message.ExtendedInfo"][0]["MessageId"].endswith(f".{message_id}")
    assert emu.power_state("xeon-0") == "on"


def test_a_reset_drives_the_emulator_and_the_bmc_reports_its_state_and_standby_watts(fleet: BmcFleet, emu: Emulator) -> None:
    base = fleet.addresses["xeon-0"]
    url = f"{base}/redfish/v1/Systems/1/Actions/ComputerSystem.Reset"
    auth = (CREDS.username, CREDS.password)
    emu.set_load("xeon-0", Load(cpu_util=1.0))
    emu.step(1)
    assert requests.post(url, json={"ResetType": "GracefulShutdown"}, auth=auth, timeout=5).status_code == 204
    assert emu.power_state("xeon-0") == "shutting-down"
    assert _get(f"{base}/redfish/v1/Systems/1").json()["PowerState"] == "PoweringOff"
    r = requests.post(url, json={"ResetType": "GracefulShutdown"}, auth=auth, timeout=5)
    assert r.status_code == 409 and "PoweringOff" in r.json()["error"]["@Message.ExtendedInfo"][0]["Message"]
    emu.step(int(XEON.physics.shutdown_s))
    assert _get(f"{base}/redfish/v1/Systems/1").json()["PowerState"] == "Off"
    assert _get(f"{base}/redfish/v1/Chassis/1/Power").json()["PowerControl"][0]["PowerConsumedWatts"] == XEON.physics.standby_w
    assert requests.post(url, json={"ResetType": "On"}, auth=auth, timeout=5).status_code == 204
    assert _get(f"{base}/redfish/v1/Systems/1").json()["PowerState"] == "PoweringOn"
    emu.step(int(XEON.physics.boot_s))
    assert _get(f"{base}/redfish/v1/Systems/1").json()["PowerState"] == "On"
    assert emu.node("xeon-0").boots == 1
    assert emu.power_state("xeon-1") == "on"  # the other node's BMC was not involved


def test_dmtf_redfish_library_logs_in_reads_the_system_resets_it_and_reads_power(fleet: BmcFleet, emu: Emulator) -> None:
    client = redfish.redfish_client(base_url=fleet.addresses["xeon-0"], username=CREDS.username, password=CREDS.password,
                                    default_prefix="/redfish/v1/", timeout=5, max_retry=1)
    client.login(auth="session")
    try:
        sys1 = client.get("/redfish/v1/Systems/1")
        assert sys1.status == 200 and sys1.dict["PowerState"] == "On"
        target = sys1.dict["Actions"]["#ComputerSystem.Reset"]["target"]
        off = client.post(target, body={"ResetType": "ForceOff"})
        assert off.status == 204
        assert client.get("/redfish/v1/Systems/1").dict["PowerState"] == "Off"
        again = client.post(target, body={"ResetType": "ForceOff"})
        assert again.status == 409
        assert again.dict["error"]["@Message.ExtendedInfo"][0]["MessageId"].endswith(".ActionNotSupported")
        emu.step(1)
        power = client.get("/redfish/v1/Chassis/1/Power").dict["PowerControl"][0]["PowerConsumedWatts"]
        assert power == XEON.physics.standby_w
        assert client.post(target, body={"ResetType": "On"}).status == 204
        assert client.get("/redfish/v1/Systems/1").dict["PowerState"] == "PoweringOn"
    finally:
        client.logout()


def test_dmtf_redfish_library_with_a_wrong_password_is_refused(fleet: BmcFleet) -> None:
    client = redfish.redfish_client(base_url=fleet.addresses["xeon-0"], username=CREDS.username, password="guess",
                                    default_prefix="/redfish/v1/", timeout=5, max_retry=1)
    with pytest.raises(redfish.rest.v1.InvalidCredentialsError):
        client.login(auth="session")


def test_a_session_token_works_until_the_session_is_deleted(fleet: BmcFleet) -> None:
    base = fleet.addresses["xeon-0"]
    r = requests.post(f"{base}/redfish/v1/SessionService/Sessions", json={"UserName": CREDS.username, "Password": CREDS.password}, timeout=5)
    assert r.status_code == 201 and r.headers["Location"].startswith("/redfish/v1/SessionService/Sessions/")
    token = r.headers["X-Auth-Token"]
    assert requests.get(f"{base}/redfish/v1/Systems/1", headers={"X-Auth-Token": token}, timeout=5).status_code == 200
    assert requests.delete(f"{base}{r.headers['Location']}", headers={"X-Auth-Token": token}, timeout=5).status_code == 204
    assert requests.get(f"{base}/redfish/v1/Systems/1", headers={"X-Auth-Token": token}, timeout=5).status_code == 401
    bad = requests.post(f"{base}/redfish/v1/SessionService/Sessions", json={"UserName": CREDS.username, "Password": "x"}, timeout=5)
    assert bad.status_code == 401 and "X-Auth-Token" not in bad.headers


def test_force_restart_power_cycles_the_node_through_a_boot(fleet: BmcFleet, emu: Emulator) -> None:
    url = f"{fleet.addresses['xeon-0']}/redfish/v1/Systems/1/Actions/ComputerSystem.Reset"
    r = requests.post(url, json={"ResetType": "ForceRestart"}, auth=(CREDS.username, CREDS.password), timeout=5)
    assert r.status_code == 204
    assert emu.power_state("xeon-0") == "booting" and emu.node("xeon-0").boots == 1


def test_the_debug_server_serves_the_bmc_addresses(fleet: BmcFleet, emu: Emulator) -> None:
    from joulie_simulator.serving.http_debug import DebugServer

    with_bmcs, without = DebugServer(emu, bmcs=fleet.document()), DebugServer(emu)
    with_bmcs.start()
    without.start()
    try:
        assert _get(f"{with_bmcs.url}/debug/bmcs", auth=None).json() == fleet.document()
        assert _get(f"{without.url}/debug/bmcs", auth=None).status_code == 404
    finally:
        with_bmcs.stop()
        without.stop()


def test_with_a_port_base_the_bmcs_take_the_first_free_ports_from_it_and_each_answers_for_its_own_node(emu: Emulator) -> None:
    import socket

    # A port below the ephemeral range already held by someone else: the fleet steps over it.
    held = socket.socket()
    base = 0
    for candidate in range(24000, 24400, 4):
        try:
            held.bind(("127.0.0.1", candidate))
            base = candidate
            break
        except OSError:
            continue
    assert base, "no free port to hold in 24000-24400"
    held.listen()
    try:
        f = BmcFleet(emu, CREDS, port_base=base).start()
        try:
            ports = {n: int(a.rsplit(":", 1)[1]) for n, a in f.addresses.items()}
            assert all(base < p < base + 10 for p in ports.values()) and len(set(ports.values())) == 2
            for node, addr in f.addresses.items():
                system = _get(f"{addr}/redfish/v1/Systems").json()["Members"][0]["@odata.id"]
                assert node in _get(f"{addr}{system}").text
        finally:
            f.stop()
    finally:
        held.close()


def test_a_bmc_set_to_refuse_power_ons_answers_500_and_leaves_the_node_off(emu: Emulator) -> None:
    auth = (CREDS.username, CREDS.password)
    emu.power_off("xeon-0", graceful=False)
    with running_fleet(emu, CREDS, faults=PowerOnFaults(failure_share=1.0)) as f:
        url = f"{f.addresses['xeon-0']}/redfish/v1/Systems/1/Actions/ComputerSystem.Reset"
        r = requests.post(url, json={"ResetType": "On"}, auth=auth, timeout=5)
        assert r.status_code == 500 and "--bmc-failure-share" in r.json()["error"]["@Message.ExtendedInfo"][0]["Message"]
        assert emu.power_state("xeon-0") == "off"
        # Power-offs are never refused.
        off = requests.post(f"{f.addresses['xeon-1']}/redfish/v1/Systems/1/Actions/ComputerSystem.Reset",
                            json={"ResetType": "ForceOff"}, auth=auth, timeout=5)
        assert off.status_code == 204 and emu.power_state("xeon-1") == "off"


def test_a_hung_power_on_is_accepted_and_the_node_never_boots(emu: Emulator) -> None:
    auth = (CREDS.username, CREDS.password)
    emu.power_off("xeon-0", graceful=False)
    faults = PowerOnFaults(hang_share=1.0)
    with running_fleet(emu, CREDS, faults=faults) as f:
        url = f"{f.addresses['xeon-0']}/redfish/v1/Systems/1/Actions/ComputerSystem.Reset"
        assert requests.post(url, json={"ResetType": "On"}, auth=auth, timeout=5).status_code == 204
        emu.step(int(XEON.physics.boot_s) + 10)
        assert emu.power_state("xeon-0") == "off" and emu.node("xeon-0").boots == 0
    assert faults.drawn == {"ok": 0, "refused": 0, "hung": 1}


def test_a_share_of_power_ons_fails_in_a_seeded_repeatable_order() -> None:
    first = PowerOnFaults(failure_share=0.3, hang_share=0.2, seed=7).draw()
    a, b = PowerOnFaults(failure_share=0.3, hang_share=0.2, seed=7), PowerOnFaults(failure_share=0.3, hang_share=0.2, seed=7)
    seq = [a.draw() for _ in range(400)]
    assert seq == [b.draw() for _ in range(400)] and seq[0] == first
    assert 0.2 < seq.count("refused") / 400 < 0.4 and 0.12 < seq.count("hung") / 400 < 0.28
    for bad, words in (({"failure_share": 1.5}, "--bmc-failure-share"), ({"failure_share": 0.7, "hang_share": 0.5},
                                                                          "more than every power-on")):
        with pytest.raises(ValueError, match=words):
            PowerOnFaults(**bad)  # type: ignore[arg-type]


def test_post_debug_bmc_faults_switches_refusals_on_and_off_for_a_running_fleet(emu: Emulator) -> None:
    """What a chaos fault does: the simulator's BMCs start refusing power-ons, then stop."""
    import json
    import urllib.error
    import urllib.request

    from joulie_simulator.serving.http_debug import DebugServer

    auth = (CREDS.username, CREDS.password)
    faults = PowerOnFaults()
    emu.power_off("xeon-0", graceful=False)
    server = DebugServer(emu, bmc_faults=faults)
    server.start()

    def post(body: bytes) -> tuple[int, dict[str, object]]:
        req = urllib.request.Request(f"{server.url}/debug/bmc/faults", data=body, method="POST")
        try:
            with urllib.request.urlopen(req, timeout=5) as resp:
                return resp.status, json.load(resp)
        except urllib.error.HTTPError as e:
            return e.code, json.load(e)

    try:
        with running_fleet(emu, CREDS, faults=faults) as f:
            url = f"{f.addresses['xeon-0']}/redfish/v1/Systems/1/Actions/ComputerSystem.Reset"
            code, answer = post(b'{"failureShare": 1}')
            assert code == 200 and answer["failureShare"] == 1.0
            assert requests.post(url, json={"ResetType": "On"}, auth=auth, timeout=5).status_code == 500
            assert post(b'{"failureShare": 0.8, "hangShare": 0.5}')[0] == 400  # more than every power-on
            assert post(b'{"failureShare": "all"}')[0] == 400
            code, answer = post(b'{"failureShare": 0, "hangShare": 0}')
            assert code == 200 and answer["drawn"] == {"ok": 0, "refused": 1, "hung": 0}
            assert requests.post(url, json={"ResetType": "On"}, auth=auth, timeout=5).status_code == 204
            assert emu.power_state("xeon-0") == "booting"
    finally:
        server.stop()


def test_post_debug_bmc_faults_for_named_nodes_refuses_theirs_and_lets_the_others_boot(emu: Emulator) -> None:
    """``simcluster suspend-live``'s refused node: one node's every power-on refused while another boots."""
    import json
    import urllib.error
    import urllib.request

    from joulie_simulator.serving.http_debug import DebugServer

    auth = (CREDS.username, CREDS.password)
    faults = PowerOnFaults()
    for n in ("xeon-0", "xeon-1"):
        emu.power_off(n, graceful=False)
    server = DebugServer(emu, bmc_faults=faults)
    server.start()

    def post(body: bytes) -> tuple[int, dict[str, object]]:
        req = urllib.request.Request(f"{server.url}/debug/bmc/faults", data=body, method="POST")
        try:
            with urllib.request.urlopen(req, timeout=5) as resp:
                return resp.status, json.load(resp)
        except urllib.error.HTTPError as e:
            return e.code, json.load(e)

    def power_on(node: str, addresses: dict[str, str]) -> int:
        url = f"{addresses[node]}/redfish/v1/Systems/1/Actions/ComputerSystem.Reset"
        return requests.post(url, json={"ResetType": "On"}, auth=auth, timeout=5).status_code

    try:
        with running_fleet(emu, CREDS, faults=faults) as f:
            code, answer = post(b'{"failureShare": 1, "nodes": ["xeon-0"]}')
            assert code == 200 and answer["nodes"] == ["xeon-0"]
            assert [power_on("xeon-0", f.addresses) for _ in range(3)] == [500, 500, 500]
            assert power_on("xeon-1", f.addresses) == 204
            assert (emu.power_state("xeon-0"), emu.power_state("xeon-1")) == ("off", "booting")
            assert post(b'{"failureShare": 1, "nodes": "xeon-0"}')[0] == 400  # a list of names, not a string
            code, answer = post(b'{"failureShare": 0}')
            assert code == 200 and answer["nodes"] == [] and answer["drawn"] == {"ok": 1, "refused": 3, "hung": 0}
            assert power_on("xeon-0", f.addresses) == 204
    finally:
        server.stop()
