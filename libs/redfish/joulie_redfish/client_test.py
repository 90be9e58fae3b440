"""The client's failures without a BMC: nothing listening, a BMC that never answers; each one
RedfishError naming the address and the step, never the password. (Against a BMC: the simulator's
emulated BMCs, services/simulator/joulie_simulator/bmc/sushy_client_test.py.)"""

from __future__ import annotations

import logging
import socket
import time
from collections.abc import Iterator

import pytest

from joulie_redfish.client import connect
from joulie_redfish.credentials import Credentials
from joulie_redfish.errors import RedfishError

SECRET = "Sup3r-s3cret-pw"


def _closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = int(s.getsockname()[1])
    s.close()
    return port


@pytest.fixture
def silent_bmc() -> Iterator[int]:
    """Accepts connections and never answers (a hung BMC)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(8)
    yield int(s.getsockname()[1])
    s.close()


def test_an_unreachable_bmc_is_a_clear_error_naming_it(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    address = f"http://127.0.0.1:{_closed_port()}"
    with pytest.raises(RedfishError) as e:
        connect(address, Credentials("admin", SECRET), timeout_s=2)
    assert e.value.kind == "unreachable" and e.value.address == address
    assert str(e.value) == f"BMC {address}: log in failed: unreachable (connection refused)"
    assert SECRET not in repr(e.value) and SECRET not in caplog.text


def test_a_bmc_that_never_answers_times_out_within_the_timeout(silent_bmc: int) -> None:
    address = f"http://127.0.0.1:{silent_bmc}"
    start = time.monotonic()
    with pytest.raises(RedfishError) as e:
        connect(address, Credentials("admin", SECRET), timeout_s=0.5)
    assert e.value.kind == "unreachable" and "timed out" in str(e.value)
    assert time.monotonic() - start < 10


def test_credentials_never_show_in_a_repr() -> None:
    assert SECRET not in repr(Credentials("admin", SECRET))
    err = RedfishError("https://10.0.0.1", "credentials", "log in failed: credentials refused (HTTP 401)", 401)
    assert repr(err) == ("RedfishError(address='https://10.0.0.1', kind='credentials', status=401, "
                         "message='BMC https://10.0.0.1: log in failed: credentials refused (HTTP 401)')")
