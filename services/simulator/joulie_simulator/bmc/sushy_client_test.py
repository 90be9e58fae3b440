"""joulie_redfish (over sushy) against the emulated BMCs on loopback: a whole power cycle as a
transcript, a bad credential, a reset in the wrong state, TLS with and without the CA bundle, a
directory entry from a Secret; no password or session token in any message or log line."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from joulie_hwprofiles.schema import builtin_profile
from joulie_localcluster.certs import make_pki
from joulie_redfish.client import BmcClient, connect, connect_entry
from joulie_redfish.credentials import Credentials
from joulie_redfish.directory import parse_secret
from joulie_redfish.errors import RedfishError
from joulie_simulator.bmc.serving.app import BmcCredentials
from joulie_simulator.bmc.serving.fleet import BmcFleet, BmcTls
from joulie_simulator.emulation.emulator import Emulator
from joulie_simulator.testing import frozen_emulator, running_fleet

PASSWORD = "Pa55-w0rd-of-the-pool"
CREDS = Credentials("joulie", PASSWORD)
XEON = builtin_profile("intel-xeon-2s-rapl")


@pytest.fixture
def emu() -> Emulator:
    return frozen_emulator(("node-a", XEON))


@pytest.fixture
def fleet(emu: Emulator) -> Iterator[BmcFleet]:
    with running_fleet(emu, BmcCredentials(CREDS.username, PASSWORD)) as f:
        yield f


def _token(client: BmcClient) -> str:
    secrets = client._secrets
    assert len(secrets) == 2, "sushy logged in with a Redfish session, so the client knows its token"
    return secrets[1]


def test_a_sushy_session_powers_the_node_off_gracefully_and_on_again(fleet: BmcFleet, emu: Emulator, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    address = fleet.addresses["node-a"]
    lines: list[str] = []

    def say(text: str) -> None:
        lines.append(text)
        print(text)

    client = connect(address, CREDS, timeout_s=5)
    say(f">>> client = connect({address!r}, Credentials('joulie', ***))   # sushy, Redfish session")
    say(f">>> client.power_state()            -> {client.power_state()!r}")
    say(f">>> client.power_watts()            -> {client.power_watts()!r}")
    client.reset("GracefulShutdown")
    say(">>> client.reset('GracefulShutdown')  # 204")
    say(f">>> client.power_state()            -> {client.power_state()!r}")
    emu.step(int(XEON.physics.shutdown_s))
    say(f"... {XEON.physics.shutdown_s:g} s of emulated time (the profile's shutdown_s)")
    assert client.power_state() == "off"
    say(f">>> client.power_state()            -> {client.power_state()!r}")
    say(f">>> client.power_watts()            -> {client.power_watts()!r}   # standby_w of {XEON.name}")
    with pytest.raises(RedfishError) as wrong:
        client.reset("GracefulShutdown")
    say(">>> client.reset('GracefulShutdown')")
    say(f"RedfishError[{wrong.value.kind}]: {wrong.value}")
    client.reset("On")
    say(">>> client.reset('On')                # 204")
    say(f">>> client.power_state()            -> {client.power_state()!r}")
    emu.step(int(XEON.physics.boot_s))
    say(f"... {XEON.physics.boot_s:g} s of emulated time (the profile's boot_s)")
    say(f">>> client.power_state()            -> {client.power_state()!r}")
    emu.step(1)
    say(f">>> client.power_watts()            -> {client.power_watts()!r}")
    token = _token(client)
    client.close()
    say(">>> client.close()                   # DELETE of the session")

    assert lines[1].endswith("-> 'on'") and lines[4].endswith("-> 'powering-off'")
    assert lines[7].startswith(">>> client.power_watts()            -> 8.0")
    assert wrong.value.kind == "conflict" and wrong.value.status == 409
    assert "GracefulShutdown is not supported while the system's PowerState is Off" in str(wrong.value)
    assert lines[11].endswith("-> 'powering-on'") and lines[13].endswith("-> 'on'")
    assert emu.node("node-a").boots == 1
    assert PASSWORD not in caplog.text and token not in caplog.text
    assert f"POST {address}/redfish/v1/SessionService/Sessions" in caplog.text  # sushy's own debug log was captured


def test_a_wrong_password_is_refused_at_connect_with_a_clear_error_and_no_secret(fleet: BmcFleet, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    address = fleet.addresses["node-a"]
    with pytest.raises(RedfishError) as e:
        connect(address, Credentials("joulie", "Wr0ng-guess-pw"), timeout_s=5)
    assert e.value.kind == "credentials" and e.value.status == 401
    assert str(e.value) == (f"BMC {address}: log in failed: credentials refused (HTTP 401); check the username and password in the "
                            "node's BMC Secret")
    assert "Wr0ng-guess-pw" not in caplog.text and "Wr0ng-guess-pw" not in repr(e.value)


def test_power_on_of_a_node_that_is_on_surfaces_the_bmcs_409(fleet: BmcFleet, emu: Emulator) -> None:
    with connect(fleet.addresses["node-a"], CREDS, timeout_s=5) as client, pytest.raises(RedfishError) as e:
        client.reset("On")
    assert e.value.kind == "conflict" and e.value.status == 409
    assert "reset On failed: not allowed in the system's current power state (HTTP 409): The action ComputerSystem.Reset with " \
           "ResetType On is not supported while the system's PowerState is On." in str(e.value)
    assert emu.power_state("node-a") == "on"


@pytest.fixture
def tls_fleet(emu: Emulator, tmp_path: Path) -> Iterator[tuple[BmcFleet, Path]]:
    pki = make_pki(tmp_path / "pki")
    f = BmcFleet(emu, BmcCredentials(CREDS.username, PASSWORD), tls=BmcTls(pki.server_crt, pki.server_key)).start()
    yield f, pki.ca_crt
    f.stop()


def test_tls_is_verified_by_default_and_trusted_with_the_ca_bundle(tls_fleet: tuple[BmcFleet, Path]) -> None:
    fleet, ca = tls_fleet
    address = fleet.addresses["node-a"]
    assert address.startswith("https://127.0.0.1:")
    with pytest.raises(RedfishError) as e:
        connect(address, CREDS, timeout_s=5)
    assert e.value.kind == "tls" and "TLS certificate is not trusted" in str(e.value)
    with connect(address, CREDS, ca_bundle=ca, timeout_s=5) as client:
        assert client.power_state() == "on"
    with connect(address, CREDS, verify_tls=False, timeout_s=5) as client:
        assert client.power_state() == "on"


def test_a_directory_entry_from_a_secret_connects_with_its_ca(tls_fleet: tuple[BmcFleet, Path], tmp_path: Path) -> None:
    fleet, ca = tls_fleet
    secret = {"metadata": {"namespace": "joulie-system", "name": "bmc-sim"},
              "stringData": {"username": CREDS.username, "password": PASSWORD, "ca.crt": ca.read_text(),
                             "node-a.address": fleet.addresses["node-a"]}}
    entry = parse_secret(secret)["node-a"]
    with connect_entry(entry, tmp_path / "ca", timeout_s=5) as client:
        assert client.power_state() == "on"
        assert client.power_watts() == pytest.approx(XEON.physics.platform_other_w + 2 * 8 + 2 * XEON.physics.cpu.idle_pkg_w, rel=0.05)
