"""The Redfish driver with fake BMC clients: readings, resets, errors (no credential in any text) and
the directory's refresh. The fakes serve controller_bmc_test.py too."""

from __future__ import annotations

import logging

import pytest

from joulie_controller.bmc.redfishdriver import RedfishPowerDriver
from joulie_controller.power.powerdriver import PowerDriverError
from joulie_redfish.client import ResetKind
from joulie_redfish.credentials import Credentials
from joulie_redfish.directory import BmcEntry, DirectoryError
from joulie_redfish.errors import RedfishError

PASSWORD = "s3cret-pw"
BAD_CRED = RedfishError("http://127.0.0.1:41153", "credentials", "log in failed: credentials refused (HTTP 401); check "
                        "the username and password in the node's BMC Secret", 401)
UNREACHABLE = RedfishError("http://127.0.0.1:41999", "unreachable", "log in failed: unreachable (connection refused)")


def entry(node: str, port: int = 41153) -> BmcEntry:
    return BmcEntry(node, f"http://127.0.0.1:{port}", Credentials("joulie", PASSWORD), secret="joulie-system/bmcs")


class FakeClient:
    def __init__(self, bmc: FakeBmcs, node: str):
        self.bmc, self.node, self.closed = bmc, node, False

    def power_state(self) -> str:
        if self.node in self.bmc.fail_reads:
            raise self.bmc.fail_reads[self.node]
        return self.bmc.states[self.node]

    def reset(self, kind: ResetKind) -> None:
        self.bmc.resets.append((self.node, kind))
        if kind == "On" and self.bmc.states[self.node] != "off":
            raise RedfishError("http://127.0.0.1:41153", "conflict", "reset On failed: not allowed in the system's "
                               "current power state (HTTP 409)", 409)
        self.bmc.states[self.node] = "on" if kind == "On" else "off"

    def close(self) -> None:
        self.closed = True


class FakeBmcs:
    """The BMCs behind the fake connector: states, login failures, reading failures, logins counted."""

    def __init__(self, states: dict[str, str]):
        self.states = states
        self.fail_login: dict[str, RedfishError] = {}
        self.fail_reads: dict[str, RedfishError] = {}
        self.logins: list[str] = []
        self.resets: list[tuple[str, str]] = []

    def connect(self, e: BmcEntry) -> FakeClient:
        self.logins.append(e.node)
        if e.node in self.fail_login:
            raise self.fail_login[e.node]
        return FakeClient(self, e.node)


def driver(bmcs: FakeBmcs, directory: dict[str, BmcEntry], clock: list[float] | None = None) -> RedfishPowerDriver:
    t = clock if clock is not None else [0.0]
    return RedfishPowerDriver(lambda: directory, bmcs.connect, refresh_s=30, clock=lambda: t[0])


def test_readings_and_resets_keep_one_session_per_node() -> None:
    bmcs = FakeBmcs({"a": "on", "b": "off"})
    d = driver(bmcs, {"a": entry("a"), "b": entry("b")})
    assert d.state("a") is not None and d.state("a").state == "on"  # type: ignore[union-attr]
    assert d.state("c") is None  # no BMC in the Secrets: the policy never suspends it
    d.off("a")
    d.on("b")
    assert bmcs.resets == [("a", "GracefulShutdown"), ("b", "On")]
    assert bmcs.states == {"a": "off", "b": "on"}
    assert bmcs.logins == ["a", "b"]  # one login per node, reused
    d.off("b", graceful=False)
    assert bmcs.resets[-1] == ("b", "ForceOff")


@pytest.mark.parametrize("err", [BAD_CRED, UNREACHABLE], ids=["bad-credential", "unreachable"])
def test_a_failing_bmc_reads_unknown_with_its_error_and_logs_it_once(err: RedfishError, caplog: pytest.LogCaptureFixture) -> None:
    bmcs = FakeBmcs({"a": "on"})
    bmcs.fail_login["a"] = err
    d = driver(bmcs, {"a": entry("a")})
    with caplog.at_level(logging.INFO):
        r1, r2 = d.state("a"), d.state("a")
    assert r1 is not None and r1.state == "unknown"
    assert r1.error == f"node a: {err}" and r1 == r2
    assert "node a" in r1.error and err.address in r1.error and PASSWORD not in r1.error
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1 and str(err) in errors[0].getMessage() and PASSWORD not in caplog.text
    del bmcs.fail_login["a"]
    with caplog.at_level(logging.INFO):
        assert d.state("a") == type(r1)("on")
    assert "BMC answers again" in caplog.text


def test_a_failed_reset_raises_naming_node_and_bmc_and_logs_in_again() -> None:
    bmcs = FakeBmcs({"a": "on"})
    d = driver(bmcs, {"a": entry("a")})
    with pytest.raises(PowerDriverError, match=r"node a: BMC http://127.0.0.1:41153: reset On failed: .*409"):
        d.on("a")
    assert d.state("a") is not None
    assert bmcs.logins == ["a", "a"]  # the client was dropped after the error
    with pytest.raises(PowerDriverError, match="node x: no BMC configured"):
        d.off("x")


def test_the_directory_is_read_again_after_refresh_s_and_a_bad_one_keeps_the_last(caplog: pytest.LogCaptureFixture) -> None:
    bmcs = FakeBmcs({"a": "on", "b": "on"})
    t = [0.0]
    reads: list[object] = [{"a": entry("a")}, DirectoryError("Secret joulie-system/bmcs: key 'b.adress': unknown key"),
                           {"a": entry("a", 41154), "b": entry("b")}]

    def read() -> dict[str, BmcEntry]:
        nxt = reads.pop(0)
        if isinstance(nxt, Exception):
            raise nxt
        return nxt  # type: ignore[return-value]

    d = RedfishPowerDriver(read, bmcs.connect, refresh_s=30, clock=lambda: t[0])
    assert d.state("a") is not None and d.state("b") is None
    t[0] = 10.0
    assert d.state("b") is None and len(reads) == 2  # not read again before refresh_s
    t[0] = 31.0
    with caplog.at_level(logging.ERROR):
        assert d.state("a") is not None and d.state("b") is None  # the bad read keeps the last directory
    assert "key 'b.adress'" in caplog.text
    t[0] = 62.0
    assert d.state("b") is not None and d.state("a") is not None
    assert bmcs.logins == ["a", "b", "a"]  # a's entry changed (new port): logged in again
